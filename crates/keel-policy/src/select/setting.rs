//! `auto[,method]` and `KEEL_SCHEDULE` settings: the selection methods'
//! names, their parsed spec ([`AutoSpec`]) and the setting that is either
//! one fixed schedule or selection per instance.

use std::fmt;

use serde::Serialize;

use crate::dls::{self, LoopSchedule, AUTO4OMP_PORTFOLIO};
use crate::error::PolicyError;
use crate::spec::{Spec, SpecError};

use super::{LoopSelector, DEFAULT_RECORD_RUNS};

/// The selection methods `auto,<method>` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Keel's own method ([`keel`](super::keel)); what `auto` alone means.
    Keel,
    /// Auto4OMP's ExpertSel ([`expert`](super::expert)).
    Expert,
    /// Auto4OMP's ExhaustiveSel ([`exhaustive`](super::exhaustive)).
    Exhaustive,
    /// Auto4OMP's RandomSel ([`random`](super::random)).
    Random,
}

/// The valid method names, in [`Method::ALL`] order.
pub const METHOD_NAMES: [&str; 4] = ["keel", "expert", "exhaustive", "random"];

impl Method {
    /// Every method, `auto`'s default first.
    pub const ALL: [Method; 4] = [
        Method::Keel,
        Method::Expert,
        Method::Exhaustive,
        Method::Random,
    ];

    /// The name after `auto,`.
    pub fn name(self) -> &'static str {
        METHOD_NAMES[self as usize]
    }

    /// The method called `name` (exact, lower-case), or a typed error that
    /// lists the valid names.
    pub fn from_name(name: &str) -> Result<Self, PolicyError> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| PolicyError::UnknownPolicy {
                family: "selection method",
                name: name.to_string(),
                valid: METHOD_NAMES.iter().map(|s| s.to_string()).collect(),
            })
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed `auto[,method]` setting: everything needed to build one
/// [`LoopSelector`] per loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoSpec {
    /// The selection method.
    pub method: Method,
    /// Seed of RandomSel's ChaCha stream (0 unless `seed=` is given, like
    /// Auto4OMP's `srand(0)`); the other methods draw no random numbers.
    pub seed: u64,
    /// Whether the expert chunk replaces the chunk parameter (on by default
    /// under `auto`; the context maps `KEEL_EXPERT_CHUNK=0|1` onto it).
    pub expert_chunk: bool,
    /// Capacity of each loop's [`Record`](super::Record) in runs.
    pub record_runs: usize,
    /// See [`AutoSpec::pin`]; private so that it is always a portfolio
    /// index.
    pub(super) pin: Option<usize>,
}

impl AutoSpec {
    /// `method` with the defaults: seed 0, expert chunk on,
    /// [`DEFAULT_RECORD_RUNS`].
    pub fn new(method: Method) -> Self {
        AutoSpec {
            method,
            seed: 0,
            expert_chunk: true,
            record_runs: DEFAULT_RECORD_RUNS,
            pin: None,
        }
    }

    /// The same spec with the expert chunk switched on or off.
    pub fn with_expert_chunk(self, on: bool) -> Self {
        AutoSpec {
            expert_chunk: on,
            ..self
        }
    }

    /// The same spec with another seed.
    pub fn with_seed(self, seed: u64) -> Self {
        AutoSpec { seed, ..self }
    }

    /// The portfolio index every instance runs whatever the method chooses
    /// (`pin=<schedule>`), if any. The method still decides and observes,
    /// the measurements and the record are kept as usual: this measures
    /// the cost of the selection mechanism itself against the plain
    /// schedule (e.g. auto pinned to STATIC on a balanced loop).
    pub fn pin(&self) -> Option<usize> {
        self.pin
    }

    /// The same spec pinned to the portfolio schedule `schedule`
    /// (case-insensitive); any other name is
    /// [`PolicyError::UnknownPolicy`] listing the twelve.
    pub fn with_pin(self, schedule: &str) -> Result<Self, PolicyError> {
        let name = schedule.trim().to_ascii_lowercase();
        let index = AUTO4OMP_PORTFOLIO.iter().position(|&s| s == name);
        let pin = Some(index.ok_or_else(|| PolicyError::UnknownPolicy {
            family: "portfolio schedule",
            name,
            valid: AUTO4OMP_PORTFOLIO.iter().map(|s| s.to_string()).collect(),
        })?);
        Ok(AutoSpec { pin, ..self })
    }

    /// A fresh selector for one loop. `stream` separates the random streams
    /// of different loops under one seed (pass a stable hash of the loop id);
    /// only RandomSel reads it.
    pub fn selector(&self, stream: u64) -> LoopSelector {
        LoopSelector::new(self, stream)
    }

    /// The canonical text: `auto,<method>`, in the spec grammar when a seed,
    /// the expert chunk or a pin differs from the default
    /// (`auto:method=random,seed=7,expert-chunk=0,pin=static`).
    pub fn text(&self) -> String {
        let mut text = String::from("auto");
        if self.seed == 0 && self.expert_chunk && self.pin.is_none() {
            text.push(',');
            text.push_str(self.method.name());
            return text;
        }
        text.push_str(":method=");
        text.push_str(self.method.name());
        if self.seed != 0 {
            text.push_str(&format!(",seed={}", self.seed));
        }
        if !self.expert_chunk {
            text.push_str(",expert-chunk=0");
        }
        if let Some(i) = self.pin {
            text.push_str(",pin=");
            text.push_str(AUTO4OMP_PORTFOLIO[i]);
        }
        text
    }
}

/// Parses `auto[,method]` (OpenMP style, case-insensitive, spaces ignored)
/// or `auto:method=m,seed=s,expert-chunk=0|1,pin=<schedule>` (spec grammar;
/// `pin` names a portfolio schedule, see [`AutoSpec::pin`]). Returns `None`
/// when the text does not name `auto`, so a context can fall back to
/// a fixed schedule; `auto` alone is `auto,keel`. An unknown method
/// is [`PolicyError::UnknownPolicy`] listing the valid methods.
///
/// ```
/// use keel_policy::select::{parse_auto, Method};
/// assert_eq!(parse_auto("auto").unwrap().unwrap().method, Method::Keel);
/// assert_eq!(parse_auto(" AUTO , Expert").unwrap().unwrap().method, Method::Expert);
/// let spec = parse_auto("auto:method=random,seed=7").unwrap().unwrap();
/// assert_eq!((spec.method, spec.seed), (Method::Random, 7));
/// assert!(parse_auto("static,4").is_none());
/// let err = parse_auto("auto,fuzzy").unwrap().unwrap_err().to_string();
/// assert!(err.contains("keel, expert, exhaustive, random"), "{err}");
/// ```
pub fn parse_auto(text: &str) -> Option<Result<AutoSpec, PolicyError>> {
    let head = text.split([',', ':']).next().unwrap_or("");
    if !head.trim().eq_ignore_ascii_case("auto") {
        return None;
    }
    Some(if text.contains(':') {
        parse_auto_spec(text)
    } else {
        parse_auto_openmp(text)
    })
}

fn parse_auto_openmp(text: &str) -> Result<AutoSpec, PolicyError> {
    let mut parts = text.splitn(2, ',');
    let head = parts.next().unwrap_or("");
    let Some(method) = parts.next() else {
        return Ok(AutoSpec::new(Method::Keel));
    };
    let method = method.trim().to_ascii_lowercase();
    if method.is_empty() || method.contains(',') {
        return Err(PolicyError::Spec(SpecError {
            input: text.to_string(),
            position: head.len() + 1,
            problem: format!(
                "expected `auto[,method]` with one method of {}",
                METHOD_NAMES.join(", ")
            ),
        }));
    }
    Ok(AutoSpec::new(Method::from_name(&method)?))
}

fn parse_auto_spec(text: &str) -> Result<AutoSpec, PolicyError> {
    let mut spec = Spec::parse(text.trim())?;
    spec.name = spec.name.to_ascii_lowercase();
    spec.check_keys(&["method", "seed", "expert-chunk", "pin"])?;
    let method = match spec.token("method")? {
        None => Method::Keel,
        Some(name) => Method::from_name(&name.to_ascii_lowercase())?,
    };
    let seed = spec.parsed::<u64>("seed", "an integer >= 0")?.unwrap_or(0);
    let expert_chunk = spec.choice("expert-chunk", &["0", "1"])? != Some("0");
    let auto = AutoSpec {
        method,
        seed,
        expert_chunk,
        record_runs: DEFAULT_RECORD_RUNS,
        pin: None,
    };
    match spec.token("pin")? {
        None => Ok(auto),
        Some(schedule) => auto.with_pin(schedule),
    }
}

/// A `KEEL_SCHEDULE` setting: one fixed schedule, or selection per instance.
pub enum Setting {
    /// A fixed schedule and its chunk parameter.
    Fixed {
        /// The schedule.
        schedule: Box<dyn LoopSchedule>,
        /// Its chunk parameter, if the text gave one.
        chunk: Option<u64>,
    },
    /// `auto[,method]`.
    Auto(AutoSpec),
}

impl Setting {
    /// The fixed schedule and its chunk parameter; `None` for `auto`,
    /// which is selection, not one schedule.
    ///
    /// ```
    /// use keel_policy::select::parse_setting;
    /// assert!(parse_setting("guided,2").unwrap().into_fixed().is_some());
    /// assert!(parse_setting("auto").unwrap().into_fixed().is_none());
    /// ```
    pub fn into_fixed(self) -> Option<(Box<dyn LoopSchedule>, Option<u64>)> {
        match self {
            Setting::Fixed { schedule, chunk } => Some((schedule, chunk)),
            Setting::Auto(_) => None,
        }
    }
}

impl fmt::Debug for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setting::Fixed { schedule, chunk } => f
                .debug_struct("Fixed")
                .field("schedule", &schedule.spec().to_string())
                .field("chunk", chunk)
                .finish(),
            Setting::Auto(spec) => f.debug_tuple("Auto").field(spec).finish(),
        }
    }
}

/// Parses `KEEL_SCHEDULE` text, the one way to read a schedule:
/// `auto[,method]` as [`Setting::Auto`] ([`parse_auto`]), anything else —
/// OpenMP's `kind[,chunk]` or the spec grammar `name:key=value,...` — as
/// [`Setting::Fixed`].
///
/// ```
/// use keel_policy::dls::LoopSchedule;
/// use keel_policy::select::{parse_setting, Method, Setting};
/// assert!(matches!(parse_setting("auto").unwrap(), Setting::Auto(s) if s.method == Method::Keel));
/// assert!(matches!(parse_setting("dynamic,4").unwrap(), Setting::Fixed { chunk: Some(4), .. }));
/// let (schedule, chunk) = parse_setting("dynamic,8").unwrap().into_fixed().unwrap();
/// assert_eq!((schedule.spec().to_string(), chunk), ("ss:chunk=8".to_string(), Some(8)));
/// let (schedule, chunk) = parse_setting("tap:alpha=0.5,chunk=2").unwrap().into_fixed().unwrap();
/// assert_eq!((schedule.spec().to_string(), chunk), ("tap:chunk=2,alpha=0.5".to_string(), Some(2)));
/// assert!(parse_setting("dynamic,0").is_err());
/// ```
pub fn parse_setting(text: &str) -> Result<Setting, PolicyError> {
    match parse_auto(text) {
        Some(spec) => Ok(Setting::Auto(spec?)),
        None => {
            let (schedule, chunk) = dls::parse_schedule(text)?;
            Ok(Setting::Fixed { schedule, chunk })
        }
    }
}
