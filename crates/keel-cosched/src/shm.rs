//! The shared monitoring page between a node manager and one job process.
//!
//! One 4096-byte file per process, `/dev/shm/keel-cosched-<uid>-<jobid>-<rank>`
//! (mode 0600, owned by the job's user), created by the node manager before
//! the process starts and named to it by the environment variable
//! [`PAGE_ENV`]. The layout is a fixed contract, shared with the PMPI
//! wrapper written in C (native endianness, naturally aligned):
//!
//! | offset | field | writer | meaning |
//! |---|---|---|---|
//! | 0 | `magic: u64` | NM | [`MAGIC`] |
//! | 8 | `version: u32` | NM | [`VERSION`] |
//! | 12 | `wait_mode: u32` | NM | 0 poll, 1 spin-block, 2 block |
//! | 16 | `spin_ns: u64` | NM | spin time before blocking (spin-block) |
//! | 24 | `seq: u64` | process | seqlock: odd while the counters change |
//! | 32 | `comm_count: u64` | process | C_comm (back-to-back calls merged) |
//! | 40 | `comm_wait_ns: u64` | process | T_comm, wall time in blocking calls |
//! | 48 | `spin_ns_total: u64` | process | time spent spinning while waiting |
//! | 56 | `cpu_ns: u64` | process | process CPU time at the last update |
//! | 64 | `updates: u64` | process | completed updates |
//! | 72 | `pid: u64` | NM | the process's id once started |
//!
//! The process is the single writer of `seq..updates`; the node manager
//! never writes them. It "resets" a process's statistics by keeping a
//! baseline [`Counters`] snapshot and subtracting ([`Counters::since`]).
//!
//! The seqlock: the writer stores an odd `seq`, fences (Release), writes
//! the counters, then stores the next even `seq` with Release. A reader
//! loads `seq` with Acquire, reads the counters, fences (Acquire) and
//! re-reads `seq`; it retries while `seq` is odd or changed. A writer that
//! dies mid-update leaves `seq` odd for ever, so readers give up after
//! [`MAX_READ_RETRIES`] attempts with [`ShmError::Torn`] instead of hanging.
//!
//! Wait modes travel as codes; counters are read against a baseline:
//!
//! ```
//! use keel_cosched::{Counters, PageWaitMode};
//! let mode = PageWaitMode::SpinBlock { spin_ns: 100_000 };
//! assert_eq!(PageWaitMode::from_code(mode.code(), 100_000), mode);
//! let before = Counters { comm_count: 2, cpu_ns: 1_000, ..Counters::default() };
//! let now = Counters { comm_count: 5, cpu_ns: 4_000, ..Counters::default() };
//! let delta = now.since(&before);
//! assert_eq!((delta.comm_count, delta.cpu_ns), (3, 3_000));
//! ```

use std::fs::OpenOptions;
use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use crate::sys;

/// `"KEELCSH1"` read as a big-endian number: the page's magic.
pub const MAGIC: u64 = 0x4b45_454c_4353_4831;
/// The layout version this crate reads and writes.
pub const VERSION: u32 = 1;
/// The page's size in bytes.
pub const PAGE_SIZE: usize = 4096;
/// Table 2's T_spin in ns: the spin before blocking, unless told otherwise.
pub const DEFAULT_SPIN_NS: u64 = 100_000;
/// A process "computed" between two communication calls when it used more
/// than this much CPU time (ns) between them; otherwise the calls are one
/// communication event (the paper's back-to-back heuristic, §2.6).
pub const COMPUTE_EPSILON_NS: u64 = 50_000;
/// The environment variable that names a process's page.
pub const PAGE_ENV: &str = "KEEL_COSCHED_PAGE";
/// How many times a reader retries a torn or changing snapshot before it
/// reports [`ShmError::Torn`]. An update is a handful of stores, so a live
/// writer never holds a reader back for anywhere near this long.
pub const MAX_READ_RETRIES: u32 = 100_000;

/// The page's fields at their contract offsets.
///
/// Every field is an atomic: two processes map the page, so every access
/// is a shared-memory access; the atomics make each field's load and store
/// whole and let the seqlock's orderings be stated.
#[repr(C)]
#[derive(Debug)]
pub struct PageLayout {
    /// [`MAGIC`].
    pub magic: AtomicU64,
    /// [`VERSION`].
    pub version: AtomicU32,
    /// 0 poll, 1 spin-block, 2 block ([`PageWaitMode`]).
    pub wait_mode: AtomicU32,
    /// Spin before blocking in spin-block mode, ns.
    pub spin_ns: AtomicU64,
    /// The seqlock word (process-written).
    pub seq: AtomicU64,
    /// C_comm.
    pub comm_count: AtomicU64,
    /// T_comm, ns.
    pub comm_wait_ns: AtomicU64,
    /// Spin time while waiting, ns.
    pub spin_ns_total: AtomicU64,
    /// Process CPU time at the last update, ns.
    pub cpu_ns: AtomicU64,
    /// Completed updates.
    pub updates: AtomicU64,
    /// The process's id (node-manager-written).
    pub pid: AtomicU64,
}

const _: () = {
    assert!(offset_of!(PageLayout, magic) == 0);
    assert!(offset_of!(PageLayout, version) == 8);
    assert!(offset_of!(PageLayout, wait_mode) == 12);
    assert!(offset_of!(PageLayout, spin_ns) == 16);
    assert!(offset_of!(PageLayout, seq) == 24);
    assert!(offset_of!(PageLayout, comm_count) == 32);
    assert!(offset_of!(PageLayout, comm_wait_ns) == 40);
    assert!(offset_of!(PageLayout, spin_ns_total) == 48);
    assert!(offset_of!(PageLayout, cpu_ns) == 56);
    assert!(offset_of!(PageLayout, updates) == 64);
    assert!(offset_of!(PageLayout, pid) == 72);
    assert!(size_of::<PageLayout>() <= PAGE_SIZE);
};

/// How a process waits in blocking communication (the page's `wait_mode`
/// with its `spin_ns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageWaitMode {
    /// 0: busy-wait, never block (FCS's CS class, GS, Local, FCFS).
    Poll,
    /// 1: spin `spin_ns`, then block (FCS's F and DC classes, SB).
    SpinBlock {
        /// Spin time, ns.
        spin_ns: u64,
    },
    /// 2: block at once.
    Block,
}

impl PageWaitMode {
    /// The page's code for the mode.
    pub fn code(self) -> u32 {
        match self {
            PageWaitMode::Poll => 0,
            PageWaitMode::SpinBlock { .. } => 1,
            PageWaitMode::Block => 2,
        }
    }

    /// The mode for a code and spin time; unknown codes read as
    /// spin-block, the mode that neither burns a CPU nor loses latency.
    pub fn from_code(code: u32, spin_ns: u64) -> PageWaitMode {
        match code {
            0 => PageWaitMode::Poll,
            2 => PageWaitMode::Block,
            _ => PageWaitMode::SpinBlock { spin_ns },
        }
    }
}

/// The process-written counters, as one consistent snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// C_comm: blocking communication events.
    pub comm_count: u64,
    /// T_comm: wall time inside blocking calls, ns.
    pub comm_wait_ns: u64,
    /// Time spent spinning while waiting, ns.
    pub spin_ns_total: u64,
    /// Process CPU time at the last update, ns.
    pub cpu_ns: u64,
    /// Completed updates.
    pub updates: u64,
}

impl Counters {
    /// The counters accumulated since `baseline` (saturating, so a
    /// baseline taken from another process never underflows).
    pub fn since(&self, baseline: &Counters) -> Counters {
        Counters {
            comm_count: self.comm_count.saturating_sub(baseline.comm_count),
            comm_wait_ns: self.comm_wait_ns.saturating_sub(baseline.comm_wait_ns),
            spin_ns_total: self.spin_ns_total.saturating_sub(baseline.spin_ns_total),
            cpu_ns: self.cpu_ns.saturating_sub(baseline.cpu_ns),
            updates: self.updates.saturating_sub(baseline.updates),
        }
    }

    /// T_cpu of Table 1, ns: CPU time less the part spent spinning.
    pub fn compute_ns(&self) -> u64 {
        self.cpu_ns.saturating_sub(self.spin_ns_total)
    }
}

/// Why a page could not be created, opened or read.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// A file operation failed.
    #[error("shared page {path}: {source}")]
    Io {
        /// The page's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is not a page of this layout.
    #[error("shared page {path}: {what}")]
    Invalid {
        /// The page's path.
        path: PathBuf,
        /// What is wrong (magic, version, size).
        what: String,
    },
    /// A page of a live process already has this name.
    #[error("shared page {path} belongs to live process {pid}")]
    InUse {
        /// The page's path.
        path: PathBuf,
        /// The process that owns it.
        pid: u64,
    },
    /// The writer kept the seqlock odd (it died mid-update, or is stopped
    /// inside one).
    #[error("shared page {path}: the counters stayed mid-update for {MAX_READ_RETRIES} reads")]
    Torn {
        /// The page's path.
        path: PathBuf,
    },
}

/// The page path for `uid`'s job `job`, rank `rank`, under `dir`
/// (normally `/dev/shm`).
pub fn page_path(dir: &Path, uid: u32, job: u64, rank: usize) -> PathBuf {
    dir.join(format!("keel-cosched-{uid}-{job}-{rank}"))
}

/// One mapped page. The node manager's handle ([`Page::create`]) unlinks
/// the file when dropped; a process's handle ([`Page::open`]) does not.
#[derive(Debug)]
pub struct Page {
    ptr: NonNull<PageLayout>,
    path: PathBuf,
    unlink_on_drop: bool,
}

// SAFETY: the mapping is shared memory accessed only through atomics, so
// handles may move between and be shared by threads like `&AtomicU64`.
unsafe impl Send for Page {}
// SAFETY: as above; no method hands out non-atomic access.
unsafe impl Sync for Page {}

impl Page {
    /// Creates the page file (0600) and initialises it: magic, version,
    /// spin-block with [`DEFAULT_SPIN_NS`], zero counters and pid. With
    /// `owner`, the file is handed to that user and group (the job's user,
    /// when a root daemon runs another user's job). A leftover page of a
    /// process that no longer exists is replaced.
    ///
    /// The page directory is normally world-writable and the name
    /// predictable, so the file is created with `O_EXCL | O_NOFOLLOW` and
    /// what is already there is never followed or opened unless it is a
    /// regular file of the job's user (or ours): a symlink, a FIFO or
    /// another user's file is refused ([`ShmError::Invalid`]), untouched.
    pub fn create(path: &Path, owner: Option<(u32, u32)>) -> Result<Page, ShmError> {
        let io_err = |source| ShmError::Io {
            path: path.to_path_buf(),
            source,
        };
        let open = || {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
                .open(path)
        };
        let file = match open() {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                check_leftover(path, owner.map_or(sys::geteuid(), |o| o.0))?;
                if let Ok(old) = Page::open_with(path, libc::O_NOFOLLOW | libc::O_NONBLOCK) {
                    let pid = old.layout().pid.load(Ordering::Acquire);
                    if pid != 0 && pid <= i32::MAX as u64 && sys::kill(pid as i32, 0).is_ok() {
                        return Err(ShmError::InUse {
                            path: path.to_path_buf(),
                            pid,
                        });
                    }
                }
                std::fs::remove_file(path).map_err(io_err)?;
                open().map_err(io_err)?
            }
            Err(e) => return Err(io_err(e)),
        };
        if let Some((uid, gid)) = owner {
            sys::fchown(&file, uid, gid).map_err(io_err)?;
        }
        file.set_len(PAGE_SIZE as u64).map_err(io_err)?;
        let page = Page {
            ptr: map(&file).map_err(io_err)?,
            path: path.to_path_buf(),
            unlink_on_drop: true,
        };
        let l = page.layout();
        l.version.store(VERSION, Ordering::Relaxed);
        l.spin_ns.store(DEFAULT_SPIN_NS, Ordering::Relaxed);
        l.wait_mode.store(
            PageWaitMode::SpinBlock { spin_ns: 0 }.code(),
            Ordering::Relaxed,
        );
        // Release: a reader that sees the magic sees the fields above.
        l.magic.store(MAGIC, Ordering::Release);
        Ok(page)
    }

    /// Maps an existing page and checks its magic, version and size.
    pub fn open(path: &Path) -> Result<Page, ShmError> {
        Page::open_with(path, 0)
    }

    /// [`Page::open`] with extra `open(2)` flags.
    fn open_with(path: &Path, flags: libc::c_int) -> Result<Page, ShmError> {
        let io_err = |source| ShmError::Io {
            path: path.to_path_buf(),
            source,
        };
        let invalid = |what: String| ShmError::Invalid {
            path: path.to_path_buf(),
            what,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC | flags)
            .open(path)
            .map_err(io_err)?;
        let md = file.metadata().map_err(io_err)?;
        if !md.is_file() {
            return Err(invalid("not a regular file".into()));
        }
        let len = md.len();
        if len < PAGE_SIZE as u64 {
            return Err(invalid(format!("{len} bytes, expected {PAGE_SIZE}")));
        }
        let page = Page {
            ptr: map(&file).map_err(io_err)?,
            path: path.to_path_buf(),
            unlink_on_drop: false,
        };
        let magic = page.layout().magic.load(Ordering::Acquire);
        if magic != MAGIC {
            return Err(invalid(format!("magic {magic:#x}, expected {MAGIC:#x}")));
        }
        let version = page.layout().version.load(Ordering::Relaxed);
        if version != VERSION {
            return Err(invalid(format!("version {version}, expected {VERSION}")));
        }
        Ok(page)
    }

    /// The page named by [`PAGE_ENV`], or `None` when the variable is unset
    /// (the process then simply does not report).
    pub fn from_env() -> Result<Option<Page>, ShmError> {
        match std::env::var_os(PAGE_ENV) {
            Some(p) if !p.is_empty() => Page::open(Path::new(&p)).map(Some),
            _ => Ok(None),
        }
    }

    /// The page's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mapped fields.
    pub fn layout(&self) -> &PageLayout {
        // SAFETY: `ptr` is a live, page-aligned mapping of PAGE_SIZE bytes
        // (larger than the layout) for as long as `self` lives; every field
        // is an atomic, so shared access from other processes is sound.
        unsafe { self.ptr.as_ref() }
    }

    /// A consistent snapshot of the counters (the seqlock read).
    pub fn counters(&self) -> Result<Counters, ShmError> {
        let l = self.layout();
        for attempt in 0..MAX_READ_RETRIES {
            // Acquire: pairs with the writer's closing Release store, so the
            // counters read below are at least those of that update.
            let s1 = l.seq.load(Ordering::Acquire);
            if s1 & 1 == 0 {
                let c = Counters {
                    comm_count: l.comm_count.load(Ordering::Relaxed),
                    comm_wait_ns: l.comm_wait_ns.load(Ordering::Relaxed),
                    spin_ns_total: l.spin_ns_total.load(Ordering::Relaxed),
                    cpu_ns: l.cpu_ns.load(Ordering::Relaxed),
                    updates: l.updates.load(Ordering::Relaxed),
                };
                // Acquire fence: the counter loads above happen before the
                // re-read of seq, so an update that overlapped them shows
                // up as a changed seq.
                fence(Ordering::Acquire);
                if l.seq.load(Ordering::Relaxed) == s1 {
                    return Ok(c);
                }
            }
            if attempt % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        Err(ShmError::Torn {
            path: self.path.clone(),
        })
    }

    /// Publishes new counters (the seqlock write). Only the page's process
    /// may call this: the seqlock has a single writer.
    pub fn publish(&self, c: &Counters) {
        let l = self.layout();
        let seq = l.seq.load(Ordering::Relaxed);
        // A torn word (odd) left by a previous writer is rounded up so the
        // protocol restarts from a consistent even value.
        let even = seq.wrapping_add(seq & 1);
        l.seq.store(even.wrapping_add(1), Ordering::Relaxed);
        // Release fence: the odd seq becomes visible before any counter
        // store below, so a reader never sees new counters with the old seq.
        fence(Ordering::Release);
        l.comm_count.store(c.comm_count, Ordering::Relaxed);
        l.comm_wait_ns.store(c.comm_wait_ns, Ordering::Relaxed);
        l.spin_ns_total.store(c.spin_ns_total, Ordering::Relaxed);
        l.cpu_ns.store(c.cpu_ns, Ordering::Relaxed);
        l.updates.store(c.updates, Ordering::Relaxed);
        // Release: readers that load this even seq with Acquire see every
        // counter store above.
        l.seq.store(even.wrapping_add(2), Ordering::Release);
    }

    /// The wait mode the node manager asks for.
    pub fn wait_mode(&self) -> PageWaitMode {
        let l = self.layout();
        // Acquire: pairs with set_wait_mode's Release, so the spin time read
        // next is the one written with this mode.
        let code = l.wait_mode.load(Ordering::Acquire);
        PageWaitMode::from_code(code, l.spin_ns.load(Ordering::Relaxed))
    }

    /// Sets the wait mode (node manager only).
    pub fn set_wait_mode(&self, mode: PageWaitMode) {
        let l = self.layout();
        if let PageWaitMode::SpinBlock { spin_ns } = mode {
            l.spin_ns.store(spin_ns, Ordering::Relaxed);
        }
        // Release: the spin time above is visible before the mode.
        l.wait_mode.store(mode.code(), Ordering::Release);
    }

    /// Records the process's id (node manager only).
    pub fn set_pid(&self, pid: u32) {
        self.layout().pid.store(pid as u64, Ordering::Release);
    }

    /// Keeps the file when this handle is dropped.
    pub fn keep_file(&mut self) {
        self.unlink_on_drop = false;
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from a successful mmap of PAGE_SIZE bytes and
        // no reference into it outlives `self` (layout() borrows self).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), PAGE_SIZE) };
        if self.unlink_on_drop {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Maps the first PAGE_SIZE bytes of `file`, shared and writable.
/// Whether what already exists at a page's path may be inspected and
/// replaced: only a regular file (not followed if it is a symlink) owned
/// by `uid` (the job's user) or by this process's user.
fn check_leftover(path: &Path, uid: u32) -> Result<(), ShmError> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::symlink_metadata(path).map_err(|source| ShmError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |what: String| ShmError::Invalid {
        path: path.to_path_buf(),
        what,
    };
    if !md.file_type().is_file() {
        return Err(invalid(
            "already exists and is not a regular file (a symlink?); left alone".into(),
        ));
    }
    if md.uid() != uid && md.uid() != sys::geteuid() {
        return Err(invalid(format!(
            "already exists and belongs to uid {}, not the job's user (uid {uid}); left alone",
            md.uid()
        )));
    }
    Ok(())
}

fn map(file: &std::fs::File) -> io::Result<NonNull<PageLayout>> {
    // SAFETY: a fresh shared mapping of an open file of at least PAGE_SIZE
    // bytes; the kernel chooses the address, so nothing is overwritten.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned a null mapping"))
}

#[cfg(test)]
mod tests;
