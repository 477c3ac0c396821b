//! [`Schedule`]: a loop schedule in `KEEL_SCHEDULE` syntax, validated where
//! it is written, so that a bad spec is an error at `parse`, not inside
//! the loop that runs it.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use keel_policy::dls::AUTO4OMP_PORTFOLIO;
use keel_policy::select::{self, AutoSpec, Method, Setting};
use keel_policy::spec::Spec;
use keel_policy::PolicyError;

use super::settings;
use super::state::{Parsed, ParsedSchedule};

/// A validated loop schedule: `static`, `dynamic,4`, `guided`, `awf-b`,
/// `binlpt:chunks=80`, `auto`, `auto,expert`, `auto:method=random,seed=3`, …
/// (the syntax of `KEEL_SCHEDULE`, parsed by the same
/// [`select::parse_setting`]).
///
/// ```
/// let guided: keel::Schedule = "guided".parse().unwrap();
/// assert_eq!(guided.to_string(), "gss"); // the registry's name for it
/// assert_eq!("dynamic,4".parse::<keel::Schedule>().unwrap().to_string(), "ss:chunk=4");
/// assert!("bogus".parse::<keel::Schedule>().is_err());
/// ```
///
/// Cheap to clone and reusable across loops; each loop still keeps its
/// own state (an `auto` loop its own selection).
#[derive(Clone)]
pub struct Schedule(Arc<Inner>);

/// Behind one pointer: a loop builder carries one word, a clone takes one
/// reference count.
struct Inner {
    /// What every instance under this schedule asks of it, settled here.
    resolved: ResolvedSchedule,
    /// The normalised spec that `Display` prints.
    normal: Box<str>,
}

/// A schedule as loop instances use it, resolved once where it is written
/// (a parsed [`Schedule`]) or read (`KEEL_SCHEDULE`): no instance parses
/// or inspects text.
pub(crate) struct ResolvedSchedule {
    /// The text as written: a loop's state remembers what it resolved to
    /// under this key, so that a loop whose schedule changes starts afresh.
    pub(crate) text: Box<str>,
    pub(crate) kind: ScheduleKind,
    /// Where the schedule came from, as errors name it.
    pub(crate) source: &'static str,
}

/// Fixed or selected per instance.
pub(crate) enum ScheduleKind {
    /// One schedule, parsed once, so that an instance neither parses nor
    /// looks up the loop's state to find it.
    Fixed(Parsed),
    /// `auto[,method]`, its expert chunk settled: the text's own
    /// `expert-chunk`, else `KEEL_EXPERT_CHUNK`.
    Auto(AutoSpec),
}

impl ResolvedSchedule {
    /// `text` in `KEEL_SCHEDULE` syntax from `source`.
    pub(crate) fn parse(text: &str, source: &'static str) -> Result<Self, PolicyError> {
        let kind = match select::parse_setting(text)? {
            Setting::Fixed { schedule, chunk } => {
                ScheduleKind::Fixed(ParsedSchedule::new(schedule, chunk))
            }
            Setting::Auto(auto) if expert_chunk_given(text) => ScheduleKind::Auto(auto),
            Setting::Auto(auto) => {
                ScheduleKind::Auto(auto.with_expert_chunk(settings::expert_chunk()))
            }
        };
        Ok(ResolvedSchedule {
            text: text.into(),
            kind,
            source,
        })
    }

    /// The fixed schedule, if it is one.
    pub(crate) fn fixed(&self) -> Option<&Parsed> {
        match &self.kind {
            ScheduleKind::Fixed(parsed) => Some(parsed),
            ScheduleKind::Auto(_) => None,
        }
    }
}

/// Whether an `auto` text sets `expert-chunk` itself: only the spec
/// grammar (`auto:…`) has keys, and an absent key leaves the choice to
/// `KEEL_EXPERT_CHUNK`.
fn expert_chunk_given(text: &str) -> bool {
    text.contains(':')
        && Spec::parse(text.trim()).is_ok_and(|spec| spec.get("expert-chunk").is_some())
}

/// Equal texts are equal schedules: the parsed form follows from the text.
impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.0.resolved.text == other.0.resolved.text
    }
}

impl Eq for Schedule {}

impl std::hash::Hash for Schedule {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.resolved.text.hash(state);
    }
}

impl Schedule {
    /// The text the schedule was parsed from.
    pub fn as_str(&self) -> &str {
        &self.0.resolved.text
    }

    /// Whether the schedule is `auto` in any of its forms: each loop's
    /// schedule is then chosen by its selector.
    ///
    /// ```
    /// use keel::Schedule;
    /// assert!("auto".parse::<Schedule>()?.selects());
    /// assert!("auto:method=expert".parse::<Schedule>()?.selects());
    /// assert!(!"guided".parse::<Schedule>()?.selects());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn selects(&self) -> bool {
        self.0.resolved.fixed().is_none()
    }

    /// What loop instances use of it.
    pub(crate) fn resolved(&self) -> &ResolvedSchedule {
        &self.0.resolved
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Self, ScheduleError> {
        let resolved =
            ResolvedSchedule::parse(text, "schedule").map_err(|error| ScheduleError {
                spec: text.to_string(),
                error,
            })?;
        let normal = match &resolved.kind {
            ScheduleKind::Fixed(parsed) => parsed.canonical.clone(),
            ScheduleKind::Auto(spec) => auto_spec(spec, expert_chunk_given(text)),
        };
        Ok(Schedule(Arc::new(Inner {
            resolved,
            normal: normal.into(),
        })))
    }
}

/// `auto`, `auto,method`, or `auto:key=value,…` with the keys that differ
/// from their defaults; `expert-chunk` only when the text set it, since
/// without it `KEEL_EXPERT_CHUNK` decides.
fn auto_spec(spec: &AutoSpec, expert_given: bool) -> String {
    let mut keys = Vec::new();
    if spec.seed != 0 {
        keys.push(format!("seed={}", spec.seed));
    }
    if expert_given {
        keys.push(format!("expert-chunk={}", u8::from(spec.expert_chunk)));
    }
    if let Some(pin) = spec.pin() {
        keys.push(format!("pin={}", AUTO4OMP_PORTFOLIO[pin]));
    }
    match (spec.method, keys.is_empty()) {
        (Method::Keel, true) => "auto".to_string(),
        (method, true) => format!("auto,{}", method.name()),
        (method, false) => format!("auto:method={},{}", method.name(), keys.join(",")),
    }
}

impl fmt::Display for Schedule {
    /// The normalised spec: a fixed schedule's canonical spec
    /// (`dynamic,4` prints `ss:chunk=4`), or `auto[,method]` / `auto:…`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.normal)
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Schedule({:?})", &*self.0.normal)
    }
}

/// A schedule spec that does not parse: the text and what is wrong with it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("invalid schedule `{spec}`: {error}")]
pub struct ScheduleError {
    /// The text as given.
    pub spec: String,
    /// What is wrong with it.
    pub error: PolicyError,
}

impl From<ScheduleError> for super::LoopError {
    fn from(e: ScheduleError) -> Self {
        super::LoopError::Schedule {
            source_name: "schedule",
            error: e.error,
        }
    }
}
