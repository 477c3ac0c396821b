//! The `loop schedule` registry and `KEEL_SCHEDULE` parsing
//! (`docs/conventions.md#loop-schedules`, `#the-chunk-parameter`).
//!
//! Two syntaxes reach the same schedules:
//! - OpenMP's `kind[,chunk]` (`OMP_SCHEDULE`, `KEEL_SCHEDULE`): `static`,
//!   `static,4`, `dynamic,8`, `guided`, `gss-llvm`, `fac2`, `awf-b`,
//!   `static-steal,16`. Case-insensitive, spaces ignored.
//! - The spec grammar `name:key=value,...` for schedule parameters:
//!   `tap:alpha=0.5`, `af:divider=4`, `ss:chunk=8`.
//!
//! `dynamic` is `ss` and `guided` is `gss` (both registered as aliases).
//! `auto[,method]` is schedule *selection*, read by
//! [`crate::select::parse_setting`] (`auto` alone = `auto,keel`) before it
//! calls this module's parser for everything else: here `auto` is no
//! schedule. Every schedule accepts
//! `chunk=k` (`k >= 1`); a `chunk` in the
//! spec is the schedule's default, which a loop's own chunk parameter
//! ([`LoopShape::chunk`]) overrides.

use std::fmt;

use crate::concept::{Concept, Requirement};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::registry::Registry;
use crate::spec::{Spec, SpecError, SpecValue};

use super::inputs::Inputs;
use super::{
    awf_live, bold, fac, fsc, tap, wf, Af, AfVariant, AwfVariant, Fac2, FacVariant, Gac, Guided,
    GuidedRule, LoopSchedule, LoopShape, Plan, Ss, StaticBlock, StaticSteal, Tss, WorkloadSchedule,
    DEFAULT_ALPHA, DEFAULT_DIVIDER, WORKLOAD_SCHEDULES,
};

/// The Auto4OMP portfolio in the order of its released code, the indices
/// every selection method uses (`docs/conventions.md#auto4omp-portfolio-order`;
/// the released code's `autoDLSPortfolio`).
pub const AUTO4OMP_PORTFOLIO: [&str; 12] = [
    "static",
    "ss",
    "tss",
    "gac",
    "gss-llvm",
    "mfac2",
    "static-steal",
    "awf-b",
    "awf-c",
    "awf-d",
    "awf-e",
    "maf",
];

/// Parameters of a built-in schedule, from its spec.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScheduleParams {
    /// Default chunk parameter (`chunk=k`); a loop's own chunk overrides it.
    pub chunk: Option<u64>,
    /// TAP's `α` (`alpha=`), [`DEFAULT_ALPHA`] unless given.
    pub alpha: f64,
    /// AF's sub-chunks per chunk (`divider=`), [`DEFAULT_DIVIDER`] unless given.
    pub divider: u64,
}

impl Default for ScheduleParams {
    fn default() -> Self {
        ScheduleParams {
            chunk: None,
            alpha: DEFAULT_ALPHA,
            divider: DEFAULT_DIVIDER,
        }
    }
}

type Planner = for<'a, 'c> fn(&Inputs<'a, 'c>, &ScheduleParams) -> Result<Plan<'a>, PolicyError>;

/// One registry line: a name and how it plans.
struct Builtin {
    /// The registered name.
    name: &'static str,
    /// The name `spec()` gives (differs for the aliases `dynamic`, `guided`).
    canonical: &'static str,
    summary: &'static str,
    /// Spec keys beyond `chunk`.
    keys: &'static [&'static str],
    requirements: &'static [Requirement],
    planner: Planner,
}

const PROFILE: Requirement = Requirement::optional(Concept::IterationProfile);
const OVERHEAD: Requirement = Requirement::optional(Concept::SchedulingOverhead);
const WEIGHTS: Requirement = Requirement::optional(Concept::ThreadWeights);
const HISTORY: Requirement = Requirement::optional(Concept::ThreadHistory);

#[rustfmt::skip]
static BUILTINS: [Builtin; 24] = [
    Builtin { name: "static", canonical: "static", keys: &[], requirements: &[],
        summary: "equal blocks, one per thread; static,k: blocks of k dealt round-robin",
        planner: |i, _| Ok(Plan::Static(StaticBlock::new(&i.shape))) },
    Builtin { name: "ss", canonical: "ss", keys: &[], requirements: &[],
        summary: "self-scheduling: chunks of exactly k (default 1), one fetch_add each",
        planner: |i, _| Ok(Plan::Ss(Ss::new(&i.shape))) },
    Builtin { name: "dynamic", canonical: "ss", keys: &[], requirements: &[],
        summary: "OpenMP's name for ss",
        planner: |i, _| Ok(Plan::Ss(Ss::new(&i.shape))) },
    Builtin { name: "gss", canonical: "gss", keys: &[], requirements: &[],
        summary: "guided self-scheduling: ⌈R/P⌉, at least k (classic, libgomp)",
        planner: |i, _| Ok(Plan::Guided(Guided::new(&i.shape, GuidedRule::Classic))) },
    Builtin { name: "guided", canonical: "gss", keys: &[], requirements: &[],
        summary: "OpenMP's name for gss",
        planner: |i, _| Ok(Plan::Guided(Guided::new(&i.shape, GuidedRule::Classic))) },
    Builtin { name: "gss-llvm", canonical: "gss-llvm", keys: &[], requirements: &[],
        summary: "LLVM's guided: ⌊R/2P⌋, then exactly k",
        planner: |i, _| Ok(Plan::Guided(Guided::new(&i.shape, GuidedRule::Llvm))) },
    Builtin { name: "gac", canonical: "gac", keys: &[], requirements: &[],
        summary: "LLVM's analytical guided (libomp's auto): closed-form guided chunks, then k",
        planner: |i, _| Ok(Gac::plan(&i.shape)) },
    Builtin { name: "tss", canonical: "tss", keys: &[], requirements: &[],
        summary: "trapezoid self-scheduling: linearly shrinking chunks; k is the last chunk",
        planner: |i, _| Ok(Plan::Tss(Tss::new(&i.shape))) },
    Builtin { name: "fsc", canonical: "fsc", keys: &[], requirements: &[PROFILE, OVERHEAD],
        summary: "fixed-size chunking from σ and overhead (mfac2 without a profile)",
        planner: |i, _| fsc::plan(i) },
    Builtin { name: "fac", canonical: "fac", keys: &[], requirements: &[PROFILE],
        summary: "factoring from profiled μ, σ (mfac2 without a profile)",
        planner: |i, _| fac::plan(i, FacVariant::Fac) },
    Builtin { name: "mfac", canonical: "mfac", keys: &[], requirements: &[PROFILE],
        summary: "factoring, lock-free batch recursion (mfac2 without a profile)",
        planner: |i, _| fac::plan(i, FacVariant::Mfac) },
    Builtin { name: "fac2", canonical: "fac2", keys: &[], requirements: &[],
        summary: "factoring with x = 2: batches of P chunks of ⌈N/(P·2^(j+1))⌉",
        planner: |i, _| Ok(Plan::Fac2(Fac2::new(&i.shape))) },
    Builtin { name: "mfac2", canonical: "mfac2", keys: &[], requirements: &[],
        summary: "fac2 by iterated halving (the same sequence)",
        planner: |i, _| Ok(Plan::Fac2(Fac2::new(&i.shape))) },
    Builtin { name: "wf", canonical: "wf", keys: &[], requirements: &[WEIGHTS],
        summary: "weighted factoring: mfac2 batches times static thread weights",
        planner: |i, _| wf::plan_wf(i) },
    Builtin { name: "tap", canonical: "tap", keys: &["alpha"], requirements: &[PROFILE],
        summary: "tapering from profiled μ, σ [alpha=1] (mfac2 without a profile)",
        planner: |i, p| tap::plan(i, p.alpha) },
    Builtin { name: "bold", canonical: "bold", keys: &[], requirements: &[PROFILE, OVERHEAD],
        summary: "Hagerup's BOLD from μ, σ, overhead (mfac2 without a profile)",
        planner: |i, _| bold::plan(i) },
    Builtin { name: "awf", canonical: "awf", keys: &[], requirements: &[HISTORY, WEIGHTS],
        summary: "adaptive weighted factoring across time steps (thread history)",
        planner: |i, _| wf::plan_awf(i) },
    Builtin { name: "awf-b", canonical: "awf-b", keys: &[], requirements: &[WEIGHTS],
        summary: "AWF, weights per chunk, batched, chunk times",
        planner: |i, _| awf_live::plan(i, AwfVariant::B) },
    Builtin { name: "awf-c", canonical: "awf-c", keys: &[], requirements: &[WEIGHTS],
        summary: "AWF, weights per chunk, ⌈R/2P⌉ base, chunk times",
        planner: |i, _| awf_live::plan(i, AwfVariant::C) },
    Builtin { name: "awf-d", canonical: "awf-d", keys: &[], requirements: &[WEIGHTS],
        summary: "AWF, weights per chunk, batched, request-to-request times",
        planner: |i, _| awf_live::plan(i, AwfVariant::D) },
    Builtin { name: "awf-e", canonical: "awf-e", keys: &[], requirements: &[WEIGHTS],
        summary: "AWF, weights per chunk, ⌈R/2P⌉ base, request-to-request times",
        planner: |i, _| awf_live::plan(i, AwfVariant::E) },
    Builtin { name: "af", canonical: "af", keys: &["divider"], requirements: &[],
        summary: "adaptive factoring from per-thread μ, σ measured in sub-chunks [divider=10]",
        planner: |i, p| Ok(Plan::Af(Af::new(&i.shape, AfVariant::Af, p.divider))) },
    Builtin { name: "maf", canonical: "maf", keys: &["divider"], requirements: &[],
        summary: "adaptive factoring, times include the overhead [divider=10]",
        planner: |i, p| Ok(Plan::Af(Af::new(&i.shape, AfVariant::Maf, p.divider))) },
    Builtin { name: "static-steal", canonical: "static-steal", keys: &[], requirements: &[],
        summary: "static home ranges, idle threads steal from the back; k is the stealing unit",
        planner: |i, _| Ok(Plan::StaticSteal(StaticSteal::new(&i.shape))) },
];

/// A built-in loop schedule with its parameters.
#[derive(Clone, Copy)]
pub struct Schedule {
    builtin: &'static Builtin,
    params: ScheduleParams,
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schedule")
            .field("name", &self.builtin.canonical)
            .field("params", &self.params)
            .finish()
    }
}

/// Equal when they plan alike: `dynamic` equals `ss`.
impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.builtin.canonical == other.builtin.canonical && self.params == other.params
    }
}

impl Schedule {
    /// Builds a built-in schedule from its spec (`name[:key=value,...]`).
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        let builtin = BUILTINS
            .iter()
            .find(|b| b.name == spec.name)
            .ok_or_else(|| unknown(&spec.name))?;
        Self::build(builtin, spec)
    }

    fn build(builtin: &'static Builtin, spec: &Spec) -> Result<Self, PolicyError> {
        let mut keys = vec!["chunk"];
        keys.extend_from_slice(builtin.keys);
        spec.check_keys(&keys)?;
        let defaults = ScheduleParams::default();
        let params = ScheduleParams {
            chunk: positive(spec, "chunk")?,
            alpha: spec
                .number_at_least("alpha", 0.0)?
                .unwrap_or(defaults.alpha),
            divider: positive(spec, "divider")?.unwrap_or(defaults.divider),
        };
        Ok(Schedule { builtin, params })
    }

    /// The canonical name (`ss` for `dynamic`, `gss` for `guided`).
    pub fn canonical_name(&self) -> &'static str {
        self.builtin.canonical
    }

    /// The parameters.
    pub fn params(&self) -> ScheduleParams {
        self.params
    }
}

/// An integer `>= 1` (chunk sizes, dividers); 0 is an error, not "default".
fn positive(spec: &Spec, key: &str) -> Result<Option<u64>, PolicyError> {
    const EXPECTED: &str = "an integer >= 1";
    match spec.parsed::<u64>(key, EXPECTED)? {
        Some(0) => Err(spec.invalid(key, "0", EXPECTED)),
        other => Ok(other),
    }
}

fn unknown(name: &str) -> PolicyError {
    let mut valid: Vec<String> = BUILTINS.iter().map(|b| b.name.to_string()).collect();
    valid.extend(WORKLOAD_SCHEDULES.iter().map(|n| n.to_string()));
    valid.push("auto".to_string());
    PolicyError::UnknownPolicy {
        family: "loop schedule",
        name: name.to_string(),
        valid,
    }
}

impl LoopSchedule for Schedule {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named(self.builtin.canonical);
        let defaults = ScheduleParams::default();
        let mut push = |key: &str, value: String| {
            spec.params.push((key.to_string(), SpecValue::Token(value)));
        };
        if let Some(k) = self.params.chunk {
            push("chunk", k.to_string());
        }
        if self.builtin.keys.contains(&"alpha") && self.params.alpha != defaults.alpha {
            push("alpha", self.params.alpha.to_string());
        }
        if self.builtin.keys.contains(&"divider") && self.params.divider != defaults.divider {
            push("divider", self.params.divider.to_string());
        }
        spec
    }

    fn requirements(&self) -> &[Requirement] {
        self.builtin.requirements
    }

    fn plan<'a>(
        &self,
        shape: &LoopShape,
        ctx: &'a ContextHandler<'_>,
    ) -> Result<Plan<'a>, PolicyError> {
        // Re-validate: the fields are public, and every rule divides by P.
        let shape = LoopShape::new(
            shape.iterations,
            shape.threads,
            shape.chunk.or(self.params.chunk),
        )?;
        let inputs = Inputs {
            name: self.builtin.canonical,
            shape,
            ctx,
        };
        (self.builtin.planner)(&inputs, &self.params)
    }
}

/// The `loop schedule` registry with every built-in name (aliases
/// included). `auto` is not registered: it is selection, parsed by
/// [`crate::select::parse_setting`].
pub fn registry() -> Registry<dyn LoopSchedule> {
    let mut r: Registry<dyn LoopSchedule> = Registry::empty("loop schedule");
    for builtin in &BUILTINS {
        let summary = format!("{} [chunk=k]", builtin.summary);
        r.register(builtin.name, &summary, move |spec, _| {
            Ok(Box::new(Schedule::build(builtin, spec)?) as Box<dyn LoopSchedule>)
        })
        .expect("built-in names are unique and kebab-case");
    }
    for name in WORKLOAD_SCHEDULES {
        let summary = format!(
            "the `{name}` mapping policy over per-iteration workload hints (.workload), \
             computed once and reused until the hints change [chunk=k, and {name}'s own keys]"
        );
        r.register(name, &summary, |spec, _| {
            Ok(Box::new(WorkloadSchedule::from_spec(spec)?) as Box<dyn LoopSchedule>)
        })
        .expect("workload schedule names are unique and kebab-case");
    }
    r
}

/// Parses `KEEL_SCHEDULE` text: OpenMP's `kind[,chunk]` or the spec grammar
/// `name:key=value,...`, returning the schedule and its chunk parameter.
/// A single schedule only, and crate-private: every context reads
/// schedule text through [`crate::select::parse_setting`], which handles
/// `auto[,method]` and calls this for everything else, so that no caller
/// can read `auto` as one fixed schedule by mistake.
pub(crate) fn parse_schedule(
    text: &str,
) -> Result<(Box<dyn LoopSchedule>, Option<u64>), PolicyError> {
    let spec = if text.contains(':') {
        Spec::parse(text)?
    } else {
        openmp_spec(text)?
    };
    let name = spec.name.as_str();
    if WORKLOAD_SCHEDULES.contains(&name) {
        let schedule = WorkloadSchedule::from_spec(&spec)?;
        let chunk = schedule.chunk();
        return Ok((Box::new(schedule), chunk));
    }
    let builtin = BUILTINS
        .iter()
        .find(|b| b.name == name)
        .ok_or_else(|| unknown(&spec.name))?;
    let schedule = Schedule::build(builtin, &spec)?;
    Ok((Box::new(schedule), schedule.params.chunk))
}

/// `kind[,chunk]` as a spec `kind[:chunk=k]`.
fn openmp_spec(text: &str) -> Result<Spec, PolicyError> {
    let malformed = |position: usize, problem: &str| {
        PolicyError::Spec(SpecError {
            input: text.to_string(),
            position,
            problem: problem.to_string(),
        })
    };
    let (kind, chunk) = match text.split_once(',') {
        Some((kind, chunk)) => (kind, Some(chunk)),
        None => (text, None),
    };
    let name = kind.trim().to_ascii_lowercase();
    if name.is_empty() {
        return Err(malformed(0, "expected a schedule name"));
    }
    let mut spec = Spec::named(&name);
    let Some(chunk) = chunk else {
        return Ok(spec);
    };
    let chunk = chunk.trim();
    let at = kind.len() + 1;
    if chunk.is_empty() {
        return Err(malformed(at, "missing chunk size after `,`"));
    }
    if chunk.contains(',') {
        return Err(malformed(
            at,
            "expected `kind[,chunk]`: one chunk size at most",
        ));
    }
    spec.params
        .push(("chunk".to_string(), SpecValue::Token(chunk.to_string())));
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (String, Option<u64>) {
        let (schedule, chunk) = parse_schedule(text).unwrap();
        (schedule.spec().to_string(), chunk)
    }

    #[test]
    fn openmp_syntax_and_aliases() {
        assert_eq!(parsed("static"), ("static".into(), None));
        assert_eq!(parsed("static,4"), ("static:chunk=4".into(), Some(4)));
        assert_eq!(parsed("dynamic"), ("ss".into(), None));
        assert_eq!(parsed("dynamic,8"), ("ss:chunk=8".into(), Some(8)));
        assert_eq!(parsed("guided"), ("gss".into(), None));
        assert_eq!(parsed("guided,2"), ("gss:chunk=2".into(), Some(2)));
        assert_eq!(parsed("gss-llvm"), ("gss-llvm".into(), None));
        assert_eq!(parsed("fac2"), ("fac2".into(), None));
        assert_eq!(parsed("awf-b"), ("awf-b".into(), None));
        assert_eq!(
            parsed("static-steal,16"),
            ("static-steal:chunk=16".into(), Some(16))
        );
        assert_eq!(parsed(" Dynamic , 3 "), ("ss:chunk=3".into(), Some(3)));
    }

    #[test]
    fn spec_syntax_with_parameters() {
        assert_eq!(parsed("tap:alpha=1.0"), ("tap".into(), None));
        assert_eq!(parsed("tap:alpha=0.5"), ("tap:alpha=0.5".into(), None));
        assert_eq!(parsed("af:divider=10"), ("af".into(), None));
        assert_eq!(
            parsed("maf:divider=4,chunk=2"),
            ("maf:chunk=2,divider=4".into(), Some(2))
        );
        assert_eq!(parsed("ss:chunk=7"), ("ss:chunk=7".into(), Some(7)));
    }

    #[test]
    fn malformed_and_invalid_text_gives_typed_errors() {
        let err = |text: &str| parse_schedule(text).err().unwrap();
        for text in [
            "",
            " ",
            ",4",
            "static,",
            "static,4,5",
            "static:",
            "tap:alpha",
        ] {
            assert!(
                matches!(err(text), PolicyError::Spec(_)),
                "{text}: {}",
                err(text)
            );
        }
        for text in [
            "dynamic,0",
            "static,x",
            "static,-1",
            "ss:chunk=0",
            "af:divider=0",
            "tap:alpha=-1",
        ] {
            assert!(
                matches!(err(text), PolicyError::InvalidParameter { .. }),
                "{text}: {}",
                err(text)
            );
        }
        assert!(matches!(
            err("ss:alpha=1"),
            PolicyError::UnknownParameter { .. }
        ));
        let unknown = err("dynamc").to_string();
        assert!(
            unknown.contains("dynamic") && unknown.contains("auto"),
            "{unknown}"
        );
        assert!(unknown.contains("static-steal"), "{unknown}");
        // `auto` is selection: the selection parser reads it first.
        assert!(matches!(err("auto"), PolicyError::UnknownPolicy { .. }));
    }

    #[test]
    fn the_registry_holds_every_design_name_and_round_trips_specs() {
        let r = registry();
        let names = r.names();
        for name in [
            "static",
            "ss",
            "dynamic",
            "gss",
            "guided",
            "gss-llvm",
            "gac",
            "tss",
            "fsc",
            "fac",
            "mfac",
            "fac2",
            "mfac2",
            "wf",
            "tap",
            "bold",
            "awf",
            "awf-b",
            "awf-c",
            "awf-d",
            "awf-e",
            "af",
            "maf",
            "static-steal",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing");
        }
        assert!(AUTO4OMP_PORTFOLIO
            .iter()
            .all(|n| names.iter().any(|m| m == n)));
        for text in [
            "static:chunk=3",
            "tap:alpha=2.5",
            "af:divider=3,chunk=9",
            "guided",
        ] {
            let built = r.build(text).unwrap();
            let again = r.build_spec(&built.spec()).unwrap();
            assert_eq!(built.spec(), again.spec());
        }
        assert!(
            r.build("auto").is_err(),
            "auto is selection, not a registered schedule"
        );
    }

    #[test]
    fn a_loop_chunk_overrides_the_spec_default_and_bad_shapes_are_rejected() {
        let ctx = ContextHandler::new();
        let schedule = registry().build("ss:chunk=4").unwrap();
        let plan = |shape: LoopShape| schedule.plan(&shape, &ctx).unwrap();
        let default = plan(LoopShape::new(10, 2, None).unwrap());
        assert_eq!(default.chunk_at(0), Some(0..4));
        let own = plan(LoopShape::new(10, 2, Some(3)).unwrap());
        assert_eq!(own.chunk_at(0), Some(0..3));
        let bad = LoopShape {
            iterations: 10,
            threads: 0,
            chunk: None,
        };
        assert!(schedule.plan(&bad, &ctx).is_err());
    }

    #[test]
    fn requirements_name_the_measured_inputs() {
        let r = registry();
        let reqs = |name: &str| r.build(name).unwrap().requirements().to_vec();
        assert!(reqs("static").is_empty());
        assert!(reqs("bold").iter().all(|q| q.optional));
        assert!(reqs("bold")
            .iter()
            .any(|q| q.concept == Concept::SchedulingOverhead));
        assert!(reqs("awf")
            .iter()
            .any(|q| q.concept == Concept::ThreadHistory));
        assert!(reqs("wf")
            .iter()
            .any(|q| q.concept == Concept::ThreadWeights));
    }
}
