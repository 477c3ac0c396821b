//! [`ObjectsBuilder`]: every choice of an [`Objects`] run, checked once,
//! and the first placement.

use crossbeam_utils::CachePadded;
use std::sync::Mutex;

use keel_policy::invoke::{Invocation, Trigger};
use keel_policy::mapping;
use keel_policy::{Concept, ContextHandler, Model, Origin, Subject};

use super::{
    remap, Entry, Object, Objects, ObjectsError, PuState, DEFAULT_INITIAL, DEFAULT_POLICY,
    DEFAULT_STEALING, ENV_LB,
};
use crate::pool::ThreadPool;
use crate::tasks::Tasks;

/// Builds [`Objects`], naming every choice.
#[derive(Clone, Debug, Default)]
pub struct ObjectsBuilder {
    policy: Option<String>,
    initial: Option<String>,
    invocation: Option<Invocation>,
    /// `period(0)` was asked for: refused at build.
    zero_period: bool,
    stealing: Option<String>,
    migratable: Option<Vec<bool>>,
    available: Option<Vec<bool>>,
    speeds: Option<Vec<f64>>,
    initial_loads: Option<Vec<f64>>,
    first_step: usize,
}

impl ObjectsBuilder {
    /// The mapping policy spec for remaps (wins over `KEEL_LB`).
    pub fn policy(mut self, spec: impl Into<String>) -> Self {
        self.policy = Some(spec.into());
        self
    }

    /// The mapping policy spec for the first placement (default `block`;
    /// it sees zero loads).
    pub fn initial(mut self, spec: impl Into<String>) -> Self {
        self.initial = Some(spec.into());
        self
    }

    /// Remap after every `steps` steps (≥ 1): `invocation(Periodic)`.
    /// Unset: [`Invocation::Adaptive`], remaps when they pay.
    pub fn period(mut self, steps: usize) -> Self {
        self.invocation = Invocation::every(steps);
        self.zero_period = steps == 0;
        self
    }

    /// When to remap (default [`Invocation::Adaptive`]: when the loss to
    /// imbalance since the last remap pays for another, see
    /// [`keel_policy::invoke`]; [`Invocation::Never`]: only on request).
    ///
    /// ```
    /// use keel::objects::{Object, Objects, StepContext};
    /// use keel_policy::invoke::Invocation;
    /// struct Idle;
    /// impl Object for Idle {
    ///     fn step(&mut self, _: &StepContext<'_>) {}
    /// }
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let mut run = Objects::builder()
    ///     .invocation(Invocation::Never)
    ///     .build(&pool, (0..4).map(|_| Idle).collect())
    ///     .unwrap();
    /// let report = run.run(5).unwrap();
    /// assert!(report.rebalances.is_empty());
    /// assert_eq!(run.invocation(), Invocation::Never);
    /// ```
    pub fn invocation(mut self, invocation: Invocation) -> Self {
        self.invocation = Some(invocation);
        self.zero_period = false;
        self
    }

    /// The exposure policy of potential tasks (`none` turns stealing off;
    /// default `history-idle`).
    pub fn stealing(mut self, spec: impl Into<String>) -> Self {
        self.stealing = Some(spec.into());
        self
    }

    /// Which objects may move (one flag per object; default all).
    pub fn migratable(mut self, flags: Vec<bool>) -> Self {
        self.migratable = Some(flags);
        self
    }

    /// Which PUs may run objects (one flag per PU; default all).
    pub fn available(mut self, flags: Vec<bool>) -> Self {
        self.available = Some(flags);
        self
    }

    /// The index of the first step (default 0), as [`StepContext::step`]
    /// and the reports count: a run that continues one begun elsewhere
    /// (objects moved here from another pool or process) keeps counting.
    ///
    /// [`StepContext::step`]: super::StepContext::step
    pub fn first_step(mut self, step: usize) -> Self {
        self.first_step = step;
        self
    }

    /// The loads the first placement sees, one per object (default: all
    /// zero, so the `initial` policy places by count): what objects that
    /// arrive with a measured history — moved here from another pool or
    /// process — bring, so that the first placement balances them. A NaN,
    /// infinite or negative load is the initial policy's typed error.
    ///
    /// ```
    /// use keel::objects::{Object, Objects, StepContext};
    /// struct Idle;
    /// impl Object for Idle {
    ///     fn step(&mut self, _: &StepContext<'_>) {}
    /// }
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let run = Objects::builder()
    ///     .initial("greedy")
    ///     .initial_loads(vec![8.0, 1.0, 1.0, 1.0, 1.0])
    ///     .build(&pool, (0..5).map(|_| Idle).collect())
    ///     .unwrap();
    /// // The heavy object alone on one PU, the four light ones on the other.
    /// let heavy = run.placement()[0];
    /// assert!(run.placement()[1..].iter().all(|&pu| pu != heavy));
    /// ```
    pub fn initial_loads(mut self, loads: Vec<f64>) -> Self {
        self.initial_loads = Some(loads);
        self
    }

    /// Each PU's relative speed (one per PU, finite and > 0; default: no
    /// speeds, every PU counts as 1). Keel measures times, not speeds: a PU
    /// known to be slower (a small core, a core shared with another job) is
    /// declared here. A remap then offers the speeds to the policy and
    /// turns each object's measured time into work, time × the speed of the
    /// PU it ran on, as Charm++'s load database normalises object times by
    /// PE speed; background stays time. Speed-aware policies (`lpt-eft`,
    /// and `greedy` in normalised time) read them.
    ///
    /// ```
    /// use keel::objects::{Object, Objects, StepContext};
    /// struct Busy;
    /// impl Object for Busy {
    ///     fn step(&mut self, _: &StepContext<'_>) {
    ///         std::hint::black_box((0..20_000u64).sum::<u64>());
    ///     }
    /// }
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let mut run = Objects::builder()
    ///     .policy("lpt-eft")
    ///     .speeds(vec![1.0, 0.5])
    ///     .build(&pool, (0..8).map(|_| Busy).collect())
    ///     .unwrap();
    /// run.run(2).unwrap();
    /// let rebalance = run.rebalance().unwrap();
    /// assert_eq!(rebalance.policy, "lpt-eft");
    /// assert_eq!(run.speeds(), Some(&[1.0, 0.5][..]));
    /// ```
    pub fn speeds(mut self, speeds: Vec<f64>) -> Self {
        self.speeds = Some(speeds);
        self
    }

    /// Places `objects` on the PUs of `pool` (one PU per participant).
    pub fn build<T: Object>(
        mut self,
        pool: &ThreadPool,
        objects: Vec<T>,
    ) -> Result<Objects<'_, T>, ObjectsError> {
        let pus = pool.threads();
        let n = objects.len();
        if self.zero_period {
            return Err(ObjectsError::ZeroPeriod);
        }
        let check = |what, v: &Option<Vec<bool>>, expected, unit| match v {
            Some(v) if v.len() != expected => Err(ObjectsError::LengthMismatch {
                what,
                expected,
                found: v.len(),
                unit,
            }),
            _ => Ok(()),
        };
        check("migratable", &self.migratable, n, "object")?;
        if let Some(loads) = &self.initial_loads {
            if loads.len() != n {
                return Err(ObjectsError::LengthMismatch {
                    what: "initial loads",
                    expected: n,
                    found: loads.len(),
                    unit: "object",
                });
            }
        }
        check("available", &self.available, pus, "PU")?;
        if let Some(speeds) = &self.speeds {
            if speeds.len() != pus {
                return Err(ObjectsError::LengthMismatch {
                    what: "speeds",
                    expected: pus,
                    found: speeds.len(),
                    unit: "PU",
                });
            }
            if let Some((pu, &speed)) = speeds
                .iter()
                .enumerate()
                .find(|(_, s)| !(s.is_finite() && **s > 0.0))
            {
                return Err(ObjectsError::InvalidSpeed { pu, speed });
            }
        }
        let migratable = self.migratable.unwrap_or_else(|| vec![true; n]);
        let available = self.available.unwrap_or_else(|| vec![true; pus]);
        if !available.iter().any(|&a| a) {
            return Err(ObjectsError::NoAvailablePu { pus });
        }
        let registry = mapping::registry();
        let (origin, spec) = match self.policy {
            Some(spec) => ("code", spec),
            None => match std::env::var(ENV_LB) {
                Ok(spec) if !spec.trim().is_empty() => (ENV_LB, spec),
                _ => ("default", DEFAULT_POLICY.to_string()),
            },
        };
        let policy = registry
            .build(spec.trim())
            .map_err(|source| ObjectsError::Policy { origin, source })?;
        let initial_spec = self.initial.as_deref().unwrap_or(DEFAULT_INITIAL);
        let initial = registry
            .build(initial_spec)
            .map_err(|source| ObjectsError::Policy {
                origin: "initial",
                source,
            })?;
        let tasks = Tasks::new(pus, self.stealing.as_deref().unwrap_or(DEFAULT_STEALING))?;

        // The first placement: the loads given (else zeros), availability,
        // no migration yet.
        let zeros_t = self.initial_loads.take().unwrap_or_else(|| vec![0.0; n]);
        let zeros_p = vec![0.0; pus];
        let mut ctx = ContextHandler::new();
        let dynamic = |subject| Concept::Workload {
            subject,
            model: Model::Dynamic,
        };
        ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &zeros_t[..])
            .provide_values(dynamic(Subject::Pus), Origin::Runtime, &zeros_p[..])
            .provide_flags(Concept::PuAvailability, Origin::Runtime, &available[..]);
        let first = initial.map(&ctx).map_err(|source| ObjectsError::Decision {
            spec: initial.spec().to_string(),
            source,
        })?;
        drop(ctx);
        remap::check_shape(&initial.spec().to_string(), &first, n, pus)?;
        for (object, &pu) in first.as_slice().iter().enumerate() {
            if !available[pu] {
                return Err(ObjectsError::UsedUnavailablePu {
                    spec: initial.spec().to_string(),
                    object,
                    pu,
                });
            }
        }
        let placement = first.into_vec();
        let mut states: Vec<PuState<T>> = (0..pus)
            .map(|_| PuState {
                entries: Vec::new(),
                objects_s: 0.0,
                finish_s: 0.0,
            })
            .collect();
        for (id, object) in objects.into_iter().enumerate() {
            states[placement[id]].entries.push(Entry {
                id,
                object,
                load: 0.0,
                last: 0.0,
            });
        }
        Ok(Objects {
            pool,
            pus: states
                .into_iter()
                .map(|s| CachePadded::new(Mutex::new(s)))
                .collect(),
            placement,
            migratable,
            available,
            speeds: self.speeds,
            policy_spec: policy.spec().to_string(),
            policy,
            trigger: Trigger::new(
                self.invocation.unwrap_or_default(),
                super::initial_cost_estimate(n),
            ),
            history: keel_policy::invoke::LoadHistory::new(),
            stealing_spec: tasks.expose().spec(),
            tasks,
            step: self.first_step,
            pu_background: vec![0.0; pus],
            requested: false,
        })
    }
}
