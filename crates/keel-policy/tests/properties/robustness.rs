//! Robustness: hostile numbers, lengths, flags, placements, shapes and specs.

use super::*;

// ---------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------

/// Any f64, with the awkward ones over-represented.
fn wild_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-1.0),
        Just(-0.0),
        Just(0.0),
        Just(f64::MAX),
        Just(1e308),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        0.0f64..10.0,
    ]
}

/// Finite, non-negative but extreme: sums and quotients overflow to infinity
/// or underflow to zero.
fn extreme_load() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(1e308),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        0.0f64..10.0,
        0.0f64..f64::MAX,
    ]
}

fn extreme_speed() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(5e-324),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        Just(1.0),
        0.001f64..1000.0,
    ]
}

fn placement_entry() -> impl Strategy<Value = usize> {
    prop_oneof![Just(NO_PU), 0usize..10, any::<usize>()]
}

/// A length that usually matches `n` and sometimes does not.
fn length_near(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(n), 1 => 0usize..12]
}

/// Components as a careless or hostile context might register them.
#[derive(Clone, Debug)]
struct Wild {
    loads: Option<Vec<f64>>,
    pu_loads: Option<Vec<f64>>,
    speeds: Option<Vec<f64>>,
    available: Option<Vec<bool>>,
    migratable: Option<Vec<bool>>,
    current: Option<Vec<usize>>,
    /// Which wrong-shaped component to register first (0: none).
    bogus: u8,
}

impl Wild {
    fn context(&self) -> ContextHandler<'_> {
        let mut ctx = ContextHandler::new();
        let wrong = |concept, data| Component {
            concept,
            origin: Origin::Runtime,
            name: Cow::Borrowed("bogus"),
            data,
        };
        match self.bogus {
            1 => {
                ctx.register(wrong(
                    Concept::Workload {
                        subject: Subject::Tasks,
                        model: Model::Static,
                    },
                    ComponentData::Flags(vec![true; 3].into()),
                ));
            }
            2 => {
                ctx.register(wrong(
                    Concept::PuSpeed,
                    ComponentData::Placement(vec![0; 2].into()),
                ));
            }
            3 => {
                ctx.register(wrong(
                    Concept::CurrentMapping,
                    ComponentData::Values(vec![0.0; 2].into()),
                ));
            }
            4 => {
                ctx.register(wrong(
                    Concept::TaskMigratable,
                    ComponentData::Values(vec![1.0].into()),
                ));
            }
            5 => {
                // A PU workload described as `Any` meets an `Any` requirement
                // (ARTful Listing 2), so it is a real input: give it data of
                // the wrong kind, which must be a typed error.
                ctx.register(wrong(
                    Concept::Workload {
                        subject: Subject::Pus,
                        model: Model::Any,
                    },
                    ComponentData::Flags(vec![true].into()),
                ));
            }
            _ => {}
        }
        let dynamic = |subject| Concept::Workload {
            subject,
            model: Model::Dynamic,
        };
        if let Some(v) = &self.loads {
            ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &v[..]);
        }
        if let Some(v) = &self.pu_loads {
            ctx.provide_values(dynamic(Subject::Pus), Origin::User, &v[..]);
        }
        if let Some(v) = &self.speeds {
            ctx.provide_values(Concept::PuSpeed, Origin::User, &v[..]);
        }
        if let Some(v) = &self.available {
            ctx.provide_flags(Concept::PuAvailability, Origin::Runtime, &v[..]);
        }
        if let Some(v) = &self.migratable {
            ctx.provide_flags(Concept::TaskMigratable, Origin::Runtime, &v[..]);
        }
        if let Some(v) = &self.current {
            ctx.provide_placement(Origin::Runtime, &v[..]);
        }
        ctx
    }
}

fn wild() -> impl Strategy<Value = Wild> {
    (0usize..40, 0usize..7)
        .prop_flat_map(|(n, p)| {
            (
                option::weighted(0.95, length_near(n).prop_flat_map(|l| vec(wild_f64(), l))),
                option::weighted(0.95, length_near(p).prop_flat_map(|l| vec(wild_f64(), l))),
                option::of(length_near(p).prop_flat_map(|l| vec(wild_f64(), l))),
                option::of(length_near(p).prop_flat_map(|l| vec(any::<bool>(), l))),
                option::of(length_near(n).prop_flat_map(|l| vec(any::<bool>(), l))),
                option::of(length_near(n).prop_flat_map(|l| vec(placement_entry(), l))),
                prop_oneof![3 => Just(0u8), 1 => 1u8..=5],
            )
        })
        .prop_map(
            |(loads, pu_loads, speeds, available, migratable, current, bogus)| Wild {
                loads,
                pu_loads,
                speeds,
                available,
                migratable,
                current,
                bogus,
            },
        )
}

/// Consistent lengths, valid flags and placements, extreme finite numbers.
fn extreme() -> impl Strategy<Value = Wild> {
    (0usize..40, 1usize..7)
        .prop_flat_map(|(n, p)| {
            (
                vec(extreme_load(), n),
                prop_oneof![Just(vec![0.0; p]), vec(extreme_load(), p)],
                option::of(vec(extreme_speed(), p)),
                vec(0usize..p, n),
            )
        })
        .prop_map(|(loads, pu_loads, speeds, current)| Wild {
            loads: Some(loads),
            pu_loads: Some(pu_loads),
            speeds,
            available: None,
            migratable: None,
            current: Some(current),
            bogus: 0,
        })
}

/// Ok with a well-formed mapping, or a typed error that says something.
fn check_outcome(
    spec: &str,
    wild: &Wild,
    result: Result<Mapping, PolicyError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(map) => {
            let npus = wild.pu_loads.as_ref().map_or(0, Vec::len);
            let ntasks = wild.loads.as_ref().map_or(0, Vec::len);
            prop_assert_eq!(map.ntasks(), ntasks, "{}", spec);
            prop_assert!(
                map.as_slice().iter().all(|&p| p < npus),
                "{spec}: {map:?} on {npus} PUs"
            );
        }
        Err(e) => prop_assert!(!e.to_string().is_empty(), "{spec}: empty message for {e:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]

    /// Property 4a: arbitrary components through every policy: no panic.
    #[test]
    fn arbitrary_inputs_give_a_mapping_or_a_typed_error(wild in wild()) {
        let registry = registry();
        let ctx = wild.context();
        for &(spec, _) in SPECS {
            check_outcome(spec, &wild, build(&registry, spec).map(&ctx))?;
        }
    }

    /// Property 4b: valid but extreme numbers (overflowing sums, denormal and
    /// huge speeds) through every policy: no panic, every mapping complete.
    #[test]
    fn extreme_finite_inputs_give_a_mapping_or_a_typed_error(wild in extreme()) {
        let registry = registry();
        let ctx = wild.context();
        for &(spec, _) in SPECS {
            check_outcome(spec, &wild, build(&registry, spec).map(&ctx))?;
        }
    }
}

/// Pieces that make spec strings almost right more often than random text.
const SPEC_PIECES: &[&str] = &[
    "greedy",
    "binlpt",
    "refine",
    "greedy-refine",
    "hier",
    "block",
    "round-robin",
    "Greedy",
    "static",
    ":",
    "=",
    ",",
    "(",
    ")",
    " ",
    "\t",
    "chunks",
    "cut",
    "faithful",
    "improved",
    "tolerance",
    "nodes",
    "outer",
    "inner",
    "0",
    "1",
    "2",
    "3",
    "-1",
    "1.05",
    "0.5",
    "nan",
    "inf",
    "1e400",
    "99999999999999999999999",
    "é",
    "🦀",
    "_",
    ".",
];

fn garbage_spec() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        vec(prop::sample::select(SPEC_PIECES), 0..14).prop_map(|p| p.concat()),
    ]
}

proptest! {
    #![proptest_config(config(512))]

    /// Property 4c: garbage specs give a typed error or a registered policy
    /// that then maps without panicking.
    #[test]
    fn garbage_specs_never_panic(text in garbage_spec()) {
        let registry = registry();
        match registry.build(&text) {
            Err(e) => prop_assert!(!e.to_string().is_empty()),
            Ok(policy) => {
                let name = Spec::parse(&text).unwrap().name;
                prop_assert!(registry.names().contains(&name), "{text} built unregistered {name}");
                let loads = [3.0, 1.0, 2.0, 0.0, 5.0];
                let pu_loads = [0.0; 3];
                let current = [0, 1, 2, NO_PU, 0];
                let mut ctx = runtime_context(&loads, &pu_loads);
                ctx.provide_placement(Origin::Runtime, &current[..]);
                if let Err(e) = policy.map(&ctx) {
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }

    /// Property 4d: a well-formed name nobody registered is `UnknownPolicy`
    /// and the message lists every valid name.
    #[test]
    fn unknown_names_are_rejected_with_the_valid_ones(name in "[a-z][a-z0-9-]{0,12}") {
        let registry = registry();
        prop_assume!(!registry.names().contains(&name));
        let err = registry.build(&name).unwrap_err();
        let unknown = matches!(&err, PolicyError::UnknownPolicy { name: n, .. } if *n == name);
        prop_assert!(unknown, "{:?}", err);
        let message = err.to_string();
        for valid in registry.names() {
            prop_assert!(message.contains(&valid), "{message}");
        }
    }
}

/// Regression: the parser once advanced one *byte* per whitespace *char*, so
/// multi-byte whitespace (U+00A0, U+3000, ...) split a UTF-8 sequence and
/// panicked. Whatever the verdict (skipped or rejected), no panic.
#[test]
fn non_ascii_whitespace_in_a_spec_is_an_error_not_a_panic() {
    let registry = registry();
    for text in [
        "\u{a0}greedy",
        "greedy:\u{3000}",
        "refine:tolerance=\u{2003}1.1",
    ] {
        // Whatever the verdict (whitespace skipped or rejected), no panic.
        let _ = Spec::parse(text);
        let _ = registry.build(text);
    }
}
