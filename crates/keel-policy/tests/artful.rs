//! The ARTful model end to end (paper §3.2, Fig. 1–2): a user registers a
//! policy at run time, builds it from a spec string, and the policy reads
//! its inputs only through the context handler — runtime components first,
//! user components where the runtime has none.

use keel_policy::mapping::{self, MappingInput, MappingPolicy};
use keel_policy::{
    Concept, ContextHandler, Mapping, Model, Origin, PolicyError, Requirement, Spec, Subject,
};

/// A user policy: every task to the PU with the highest relative speed
/// among the available ones (a deliberately simple rule, so the test checks
/// the plumbing rather than the algorithm).
#[derive(Debug)]
struct Fastest {
    min_speed: f64,
}

const FASTEST_NEEDS: &[Requirement] = &[
    Requirement::required(Concept::TASK_LOADS),
    Requirement::required(Concept::PU_LOADS),
    Requirement::required(Concept::PuSpeed),
];

impl MappingPolicy for Fastest {
    fn spec(&self) -> Spec {
        format!("fastest:min-speed={}", self.min_speed)
            .parse()
            .unwrap()
    }

    fn requirements(&self) -> &[Requirement] {
        FASTEST_NEEDS
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("fastest", ctx, self.requirements())?;
        let best = (0..input.npus())
            .filter(|&p| input.is_available(p) && input.speed(p) >= self.min_speed)
            .max_by(|&a, &b| input.speed(a).total_cmp(&input.speed(b)).then(b.cmp(&a)))
            .unwrap_or(0);
        Mapping::new(vec![best; input.ntasks()], input.npus())
    }
}

fn registry_with_user_policy() -> keel_policy::Registry<dyn MappingPolicy> {
    let mut registry = mapping::registry();
    registry
        .register("fastest", "every task to the fastest PU", |spec, _| {
            spec.check_keys(&["min-speed"])?;
            let min_speed = spec.number_at_least("min-speed", 0.0)?.unwrap_or(0.0);
            Ok(Box::new(Fastest { min_speed }))
        })
        .unwrap();
    registry
}

#[test]
fn a_user_policy_registered_at_run_time_is_built_from_its_spec() {
    let registry = registry_with_user_policy();
    assert!(registry.names().contains(&"fastest".to_string()));
    let policy = registry.build("fastest:min-speed=0.5").unwrap();
    assert_eq!(policy.spec().to_string(), "fastest:min-speed=0.5");

    let loads = [1.0, 2.0, 3.0];
    let bg = [0.0; 3];
    let speeds = [1.0, 3.0, 2.0];
    let mut ctx = mapping::runtime_context(&loads, &bg);
    ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..]);
    assert_eq!(policy.map(&ctx).unwrap().as_slice(), &[1, 1, 1]);
}

#[test]
fn the_handler_names_what_a_user_policy_misses() {
    let registry = registry_with_user_policy();
    let policy = registry.build("fastest").unwrap();
    let loads = [1.0];
    let bg = [0.0; 2];
    let err = policy
        .map(&mapping::runtime_context(&loads, &bg))
        .unwrap_err();
    assert!(
        matches!(
            err,
            PolicyError::UnmetRequirement {
                requirement: Concept::PuSpeed,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("PU relative speed"), "{err}");
}

#[test]
fn runtime_components_win_and_user_components_fill_gaps() {
    // The runtime measured loads (dynamic); the user also supplied static
    // hints, and speeds the runtime does not know.
    let measured = [4.0, 1.0, 1.0, 1.0];
    let hints = [1.0, 1.0, 1.0, 4.0];
    let bg = [0.0, 0.0];
    let user_speeds = [1.0, 1.0];
    let mut ctx = ContextHandler::new();
    let tasks = |model| Concept::Workload {
        subject: Subject::Tasks,
        model,
    };
    ctx.provide_values(tasks(Model::Static), Origin::User, &hints[..])
        .provide_values(tasks(Model::Dynamic), Origin::Runtime, &measured[..])
        .provide_values(
            Concept::Workload {
                subject: Subject::Pus,
                model: Model::Dynamic,
            },
            Origin::Runtime,
            &bg[..],
        )
        .provide_values(Concept::PuSpeed, Origin::User, &user_speeds[..]);

    let greedy = mapping::registry().build("greedy").unwrap();
    let map = greedy.map(&ctx).unwrap();
    // Greedy on the measured loads puts the heavy task 0 alone.
    assert_eq!(map.as_slice(), &[0, 1, 1, 1]);

    // A policy that asks for static hints specifically gets the user's.
    let static_loads = ctx.values("test", tasks(Model::Static)).unwrap().unwrap();
    assert_eq!(static_loads, &hints);
}

#[test]
fn the_same_policy_object_runs_in_two_contexts() {
    // One policy value, two handlers built by different "runtimes".
    let policy = mapping::registry().build("binlpt:chunks=4").unwrap();
    let loads = [3.0, 1.0, 1.0, 3.0, 2.0, 2.0];
    let four = [0.0; 4];
    let two = [0.0; 2];
    let a = policy
        .map(&mapping::runtime_context(&loads, &four))
        .unwrap();
    let b = policy.map(&mapping::runtime_context(&loads, &two)).unwrap();
    assert_eq!(a.npus(), 4);
    assert_eq!(b.npus(), 2);
    assert_eq!(a.ntasks(), 6);
    assert_eq!(b.ntasks(), 6);
}
