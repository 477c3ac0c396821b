//! Which loops Keel takes and under which schedule: process-wide settings
//! only, so that every thread of a team, and every team, decides alike.
//!
//! - `KEEL_SCHEDULE` (read once): the schedule of every loop Keel takes.
//!   A value that does not parse is warned about once and every loop is
//!   forwarded to libgomp, which then runs its own schedule.
//! - Unset, `schedule(runtime)` loops keep OpenMP's meaning: the last
//!   `omp_set_schedule` of any thread (mirrored process-wide), else
//!   `OMP_SCHEDULE` (read once; a value libgomp rejects is forwarded to
//!   libgomp, which warns about it), else Keel's `auto`.
//! - `KEEL_OMP_TAKE=dynamic,guided` (read once) also takes
//!   `schedule(dynamic)` / `schedule(guided)` loops, under
//!   `KEEL_SCHEDULE` or else `auto`.
//! - A `monotonic` loop is taken only under a schedule whose chunks each
//!   thread receives in increasing order; otherwise it is forwarded.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use keel::Schedule;

/// The schedule kind a loop was compiled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `schedule(runtime)`.
    Runtime,
    /// `schedule(dynamic[,k])`.
    Dynamic,
    /// `schedule(guided[,k])`.
    Guided,
}

/// What Keel reads from the environment, once per process.
///
/// ```
/// use keel_omp::{Kind, Settings};
///
/// let (s, warnings) = Settings::from_vars(Some("dynamic,3"), None, None);
/// assert!(warnings.is_empty());
/// assert_eq!(s.schedule_for(Kind::Runtime, false, None).unwrap().to_string(), "ss:chunk=3");
/// // dynamic loops stay libgomp's unless KEEL_OMP_TAKE asks for them
/// assert!(s.schedule_for(Kind::Dynamic, false, None).is_none());
///
/// let (bad, warnings) = Settings::from_vars(Some("bogus"), None, None);
/// assert_eq!(warnings.len(), 1);
/// assert!(bad.schedule_for(Kind::Runtime, false, None).is_none());
/// ```
#[derive(Clone)]
pub struct Settings {
    /// `KEEL_SCHEDULE`: unset, valid, or invalid (`Err`: forward).
    keel: Option<Result<Schedule, ()>>,
    /// `OMP_SCHEDULE`: unset, or its Keel equivalent (`None`: forward).
    omp: Option<Option<Schedule>>,
    take_dynamic: bool,
    take_guided: bool,
    auto: Schedule,
    /// [`is_monotonic`] of `keel`'s and `omp`'s schedules, asked once
    /// (it prints the schedule), not per loop.
    keel_monotonic: bool,
    omp_monotonic: bool,
}

impl Settings {
    /// Settings from the variables' values (`None` = unset), with the
    /// warnings to print.
    pub fn from_vars(
        keel_schedule: Option<&str>,
        omp_schedule: Option<&str>,
        take: Option<&str>,
    ) -> (Settings, Vec<String>) {
        fn set(v: Option<&str>) -> Option<&str> {
            v.map(str::trim).filter(|v| !v.is_empty())
        }
        let mut warnings = Vec::new();
        let keel = set(keel_schedule).map(|text| {
            text.parse::<Schedule>().map_err(|err| {
                warnings.push(format!(
                    "KEEL_SCHEDULE={} is not a schedule ({}); OpenMP loops keep the runtime's own schedule",
                    shown(text, true),
                    shown(&err.to_string(), false)
                ));
            })
        });
        let omp = set(omp_schedule).map(omp_schedule_to_keel);
        let (mut take_dynamic, mut take_guided) = (false, false);
        for word in set(take)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            match word.to_ascii_lowercase().as_str() {
                "dynamic" => take_dynamic = true,
                "guided" => take_guided = true,
                "runtime" => {}
                _ => warnings.push(format!(
                    "KEEL_OMP_TAKE: {} is not a loop kind (dynamic, guided, runtime); ignored",
                    shown(word, true)
                )),
            }
        }
        let auto = "auto".parse().expect("`auto` is a schedule");
        let keel_monotonic = matches!(&keel, Some(Ok(s)) if is_monotonic(s));
        let omp_monotonic = matches!(&omp, Some(Some(s)) if is_monotonic(s));
        (
            Settings {
                keel,
                omp,
                take_dynamic,
                take_guided,
                auto,
                keel_monotonic,
                omp_monotonic,
            },
            warnings,
        )
    }

    /// The schedule Keel runs a loop of `kind` under, `None` to forward
    /// it to libgomp. `program` is the schedule the program set with
    /// `omp_set_schedule`: `None` never set, `Some(None)` one Keel has no
    /// equivalent for.
    pub fn schedule_for(
        &self,
        kind: Kind,
        monotonic: bool,
        program: Option<Option<&Schedule>>,
    ) -> Option<Schedule> {
        self.schedule_ref(kind, monotonic, program).cloned()
    }

    /// Whether a loop may run under `auto` before the program sets a
    /// schedule itself: `KEEL_SCHEDULE` is unset or `auto`.
    pub(crate) fn may_select(&self) -> bool {
        match &self.keel {
            None => true,
            Some(Ok(schedule)) => schedule.selects(),
            Some(Err(())) => false,
        }
    }

    /// [`schedule_for`](Self::schedule_for) without the clone: a loop's
    /// decision reads the schedule and writes no reference count.
    pub(crate) fn schedule_ref<'a>(
        &'a self,
        kind: Kind,
        monotonic: bool,
        program: Option<Option<&'a Schedule>>,
    ) -> Option<&'a Schedule> {
        // `auto` may choose any portfolio schedule: never monotonic.
        let (chosen, ordered) = match (&self.keel, kind) {
            (Some(Err(())), _) => return None,
            (_, Kind::Dynamic) if !self.take_dynamic => return None,
            (_, Kind::Guided) if !self.take_guided => return None,
            (Some(Ok(s)), _) => (s, self.keel_monotonic),
            (None, Kind::Runtime) => match (program, &self.omp) {
                (Some(set), _) => {
                    let set = set?;
                    // Only a monotonic loop asks (printing the schedule).
                    (set, monotonic && is_monotonic(set))
                }
                (None, Some(env)) => (env.as_ref()?, self.omp_monotonic),
                (None, None) => (&self.auto, false),
            },
            (None, _) => (&self.auto, false),
        };
        (!monotonic || ordered).then_some(chosen)
    }
}

/// Whether every thread receives its chunks in increasing iteration order
/// under `schedule`: static blocks, and the schedules that hand out the
/// next iterations from one shared counter. Stealing, adaptive sub-chunks
/// and assignments from hints are not, and neither is `auto`, which may
/// choose any of them.
pub fn is_monotonic(schedule: &Schedule) -> bool {
    let text = schedule.to_string();
    let base = text.split(':').next().unwrap_or("");
    matches!(base, "static" | "ss" | "gss" | "gss-llvm" | "gac" | "tss")
}

/// Keel's equivalent of an `OMP_SCHEDULE` value (`[modifier:]kind[,chunk]`),
/// `None` when libgomp would reject it.
pub fn omp_schedule_to_keel(text: &str) -> Option<Schedule> {
    let text = text.trim().to_ascii_lowercase();
    let text = text
        .strip_prefix("monotonic:")
        .or_else(|| text.strip_prefix("nonmonotonic:"))
        .unwrap_or(&text);
    let (kind, chunk) = match text.split_once(',') {
        Some((kind, chunk)) => (
            kind.trim(),
            Some(chunk.trim().parse::<u64>().ok().filter(|&c| c > 0)?),
        ),
        None => (text.trim(), None),
    };
    keel_equivalent(kind, chunk)
}

/// Keel's equivalent of `omp_set_schedule(kind, chunk)` (`omp_sched_t`
/// values: 1 static, 2 dynamic, 3 guided, 4 auto, the monotonic modifier
/// `0x80000000` or-ed in); a chunk below 1 means the default.
pub fn omp_set_schedule_to_keel(kind: i32, chunk: i64) -> Option<Schedule> {
    let chunk = u64::try_from(chunk).ok().filter(|&c| c > 0);
    let name = match kind & 0x7fff_ffff {
        1 => "static",
        2 => "dynamic",
        3 => "guided",
        4 => "auto",
        _ => return None,
    };
    keel_equivalent(name, chunk)
}

fn keel_equivalent(kind: &str, chunk: Option<u64>) -> Option<Schedule> {
    let text = match (kind, chunk) {
        ("static" | "dynamic" | "guided", Some(k)) => format!("{kind},{k}"),
        ("static" | "guided", None) => kind.to_string(),
        ("dynamic", None) => "dynamic,1".to_string(),
        ("auto", _) => "auto".to_string(),
        _ => return None,
    };
    text.parse().ok()
}

/// The process's settings, read from the environment at the first loop;
/// the warnings printed then.
pub(crate) fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let mut unreadable = Vec::new();
        let mut var = |name: &'static str| env_text(name, &mut unreadable);
        let (keel, omp, take) = (
            var("KEEL_SCHEDULE"),
            var("OMP_SCHEDULE"),
            var("KEEL_OMP_TAKE"),
        );
        let (mut settings, warnings) =
            Settings::from_vars(keel.as_deref(), omp.as_deref(), take.as_deref());
        if unreadable.contains(&"KEEL_SCHEDULE") {
            // As any other bad value: the runtime keeps its loops.
            settings.keel = Some(Err(()));
        }
        for warning in unreadable_warnings(&unreadable).into_iter().chain(warnings) {
            eprintln!("keel-omp: warning: {warning}");
        }
        finish_trace_at_exit();
        crate::report::arm();
        settings
    })
}

/// Characters of a bad value a warning shows: a value of thousands of
/// characters is not echoed whole.
const SHOWN_CHARS: usize = 80;

/// `text` cut to [`SHOWN_CHARS`] characters, what was cut said; escaped
/// and quoted when `quote` (a value as the user gave it).
fn shown(text: &str, quote: bool) -> String {
    let total = text.chars().count();
    let head: String = text.chars().take(SHOWN_CHARS).collect();
    let head = if quote { format!("{head:?}") } else { head };
    if total <= SHOWN_CHARS {
        head
    } else {
        format!("{head}… ({total} characters)")
    }
}

/// The variable's value; `None` when unset or not UTF-8, the latter's name
/// pushed on `unreadable`.
fn env_text(name: &'static str, unreadable: &mut Vec<&'static str>) -> Option<String> {
    match std::env::var(name) {
        Ok(text) => Some(text),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            unreadable.push(name);
            None
        }
    }
}

/// The warnings for variables whose values are not UTF-8.
fn unreadable_warnings(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|name| {
            let effect = match *name {
                "KEEL_SCHEDULE" => "OpenMP loops keep the runtime's own schedule",
                "OMP_SCHEDULE" => "Keel reads it as unset",
                _ => "ignored",
            };
            format!("{name} is not UTF-8 text; {effect}")
        })
        .collect()
}

/// With `KEEL_TRACE` set, completes the trace file when the program exits
/// (the program has no `keel::trace::FinishGuard` of its own). Only the
/// process that registered it finishes the file: a forked child that calls
/// `exit` leaves its parent's trace alone.
fn finish_trace_at_exit() {
    static PID: OnceLock<u32> = OnceLock::new();
    extern "C" fn finish() {
        if PID.get() == Some(&std::process::id()) {
            let _ = std::panic::catch_unwind(keel::trace::finish);
        }
    }
    if std::env::var_os("KEEL_TRACE").is_some_and(|v| !v.is_empty()) {
        PID.get_or_init(std::process::id);
        // SAFETY: `finish` is an `extern "C" fn()` that never unwinds.
        unsafe { libc::atexit(finish) };
    }
}

/// The schedule the program last set with `omp_set_schedule`, from any
/// thread: `None` when it never did.
static PROGRAM: Mutex<Option<Option<Schedule>>> = Mutex::new(None);

/// How many times the program called `omp_set_schedule`: a loop's
/// decision reads this word alone (one relaxed load) while it is 0, which
/// it stays in a program that never calls it, and takes the lock only
/// when the count moved since the thread's last look. Relaxed suffices:
/// a thread sees its own calls in program order, and another thread's
/// call reaches it through whatever ordered the two (a region's start, a
/// barrier), as OpenMP itself orders ICV changes.
static PROGRAM_SETS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The program schedule this thread last read and the count it read
    /// it at.
    static PROGRAM_SEEN: RefCell<(u64, Option<Option<Schedule>>)> = const { RefCell::new((0, None)) };
}

pub(crate) fn set_program_schedule(kind: i32, chunk: i64) {
    let schedule = omp_set_schedule_to_keel(kind, chunk);
    let mut program = PROGRAM.lock().unwrap_or_else(|e| e.into_inner());
    *program = Some(schedule);
    // Under the lock: a reader that sees the new count then reads the
    // schedule it counts (or a later one).
    PROGRAM_SETS.fetch_add(1, Ordering::Relaxed);
}

/// The schedule the program last set (`None`: never), as `f` reads it.
pub(crate) fn with_program_schedule<R>(f: impl FnOnce(Option<Option<&Schedule>>) -> R) -> R {
    let sets = PROGRAM_SETS.load(Ordering::Relaxed);
    if sets == 0 {
        return f(None);
    }
    let mut f = Some(f);
    let read = PROGRAM_SEEN.try_with(|seen| {
        let mut seen = seen.borrow_mut();
        if seen.0 != sets {
            let program = PROGRAM.lock().unwrap_or_else(|e| e.into_inner());
            *seen = (PROGRAM_SETS.load(Ordering::Relaxed), program.clone());
        }
        f.take().map(|f| f(seen.1.as_ref().map(Option::as_ref)))
    });
    match (read, f) {
        (Ok(Some(r)), _) => r,
        // The thread is exiting (its cache is gone): read under the lock.
        (_, Some(f)) => {
            let program = PROGRAM.lock().unwrap_or_else(|e| e.into_inner()).clone();
            f(program.as_ref().map(Option::as_ref))
        }
        (_, None) => unreachable!("`f` runs once, in the cache or here"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    fn text(s: Option<Schedule>) -> Option<String> {
        s.map(|s| s.to_string())
    }

    #[test]
    fn precedence_keel_then_program_then_omp_then_auto() {
        let (s, w) = Settings::from_vars(None, Some("guided,4"), None);
        assert!(w.is_empty());
        let dynamic = omp_set_schedule_to_keel(2, 5).unwrap();
        let rt = |program| text(s.schedule_for(Kind::Runtime, false, program));
        assert_eq!(rt(None), Some("gss:chunk=4".into()));
        assert_eq!(rt(Some(Some(&dynamic))), Some("ss:chunk=5".into()));
        assert_eq!(
            rt(Some(None)),
            None,
            "an unknown omp_set_schedule kind forwards"
        );
        let (s, _) = Settings::from_vars(Some("af"), Some("guided,4"), Some("dynamic"));
        assert_eq!(
            text(s.schedule_for(Kind::Runtime, false, Some(Some(&dynamic)))),
            Some("af".into())
        );
        assert_eq!(
            text(s.schedule_for(Kind::Dynamic, false, None)),
            Some("af".into())
        );
        assert_eq!(text(s.schedule_for(Kind::Guided, false, None)), None);
        let (s, _) = Settings::from_vars(None, None, Some("guided"));
        assert!(text(s.schedule_for(Kind::Runtime, false, None))
            .unwrap()
            .starts_with("auto"));
        assert!(text(s.schedule_for(Kind::Guided, false, None))
            .unwrap()
            .starts_with("auto"));
    }

    #[test]
    fn monotonic_loops_only_under_monotonic_schedules() {
        for (spec, ok) in [
            ("static", true),
            ("static,4", true),
            ("dynamic,3", true),
            ("guided", true),
            ("gac", true),
            ("tss", true),
            ("static-steal", false),
            ("af", false),
            ("auto", false),
            ("fac2", false),
        ] {
            let (s, _) = Settings::from_vars(Some(spec), None, None);
            assert_eq!(
                s.schedule_for(Kind::Runtime, true, None).is_some(),
                ok,
                "{spec}"
            );
            assert!(
                s.schedule_for(Kind::Runtime, false, None).is_some(),
                "{spec}"
            );
        }
    }

    #[test]
    fn omp_schedule_values() {
        let t = |v: &str| text(omp_schedule_to_keel(v));
        assert_eq!(t("dynamic"), Some("ss:chunk=1".into()));
        assert_eq!(t(" Dynamic , 7 "), Some("ss:chunk=7".into()));
        assert_eq!(t("nonmonotonic:guided,2"), Some("gss:chunk=2".into()));
        assert_eq!(t("monotonic:static"), Some("static".into()));
        assert!(t("auto").unwrap().starts_with("auto"));
        for bad in ["", "dynamic,0", "dynamic,x", "fast", "static,-1", "af"] {
            assert_eq!(t(bad), None, "{bad}");
        }
        assert_eq!(
            text(omp_set_schedule_to_keel(0x8000_0001u32 as i32, 0)),
            Some("static".into())
        );
        assert_eq!(text(omp_set_schedule_to_keel(3, -4)), Some("gss".into()));
        assert_eq!(text(omp_set_schedule_to_keel(9, 1)), None);
    }

    /// The process-wide mirror, read through its call count: never set,
    /// then each `omp_set_schedule` seen by this thread and by another
    /// (the one test here that sets it: the mirror is process-wide).
    #[test]
    fn the_program_schedule_mirror_follows_every_set() {
        let read = || with_program_schedule(|p| p.map(|s| s.map(ToString::to_string)));
        if PROGRAM_SETS.load(Ordering::Relaxed) == 0 {
            assert_eq!(read(), None, "never set");
        }
        set_program_schedule(2, 5);
        assert_eq!(read(), Some(Some("ss:chunk=5".into())));
        assert_eq!(read(), Some(Some("ss:chunk=5".into())), "from the cache");
        set_program_schedule(3, 0);
        assert_eq!(read(), Some(Some("gss".into())));
        std::thread::spawn(|| set_program_schedule(9, 1))
            .join()
            .unwrap();
        assert_eq!(read(), Some(None), "a kind Keel has no equivalent for");
        let other = std::thread::spawn(move || {
            with_program_schedule(|p| p.map(|s| s.map(ToString::to_string)))
        });
        assert_eq!(other.join().unwrap(), Some(None), "another thread");
        let (s, _) = Settings::from_vars(None, Some("guided,4"), None);
        let chosen = with_program_schedule(|p| {
            s.schedule_ref(Kind::Runtime, false, p)
                .map(ToString::to_string)
        });
        assert_eq!(chosen, None, "forwarded under an unknown program kind");
        set_program_schedule(1, 0);
    }

    #[test]
    fn long_bad_values_are_echoed_once_and_cut() {
        let long = "x".repeat(5_000);
        let (_, warnings) = Settings::from_vars(Some(&long), None, Some(&long));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        for warning in &warnings {
            assert!(warning.len() < 600, "{} bytes: {warning}", warning.len());
            assert!(warning.contains("(5000 characters)"), "{warning}");
        }
    }

    #[test]
    fn values_that_are_not_utf8_are_named_in_a_warning() {
        let warnings = unreadable_warnings(&["KEEL_SCHEDULE", "KEEL_OMP_TAKE"]);
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].starts_with("KEEL_SCHEDULE is not UTF-8"));
        assert!(warnings[0].contains("runtime's own schedule"));
        assert!(warnings[1].starts_with("KEEL_OMP_TAKE is not UTF-8"));
        // Read from the environment: a value that is not UTF-8 is named.
        let name = "KEEL_OMP_TEST_NOT_UTF8";
        // SAFETY: this test alone uses this variable.
        unsafe {
            std::env::set_var(name, std::ffi::OsStr::from_bytes(b"stat\xffic"));
        }
        let mut unreadable = Vec::new();
        assert_eq!(env_text(name, &mut unreadable), None);
        assert_eq!(unreadable, [name]);
    }

    #[test]
    fn bad_take_words_warn_and_are_ignored() {
        let (s, w) = Settings::from_vars(Some("static"), None, Some("dynamic, bogus,GUIDED"));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("bogus"));
        assert!(s.schedule_for(Kind::Dynamic, false, None).is_some());
        assert!(s.schedule_for(Kind::Guided, false, None).is_some());
    }
}
