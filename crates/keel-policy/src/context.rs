//! The scheduling context handler (ARTful paper §3.2, Fig. 1).
//!
//! A context (the thread runtime, the simulator, the CLI, ...) registers
//! *components*: data it can provide, each described by a [`Concept`] and tagged
//! with its [`Origin`]. A policy then fetches its inputs by describing them; the
//! handler answers with the best matching component — runtime components
//! before user ones, earlier registrations before later ones — or with a typed
//! error that names the unmet requirement. Policies never see anything else.
//!
//! Components borrow their data (`Cow`), so building a handler over a
//! runtime's own buffers copies nothing.
//!
//! A user component serves only when the runtime has none of that concept:
//!
//! ```
//! use keel_policy::{Concept, ContextHandler, Model, Origin, Subject};
//! let tasks = Concept::Workload { subject: Subject::Tasks, model: Model::Dynamic };
//! let (user, runtime) = ([9.0, 9.0], [1.0, 2.0]);
//! let mut ctx = ContextHandler::new();
//! ctx.provide_values(tasks, Origin::User, &user[..])
//!     .provide_values(tasks, Origin::Runtime, &runtime[..]);
//! assert_eq!(ctx.values("demo", tasks).unwrap(), Some(&runtime[..]));
//! // Nothing provides PU speeds: optional inputs read as `None`.
//! assert_eq!(ctx.values("demo", Concept::PuSpeed).unwrap(), None);
//! ```

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::assignment::Assignment;
use crate::concept::{Concept, Origin, Requirement};
use crate::error::PolicyError;

/// The data a component provides: its interface `I_k` in the paper's terms.
#[derive(Clone, Debug)]
pub enum ComponentData<'a> {
    /// One number per task or per PU (workloads, speeds).
    Values(Cow<'a, [f64]>),
    /// One flag per task or per PU (migratability, availability).
    Flags(Cow<'a, [bool]>),
    /// A PU index per task (a mapping; [`crate::NO_PU`] where unplaced).
    Placement(Cow<'a, [usize]>),
    /// Each thread's iteration ranges, made once by a workload-aware loop
    /// schedule and kept by the context.
    Assignment(&'a Assignment),
}

impl ComponentData<'_> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            ComponentData::Values(v) => v.len(),
            ComponentData::Flags(v) => v.len(),
            ComponentData::Placement(v) => v.len(),
            ComponentData::Assignment(a) => a.len(),
        }
    }

    /// Whether the component holds no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kind(&self) -> &'static str {
        match self {
            ComponentData::Values(_) => "numbers",
            ComponentData::Flags(_) => "flags",
            ComponentData::Placement(_) => "a placement",
            ComponentData::Assignment(_) => "an iteration assignment",
        }
    }
}

/// An ARTful component: data described by a concept descriptor, with its origin.
#[derive(Clone, Debug)]
pub struct Component<'a> {
    /// What the component provides.
    pub concept: Concept,
    /// Who registered it.
    pub origin: Origin,
    /// A short name for messages ("lbdb task loads", "user hints").
    pub name: Cow<'a, str>,
    /// The provided data.
    pub data: ComponentData<'a>,
}

/// Components kept inline: a context registers a handful, and a loop builds
/// a handler per instance, which must not allocate.
const INLINE_COMPONENTS: usize = 8;

/// Registry of components that answers policies' requirements.
///
/// Components are stored inline (no allocation for up to 8), so a handler
/// keeps borrowing its components' data until it is dropped; drop it (or
/// end its scope) before mutating what it borrowed.
#[derive(Clone, Debug, Default)]
pub struct ContextHandler<'a> {
    components: SmallVec<[Component<'a>; INLINE_COMPONENTS]>,
}

impl<'a> ContextHandler<'a> {
    /// An empty handler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a component. Registration order breaks ties within an origin.
    pub fn register(&mut self, component: Component<'a>) -> &mut Self {
        self.components.push(component);
        self
    }

    /// Registers numbers (workloads or speeds) from the runtime.
    pub fn provide_values(
        &mut self,
        concept: Concept,
        origin: Origin,
        values: impl Into<Cow<'a, [f64]>>,
    ) -> &mut Self {
        self.register(Component {
            concept,
            origin,
            name: Cow::Borrowed(concept.label()),
            data: ComponentData::Values(values.into()),
        })
    }

    /// Registers flags (migratability or availability).
    pub fn provide_flags(
        &mut self,
        concept: Concept,
        origin: Origin,
        flags: impl Into<Cow<'a, [bool]>>,
    ) -> &mut Self {
        self.register(Component {
            concept,
            origin,
            name: Cow::Borrowed(concept.label()),
            data: ComponentData::Flags(flags.into()),
        })
    }

    /// Registers the current task-to-PU placement.
    pub fn provide_placement(
        &mut self,
        origin: Origin,
        placement: impl Into<Cow<'a, [usize]>>,
    ) -> &mut Self {
        self.register(Component {
            concept: Concept::CurrentMapping,
            origin,
            name: Cow::Borrowed("current mapping"),
            data: ComponentData::Placement(placement.into()),
        })
    }

    /// Registers an iteration assignment a workload-aware loop schedule made
    /// earlier ([`Concept::IterationAssignment`]).
    pub fn provide_assignment(&mut self, origin: Origin, assignment: &'a Assignment) -> &mut Self {
        self.register(Component {
            concept: Concept::IterationAssignment,
            origin,
            name: Cow::Borrowed(Concept::IterationAssignment.label()),
            data: ComponentData::Assignment(assignment),
        })
    }

    /// All registered components, in registration order.
    pub fn components(&self) -> &[Component<'a>] {
        &self.components
    }

    /// Step 2 of Fig. 1: the best component for `required`, runtime origin first.
    pub fn select(&self, required: &Concept) -> Option<&Component<'a>> {
        let mut matching = self
            .components
            .iter()
            .filter(|c| required.is_met_by(&c.concept));
        let first = matching.next()?;
        if first.origin == Origin::Runtime {
            return Some(first);
        }
        Some(
            matching
                .find(|c| c.origin == Origin::Runtime)
                .unwrap_or(first),
        )
    }

    /// Checks that every non-optional requirement of `policy` can be met.
    pub fn check(&self, policy: &str, requirements: &[Requirement]) -> Result<(), PolicyError> {
        for requirement in requirements.iter().filter(|r| !r.optional) {
            if self.select(&requirement.concept).is_none() {
                return Err(self.unmet(policy, requirement.concept));
            }
        }
        Ok(())
    }

    /// Fetches numbers for `required`; `None` when no component matches.
    pub fn values(&self, policy: &str, required: Concept) -> Result<Option<&[f64]>, PolicyError> {
        match self.select(&required).map(|c| (c, &c.data)) {
            None => Ok(None),
            Some((_, ComponentData::Values(v))) => Ok(Some(v)),
            Some((c, other)) => Err(self.wrong_kind(policy, c, "numbers", other)),
        }
    }

    /// Fetches flags for `required`; `None` when no component matches.
    pub fn flags(&self, policy: &str, required: Concept) -> Result<Option<&[bool]>, PolicyError> {
        match self.select(&required).map(|c| (c, &c.data)) {
            None => Ok(None),
            Some((_, ComponentData::Flags(v))) => Ok(Some(v)),
            Some((c, other)) => Err(self.wrong_kind(policy, c, "flags", other)),
        }
    }

    /// Fetches the current placement; `None` when no component matches.
    pub fn placement(&self, policy: &str) -> Result<Option<&[usize]>, PolicyError> {
        match self.select(&Concept::CurrentMapping).map(|c| (c, &c.data)) {
            None => Ok(None),
            Some((_, ComponentData::Placement(v))) => Ok(Some(v)),
            Some((c, other)) => Err(self.wrong_kind(policy, c, "a placement", other)),
        }
    }

    /// Fetches numbers the policy cannot run without.
    pub fn require_values(&self, policy: &str, required: Concept) -> Result<&[f64], PolicyError> {
        self.values(policy, required)?
            .ok_or_else(|| self.unmet(policy, required))
    }

    /// Fetches the iteration assignment when the policy cannot run without it.
    pub fn require_assignment(&self, policy: &str) -> Result<&'a Assignment, PolicyError> {
        match self
            .select(&Concept::IterationAssignment)
            .map(|c| (c, &c.data))
        {
            None => Err(self.unmet(policy, Concept::IterationAssignment)),
            Some((_, ComponentData::Assignment(a))) => Ok(a),
            Some((c, other)) => Err(self.wrong_kind(policy, c, "an iteration assignment", other)),
        }
    }

    /// Fetches the placement when the policy cannot run without it.
    pub fn require_placement(&self, policy: &str) -> Result<&[usize], PolicyError> {
        self.placement(policy)?
            .ok_or_else(|| self.unmet(policy, Concept::CurrentMapping))
    }

    fn unmet(&self, policy: &str, requirement: Concept) -> PolicyError {
        PolicyError::UnmetRequirement {
            policy: policy.to_string(),
            requirement,
            available: self
                .components
                .iter()
                .map(|c| c.concept.to_string())
                .collect(),
        }
    }

    fn wrong_kind(
        &self,
        policy: &str,
        component: &Component<'_>,
        expected: &'static str,
        found: &ComponentData<'_>,
    ) -> PolicyError {
        PolicyError::MalformedComponent {
            policy: policy.to_string(),
            component: component.name.to_string(),
            problem: format!("expected {expected}, found {}", found.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concept::{Model, Subject};

    fn loads(model: Model) -> Concept {
        Concept::Workload {
            subject: Subject::Tasks,
            model,
        }
    }

    #[test]
    fn runtime_component_wins_over_an_earlier_user_component() {
        let user = [1.0, 2.0];
        let runtime = [3.0, 4.0];
        let mut ctx = ContextHandler::new();
        ctx.provide_values(loads(Model::Static), Origin::User, &user[..])
            .provide_values(loads(Model::Dynamic), Origin::Runtime, &runtime[..]);
        let got = ctx.values("test", Concept::TASK_LOADS).unwrap().unwrap();
        assert_eq!(got, &runtime);
    }

    #[test]
    fn user_component_serves_when_the_runtime_has_none() {
        let user = [1.0, 2.0];
        let mut ctx = ContextHandler::new();
        ctx.provide_values(loads(Model::Static), Origin::User, &user[..]);
        assert_eq!(
            ctx.values("test", Concept::TASK_LOADS).unwrap().unwrap(),
            &user
        );
    }

    #[test]
    fn a_concrete_requirement_skips_components_of_another_model() {
        let statics = [1.0];
        let dynamics = [2.0];
        let mut ctx = ContextHandler::new();
        ctx.provide_values(loads(Model::Dynamic), Origin::Runtime, &dynamics[..])
            .provide_values(loads(Model::Static), Origin::User, &statics[..]);
        let got = ctx.values("test", loads(Model::Static)).unwrap().unwrap();
        assert_eq!(got, &statics);
    }

    #[test]
    fn unmet_requirement_is_named_in_the_error() {
        let mut ctx = ContextHandler::new();
        ctx.provide_values(loads(Model::Dynamic), Origin::Runtime, vec![1.0]);
        let err = ctx.require_placement("refine").unwrap_err();
        assert!(matches!(
            err,
            PolicyError::UnmetRequirement {
                requirement: Concept::CurrentMapping,
                ..
            }
        ));
        let message = err.to_string();
        assert!(message.contains("refine"), "{message}");
        assert!(message.contains("current mapping"), "{message}");
    }

    #[test]
    fn check_reports_the_first_missing_required_input_and_ignores_optional_ones() {
        let ctx = ContextHandler::new();
        let reqs = [
            Requirement::optional(Concept::PuSpeed),
            Requirement::required(Concept::TASK_LOADS),
        ];
        let err = ctx.check("greedy", &reqs).unwrap_err();
        assert!(err.to_string().contains("task workload"), "{err}");
    }

    #[test]
    fn a_component_of_the_wrong_shape_is_a_typed_error() {
        let mut ctx = ContextHandler::new();
        ctx.register(Component {
            concept: Concept::PuSpeed,
            origin: Origin::User,
            name: "speeds".into(),
            data: ComponentData::Flags(vec![true].into()),
        });
        let err = ctx.values("greedy", Concept::PuSpeed).unwrap_err();
        assert!(matches!(err, PolicyError::MalformedComponent { .. }));
    }
}
