//! Concept descriptors: how a policy *describes* an input it needs, and how a
//! component *describes* an input it provides (ARTful paper §3.1, Listing 2).
//!
//! A requirement is matched against a component by [`Concept::is_met_by`], the
//! paper's check function `C_k`. It is deliberately asymmetric: a requirement
//! whose workload model is [`Model::Any`] accepts a component of any concrete
//! model, but a component described as `Any` never satisfies a requirement for
//! a concrete model (the runtime must say how its data was obtained).
//!
//! The check is asymmetric:
//!
//! ```
//! use keel_policy::{Concept, Model, Subject};
//! let any = Concept::Workload { subject: Subject::Tasks, model: Model::Any };
//! let measured = Concept::Workload { subject: Subject::Tasks, model: Model::Dynamic };
//! assert!(any.is_met_by(&measured)); // a policy that takes any model accepts measurements
//! assert!(!measured.is_met_by(&any)); // data of unknown origin serves no concrete need
//! ```

use std::fmt;

/// What a workload vector measures (the paper's subject `S`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// One value per task (object, chunk, loop iteration).
    Tasks,
    /// One value per processing unit (core, thread, rank, node).
    Pus,
}

/// How workload values were obtained (the paper's model `M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Model {
    /// From offline analysis or user hints (BinLPT's `omp_set_workload`).
    Static,
    /// From introspection: measured by the runtime (Charm++'s LBDB).
    Dynamic,
    /// Irrelevant to the policy; only meaningful in a requirement.
    Any,
}

/// Who registered a component. Runtime components take precedence (paper §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// Provided by the context (the runtime library) itself.
    Runtime,
    /// Provided by the user to extend what the context offers.
    User,
}

/// A scheduling concept descriptor: the concept and its descriptor parameters `P_k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Concept {
    /// Workload predictions: a number per task or per PU, in abstract units.
    Workload {
        /// What the values are attached to.
        subject: Subject,
        /// How the values were obtained.
        model: Model,
    },
    /// Whether each task may be moved (Charm++'s migratable chares).
    TaskMigratable,
    /// Whether each PU may receive work (Charm++'s `available` PEs).
    PuAvailability,
    /// Relative speed of each PU (1.0 is the reference PU).
    PuSpeed,
    /// Where each task runs now ([`crate::NO_PU`] for a task not placed yet).
    CurrentMapping,
    /// Seconds per iteration of a loop, `[mean, sd]`, measured by the context
    /// on the previous instance of the same loop (LB4OMP's profile; read by
    /// the `fsc`, `fac`, `mfac`, `tap` and `bold` loop schedules).
    IterationProfile,
    /// One static weight per thread, proportional to its speed (`wf`'s
    /// weights, LB4OMP's `KMP_WEIGHTS`; usually provided by the user).
    ThreadWeights,
    /// Two numbers per thread, `[ΣsW_i, ΣsT_i]`: iterations and seconds of
    /// thread `i` over the previous instances of a loop, each instance
    /// weighted by its time-step number `s` (accumulated by the context for
    /// `awf`).
    ThreadHistory,
    /// Seconds of scheduling overhead per chunk, `[h]` (`fsc`, `bold`).
    SchedulingOverhead,
    /// Each thread's iteration ranges, made by a workload-aware loop
    /// schedule (`binlpt`, `greedy`) from the user's hints and kept by the
    /// context for later instances of the same loop (multiloop reuse).
    IterationAssignment,
}

impl Concept {
    /// Task workload requirement that accepts any model.
    pub const TASK_LOADS: Concept = Concept::Workload {
        subject: Subject::Tasks,
        model: Model::Any,
    };
    /// PU (background) workload requirement that accepts any model.
    pub const PU_LOADS: Concept = Concept::Workload {
        subject: Subject::Pus,
        model: Model::Any,
    };

    /// The paper's check function: does a component described by `provided`
    /// meet this requirement?
    pub fn is_met_by(&self, provided: &Concept) -> bool {
        match (self, provided) {
            (
                Concept::Workload { subject, model },
                Concept::Workload {
                    subject: provided_subject,
                    model: provided_model,
                },
            ) => {
                subject == provided_subject
                    && ((*model == Model::Any && *provided_model != Model::Any)
                        || model == provided_model)
            }
            (required, provided) => required == provided,
        }
    }
}

impl Concept {
    /// A short fixed name, for component names that need no allocation.
    pub fn label(&self) -> &'static str {
        match self {
            Concept::Workload {
                subject: Subject::Tasks,
                ..
            } => "task workload",
            Concept::Workload {
                subject: Subject::Pus,
                ..
            } => "PU workload",
            Concept::TaskMigratable => "task migratability",
            Concept::PuAvailability => "PU availability",
            Concept::PuSpeed => "PU relative speed",
            Concept::CurrentMapping => "current mapping",
            Concept::IterationProfile => "iteration profile",
            Concept::ThreadWeights => "thread weights",
            Concept::ThreadHistory => "thread history",
            Concept::SchedulingOverhead => "scheduling overhead",
            Concept::IterationAssignment => "iteration assignment",
        }
    }
}

impl fmt::Display for Concept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Concept::Workload { subject, model } => {
                let subject = match subject {
                    Subject::Tasks => "task",
                    Subject::Pus => "PU",
                };
                let model = match model {
                    Model::Static => "static ",
                    Model::Dynamic => "dynamic ",
                    Model::Any => "",
                };
                write!(f, "{model}{subject} workload")
            }
            Concept::TaskMigratable => f.write_str("task migratability"),
            Concept::PuAvailability => f.write_str("PU availability"),
            Concept::PuSpeed => f.write_str("PU relative speed"),
            Concept::CurrentMapping => f.write_str("current mapping"),
            Concept::IterationProfile => f.write_str("iteration profile"),
            Concept::ThreadWeights => f.write_str("thread weights"),
            Concept::ThreadHistory => f.write_str("thread history"),
            Concept::SchedulingOverhead => f.write_str("scheduling overhead"),
            Concept::IterationAssignment => f.write_str("iteration assignment"),
        }
    }
}

/// One input a policy states it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The concept the policy needs.
    pub concept: Concept,
    /// A policy can run without an optional input (it assumes the neutral
    /// default: every task migratable, every PU available, speed 1, no load).
    pub optional: bool,
}

impl Requirement {
    /// A requirement the policy cannot run without.
    pub const fn required(concept: Concept) -> Self {
        Requirement {
            concept,
            optional: false,
        }
    }

    /// A requirement with a neutral default.
    pub const fn optional(concept: Concept) -> Self {
        Requirement {
            concept,
            optional: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(subject: Subject, model: Model) -> Concept {
        Concept::Workload { subject, model }
    }

    #[test]
    fn any_requirement_matches_every_concrete_model_of_the_same_subject() {
        let required = workload(Subject::Tasks, Model::Any);
        assert!(required.is_met_by(&workload(Subject::Tasks, Model::Static)));
        assert!(required.is_met_by(&workload(Subject::Tasks, Model::Dynamic)));
        assert!(!required.is_met_by(&workload(Subject::Pus, Model::Dynamic)));
    }

    #[test]
    fn the_check_is_asymmetric() {
        let provided_any = workload(Subject::Tasks, Model::Any);
        assert!(!workload(Subject::Tasks, Model::Static).is_met_by(&provided_any));
        // Listing 2: `model == any && o.model != any || model == o.model`.
        assert!(workload(Subject::Tasks, Model::Any).is_met_by(&provided_any));
    }

    #[test]
    fn concrete_models_must_be_equal() {
        let required = workload(Subject::Pus, Model::Dynamic);
        assert!(required.is_met_by(&workload(Subject::Pus, Model::Dynamic)));
        assert!(!required.is_met_by(&workload(Subject::Pus, Model::Static)));
    }

    #[test]
    fn other_concepts_match_only_themselves() {
        assert!(Concept::PuSpeed.is_met_by(&Concept::PuSpeed));
        assert!(!Concept::PuSpeed.is_met_by(&Concept::PuAvailability));
        assert!(!Concept::CurrentMapping.is_met_by(&Concept::TASK_LOADS));
    }

    #[test]
    fn loop_measurement_concepts_match_only_themselves_and_are_named() {
        let loops = [
            (Concept::IterationProfile, "iteration profile"),
            (Concept::ThreadWeights, "thread weights"),
            (Concept::ThreadHistory, "thread history"),
            (Concept::SchedulingOverhead, "scheduling overhead"),
            (Concept::IterationAssignment, "iteration assignment"),
        ];
        for (i, (concept, name)) in loops.iter().enumerate() {
            assert_eq!(concept.label(), *name);
            assert_eq!(concept.to_string(), *name);
            for (j, (other, _)) in loops.iter().enumerate() {
                assert_eq!(concept.is_met_by(other), i == j, "{concept} vs {other}");
            }
            assert!(!concept.is_met_by(&Concept::PuSpeed));
            assert!(!Concept::PuSpeed.is_met_by(concept));
        }
    }
}
