//! The call sites' workshares: each taken call site keeps the workshare
//! of its last instance for the next one (renewed in place once every
//! participant has left it), in a process-wide table keyed by the site's
//! address; a team keeps its last site's itself, so that a team running
//! one loop again and again renews it without the table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use keel::loops::{LoopId, Workshare};

/// A team's last taken call site.
pub(super) struct Recent {
    site: usize,
    id: LoopId,
    work: Arc<Workshare<'static>>,
}

/// A workshare for an instance of the loop at `site`, for the team whose
/// last site is `recent` (locked by its deciding thread): that site's,
/// renewed, when it is that site again; else the site table's, which
/// becomes the team's last.
pub(super) fn workshare(
    recent: &Mutex<Option<Recent>>,
    site: usize,
    schedule: &keel::Schedule,
    n: u64,
    threads: usize,
) -> Arc<Workshare<'static>> {
    let mut recent = recent.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(last) = recent.as_mut().filter(|last| last.site == site) {
        renew(&mut last.work, &last.id, schedule, n, threads);
        return Arc::clone(&last.work);
    }
    let (id, work) = from_table(site, schedule, n, threads, recent.take());
    *recent = Some(Recent {
        site,
        id,
        work: Arc::clone(&work),
    });
    work
}

/// What a call site keeps across its instances.
struct Site {
    /// The loop's identity in Keel's records.
    id: LoopId,
    /// The workshare of its last instance, for the next one (see
    /// [`renew`]), while no team keeps it as its last site's.
    spare: Option<Arc<Workshare<'static>>>,
}

/// The call sites' table hashes code addresses with one multiplication:
/// the deciding thread looks its site up while the others wait for the
/// decision, and the addresses are the program's own (no one chooses them
/// to collide), so SipHash's resistance buys nothing here.
type SiteHash = std::hash::BuildHasherDefault<AddressHasher>;

#[derive(Default)]
struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_usize(&mut self, address: usize) {
        self.write_u64(address as u64);
    }
    fn write_u64(&mut self, word: u64) {
        // Fibonacci hashing: the high bits, which hashbrown's control
        // bytes read, depend on every bit of the address.
        self.0 = (self.0 ^ word)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(32);
    }
}

/// Every call site whose loop some first arrival took, with what it keeps.
fn site_table() -> &'static Mutex<HashMap<usize, Site, SiteHash>> {
    static SITES: OnceLock<Mutex<HashMap<usize, Site, SiteHash>>> = OnceLock::new();
    SITES.get_or_init(|| Mutex::new(HashMap::default()))
}

/// The call sites of the loops Keel took, each with its loop's identity
/// in Keel's records.
pub(crate) fn taken_sites() -> Vec<(usize, LoopId)> {
    let sites = site_table().lock().unwrap_or_else(|e| e.into_inner());
    sites
        .iter()
        .map(|(&site, s)| (site, s.id.clone()))
        .collect()
}

/// A workshare for an instance of the loop at `site`, from the site
/// table, which takes back `evicted` (a team's last site's) at once: the
/// site's identity and its workshare, which the caller keeps until it
/// gives it back.
fn from_table(
    site: usize,
    schedule: &keel::Schedule,
    n: u64,
    threads: usize,
    evicted: Option<Recent>,
) -> (LoopId, Arc<Workshare<'static>>) {
    let mut sites = site_table().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(last) = evicted {
        if let Some(entry) = sites.get_mut(&last.site) {
            entry.spare = Some(last.work);
        }
    }
    let entry = sites.entry(site).or_insert_with(|| Site {
        id: LoopId::named(site_name(site)),
        spare: None,
    });
    let work = match entry.spare.take() {
        Some(mut spare) => {
            renew(&mut spare, &entry.id, schedule, n, threads);
            spare
        }
        None => Arc::new(Workshare::pulled(entry.id.clone(), schedule, n, threads)),
    };
    (entry.id.clone(), work)
}

/// Gives a team's last site's workshare, if any, back to the site table
/// (the team is gone).
pub(super) fn give_back(recent: &mut Option<Recent>) {
    let Some(last) = recent.take() else {
        return;
    };
    let mut sites = site_table().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(entry) = sites.get_mut(&last.site) {
        entry.spare = Some(last.work);
    }
}

/// Readies `last`, the workshare of the last instance of the loop `id`,
/// for its next instance: renewed when every participant has left it (and
/// the team size is the same), which saves its allocations and, for an
/// unrecorded fixed schedule over as many iterations, its preparation and
/// plan; else replaced by a new one.
fn renew(
    last: &mut Arc<Workshare<'static>>,
    id: &LoopId,
    schedule: &keel::Schedule,
    n: u64,
    threads: usize,
) {
    match Arc::get_mut(last).filter(|unused| unused.threads() == threads) {
        // The site's own workshare: it already names the loop.
        Some(unused) => unused.renew_same_loop(schedule, n),
        None => *last = Arc::new(Workshare::pulled(id.clone(), schedule, n, threads)),
    }
}

/// The loop's name: the object holding the call site and the site's
/// offset in it (stable across runs despite address randomisation).
fn site_name(site: usize) -> String {
    match crate::site::locate(site) {
        Some((path, offset)) => {
            let file = path.rsplit('/').next().unwrap_or(&path);
            let file = if file.is_empty() { "main" } else { file };
            format!("omp:{file}+{offset:#x}")
        }
        None => format!("omp:{site:#x}"),
    }
}
