//! [`Schedule`]: a loop schedule in `KEEL_SCHEDULE` syntax, validated where
//! it is written, so that a bad spec is an error at `parse`, not inside
//! the loop that runs it.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use keel_policy::dls::AUTO4OMP_PORTFOLIO;
use keel_policy::select::{self, AutoSpec, Method, Setting};
use keel_policy::PolicyError;

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
    /// The text as written: the loop resolves exactly this, as it would
    /// the same text in `KEEL_SCHEDULE`.
    text: Box<str>,
    /// The normalised spec that `Display` prints.
    normal: Box<str>,
    /// A fixed schedule, parsed once here, so that an instance of a loop
    /// under it neither parses nor looks up the loop's state to find it;
    /// `None` for `auto`, whose choice is the loop's own.
    fixed: Option<Parsed>,
}

/// Equal texts are equal schedules: the parsed form follows from the text.
impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.0.text == other.0.text
    }
}

impl Eq for Schedule {}

impl std::hash::Hash for Schedule {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.text.hash(state);
    }
}

impl Schedule {
    /// The text the schedule was parsed from.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    pub(crate) fn text(&self) -> &str {
        &self.0.text
    }

    /// The parsed schedule when it is a fixed one.
    pub(crate) fn fixed(&self) -> Option<&Parsed> {
        self.0.fixed.as_ref()
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Self, ScheduleError> {
        let setting = select::parse_setting(text).map_err(|error| ScheduleError {
            spec: text.to_string(),
            error,
        })?;
        let (normal, fixed) = match setting {
            Setting::Fixed { schedule, chunk } => {
                let parsed = ParsedSchedule::new(schedule, chunk);
                (parsed.canonical.clone(), Some(parsed))
            }
            Setting::Auto(spec) => (auto_spec(&spec, text.contains("expert-chunk")), None),
        };
        Ok(Schedule(Arc::new(Inner {
            text: text.into(),
            normal: normal.into(),
            fixed,
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
