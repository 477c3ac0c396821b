//! The C API's mapping functions called from Rust: decisions equal the
//! Rust API's bit for bit, and hostile inputs are error codes.

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use keel::*;
use keel_policy::{Model, NO_PU};
use keel_workloads::MappingProblem;

fn message() -> String {
    // SAFETY: never NULL, NUL-terminated.
    unsafe { CStr::from_ptr(keel_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn mapper(spec: &CStr) -> *mut keel_mapper {
    let mut status = keel_status::KEEL_ERR_PANIC;
    // SAFETY: a C string and a status to write.
    let m = unsafe { keel_mapper_new(spec.as_ptr(), &mut status) };
    assert_eq!(status, keel_status::KEEL_OK, "{spec:?}: {}", message());
    m
}

/// Destinations, metrics, imports and exports of one result.
type Mapped = (Vec<i64>, keel_map_metrics, Vec<keel_move>, Vec<keel_move>);

/// Task loads, current PUs, migratable flags, PU speeds and backgrounds.
type Arrays = (Vec<f64>, Vec<i64>, Vec<u8>, Vec<f64>, Vec<f64>);

/// What `keel_map` returns: status, destinations, metrics.
fn map(m: *const keel_mapper, input: &keel_map_input) -> Result<Mapped, keel_status> {
    let mut r = null_mut();
    // SAFETY: the input's arrays live in the caller.
    let status = unsafe { keel_map(m, input, &mut r) };
    if status != keel_status::KEEL_OK {
        assert!(r.is_null());
        return Err(status);
    }
    let (mut n, mut ni, mut ne) = (0, 0, 0);
    let mut metrics = keel_map_metrics {
        lambda: 0.0,
        lib_percent: 0.0,
        makespan: 0.0,
        mean: 0.0,
        lower_bound: 0.0,
        migrations: 0,
        splits: 0,
    };
    // SAFETY: a live result; lengths from the library.
    unsafe {
        let d = keel_result_destinations(r, &mut n);
        let dest = std::slice::from_raw_parts(d, n).to_vec();
        let imports = std::slice::from_raw_parts(keel_result_imports(r, &mut ni), ni).to_vec();
        let exports = std::slice::from_raw_parts(keel_result_exports(r, &mut ne), ne).to_vec();
        assert_eq!(keel_result_metrics(r, &mut metrics), keel_status::KEEL_OK);
        keel_result_free(r);
        Ok((dest, metrics, imports, exports))
    }
}

/// A pseudo-random problem with every optional input.
fn problem(seed: u64, n: usize, p: usize) -> Arrays {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let loads = (0..n)
        .map(|_| (next() % 1000) as f64 / 10.0 + 0.5)
        .collect();
    let current = (0..n).map(|_| (next() % p as u64) as i64).collect();
    let migratable = (0..n).map(|_| u8::from(next() % 10 != 0)).collect();
    let speeds = (0..p).map(|i| 1.0 + (i % 3) as f64 * 0.5).collect();
    let background = (0..p).map(|_| (next() % 50) as f64).collect();
    (loads, current, migratable, speeds, background)
}

#[test]
fn decisions_equal_the_rust_apis_bit_for_bit() {
    let specs = [
        c"greedy",
        c"lpt-eft",
        c"refine",
        c"greedy-refine",
        c"binlpt:chunks=16",
        c"block",
        c"round-robin",
        c"hier:nodes=4,outer=(greedy),inner=refine",
    ];
    let registry = keel_policy::mapping::registry();
    for seed in 0..4 {
        let (loads, current, migratable, speeds, background) = problem(seed, 257, 16);
        let input = keel_map_input {
            task_loads: loads.as_ptr(),
            num_tasks: loads.len(),
            num_pus: 16,
            current_pu: current.as_ptr(),
            num_current_pu: current.len(),
            migratable: migratable.as_ptr(),
            num_migratable: migratable.len(),
            pu_speeds: speeds.as_ptr(),
            num_pu_speeds: 16,
            pu_background: background.as_ptr(),
            num_pu_background: 16,
            ..Default::default()
        };
        let mut rust = MappingProblem::new(loads.clone(), 16, Model::Dynamic);
        rust.pu_loads = background.clone();
        rust.pu_speeds = Some(speeds.clone());
        rust.migratable = Some(migratable.iter().map(|&m| m != 0).collect());
        rust.current = Some(current.iter().map(|&c| c as usize).collect());
        for spec in specs {
            let m = mapper(spec);
            let (dest, metrics, imports, exports) =
                map(m, &input).unwrap_or_else(|s| panic!("{spec:?}: {s:?} {}", message()));
            // SAFETY: made above.
            unsafe { keel_mapper_free(m) };
            let policy = registry.build(spec.to_str().unwrap()).unwrap();
            let expected = policy.map(&rust.context()).unwrap();
            let want: Vec<i64> = expected.as_slice().iter().map(|&p| p as i64).collect();
            assert_eq!(dest, want, "{spec:?} seed {seed}");
            let m = keel_policy::metrics::evaluate(&rust.input().unwrap(), &expected);
            assert_eq!(metrics.makespan.to_bits(), m.makespan.to_bits());
            assert_eq!(metrics.lambda.to_bits(), m.lambda.to_bits());
            assert_eq!(metrics.lib_percent.to_bits(), m.lib_percent.to_bits());
            assert_eq!(metrics.migrations, m.migrations.unwrap() as i64);
            // The lists: each moved task exactly once, with its true ends.
            assert_eq!(imports.len() as i64, metrics.migrations);
            assert_eq!(exports.len(), imports.len());
            let mut seen = vec![0u8; loads.len()];
            for mv in &imports {
                seen[mv.task as usize] += 1;
                assert_eq!(
                    (mv.from_pu, mv.to_pu),
                    (current[mv.task as usize], dest[mv.task as usize])
                );
            }
            assert!(seen
                .iter()
                .enumerate()
                .all(|(t, &s)| s == u8::from(current[t] != dest[t])));
            assert!(imports
                .windows(2)
                .all(|w| (w[0].to_pu, w[0].task) < (w[1].to_pu, w[1].task)));
            assert!(exports
                .windows(2)
                .all(|w| (w[0].from_pu, w[0].task) < (w[1].from_pu, w[1].task)));
        }
    }
}

#[test]
fn hostile_mapping_inputs_are_error_codes() {
    use keel_status::*;
    let m = mapper(c"refine");
    let loads = [1.0, 2.0, 3.0];
    let current = [0i64, 1, 0];
    let base = keel_map_input {
        task_loads: loads.as_ptr(),
        num_tasks: 3,
        num_pus: 2,
        current_pu: current.as_ptr(),
        num_current_pu: 3,
        ..Default::default()
    };
    assert!(map(m, &base).is_ok());
    let cases: Vec<(keel_map_input, keel_status)> = vec![
        (
            keel_map_input {
                task_loads: null(),
                ..base
            },
            KEEL_ERR_NULL_POINTER,
        ),
        (
            keel_map_input {
                num_current_pu: 2,
                ..base
            },
            KEEL_ERR_LENGTH_MISMATCH,
        ),
        (
            keel_map_input {
                current_pu: null(),
                num_current_pu: 0,
                ..base
            },
            KEEL_ERR_UNMET_REQUIREMENT,
        ),
        (
            keel_map_input {
                pu_speeds: loads.as_ptr(),
                num_pu_speeds: 3,
                ..base
            },
            KEEL_ERR_LENGTH_MISMATCH,
        ),
        (
            keel_map_input {
                pu_background: null(),
                num_pu_background: 2,
                ..base
            },
            KEEL_ERR_NULL_POINTER,
        ),
        (
            keel_map_input { num_pus: 0, ..base },
            KEEL_ERR_INVALID_INPUT,
        ),
        (
            keel_map_input {
                num_pus: KEEL_MAX_PUS + 1,
                ..base
            },
            KEEL_ERR_INVALID_ARGUMENT,
        ),
        (
            keel_map_input {
                num_pus: usize::MAX,
                ..base
            },
            KEEL_ERR_INVALID_ARGUMENT,
        ),
        (
            keel_map_input {
                num_tasks: usize::MAX,
                num_current_pu: usize::MAX,
                ..base
            },
            KEEL_ERR_INVALID_ARGUMENT,
        ),
    ];
    for (i, (input, want)) in cases.iter().enumerate() {
        assert_eq!(map(m, input).unwrap_err(), *want, "case {i}: {}", message());
    }
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        let loads = [1.0, bad, 3.0];
        let input = keel_map_input {
            task_loads: loads.as_ptr(),
            ..base
        };
        assert_eq!(map(m, &input).unwrap_err(), KEEL_ERR_INVALID_INPUT, "{bad}");
        let speeds = [1.0, bad];
        let input = keel_map_input {
            pu_speeds: speeds.as_ptr(),
            num_pu_speeds: 2,
            ..base
        };
        assert_eq!(
            map(m, &input).unwrap_err(),
            KEEL_ERR_INVALID_INPUT,
            "speed {bad}"
        );
    }
    let out_of_range = [0i64, 2, 0];
    let input = keel_map_input {
        current_pu: out_of_range.as_ptr(),
        ..base
    };
    assert_eq!(map(m, &input).unwrap_err(), KEEL_ERR_INVALID_INPUT);
    assert!(message().contains('2'), "{}", message());
    // A misaligned array pointer.
    let bytes = [0u8; 64];
    let input = keel_map_input {
        task_loads: bytes[1..].as_ptr().cast(),
        ..base
    };
    assert_eq!(map(m, &input).unwrap_err(), KEEL_ERR_INVALID_ARGUMENT);
    // NULL handles and outputs.
    let mut r = null_mut();
    // SAFETY: NULLs are what is tested.
    unsafe {
        assert_eq!(keel_map(null(), &base, &mut r), KEEL_ERR_NULL_POINTER);
        assert_eq!(keel_map(m, null(), &mut r), KEEL_ERR_NULL_POINTER);
        assert_eq!(keel_map(m, &base, null_mut()), KEEL_ERR_NULL_POINTER);
        assert_eq!(
            keel_result_metrics(null(), null_mut()),
            KEEL_ERR_NULL_POINTER
        );
        let mut n = 7;
        assert!(keel_result_destinations(null(), &mut n).is_null());
        assert_eq!((n, keel_result_num_tasks(null())), (0, 0));
        keel_result_free(null_mut());
        keel_mapper_free(m);
        keel_mapper_free(null_mut());
        assert!(keel_mapper_spec(null()).is_null());
    }
    // Unplaced tasks (negative current PU) are imported from -1, never exported.
    let m = mapper(c"greedy");
    let partly = [-1i64, 1, -5];
    let input = keel_map_input {
        current_pu: partly.as_ptr(),
        ..base
    };
    let (dest, metrics, imports, exports) = map(m, &input).unwrap();
    assert!(imports
        .iter()
        .filter(|mv| mv.task != 1)
        .all(|mv| mv.from_pu == -1));
    assert!(exports.iter().all(|mv| mv.from_pu == 1 && mv.task == 1));
    assert_eq!(imports.len(), 2 + usize::from(dest[1] != 1));
    assert!(metrics.migrations >= 0);
    let _ = NO_PU;
    // SAFETY: made above.
    unsafe { keel_mapper_free(m) };
}

#[test]
fn hostile_specs_and_parameters_are_error_codes() {
    use keel_status::*;
    let mut status = KEEL_OK;
    let not_utf8 = b"gr\xffedy\0";
    let deep = format!("{}greedy{}\0", "hier:outer=(".repeat(40), ")".repeat(40));
    // SAFETY: C strings, a status to write.
    unsafe {
        assert!(keel_mapper_new(null(), &mut status).is_null());
        assert_eq!(status, KEEL_ERR_NULL_POINTER);
        assert!(keel_mapper_new(not_utf8.as_ptr().cast(), &mut status).is_null());
        assert_eq!(status, KEEL_ERR_INVALID_ARGUMENT);
        assert!(keel_mapper_new(c"greedy:nope=1".as_ptr(), &mut status).is_null());
        assert_eq!(status, KEEL_ERR_SPEC);
        assert!(keel_mapper_new(deep.as_ptr().cast(), null_mut()).is_null());
        assert!(
            message().contains("depth") || message().contains("nest"),
            "{}",
            message()
        );
    }
    let m = mapper(c"hier:nodes=2,outer=(greedy),inner=refine");
    // SAFETY: NUL-terminated byte strings and a live mapper.
    let set = |k: &[u8], v: &[u8]| unsafe {
        keel_mapper_set_param(m, k.as_ptr().cast(), v.as_ptr().cast())
    };
    assert_eq!(set(b"nodes\0", b"4\0"), KEEL_OK);
    assert_eq!(set(b"inner\0", b"(greedy)\0"), KEEL_OK);
    assert_eq!(set(b"nodes\0", b"zero\0"), KEEL_ERR_SPEC);
    assert_eq!(set(b"bogus\0", b"1\0"), KEEL_ERR_SPEC);
    assert_eq!(
        set(b"nodes\0", b"4,inner=block\0"),
        KEEL_ERR_INVALID_ARGUMENT
    );
    assert_eq!(set(b"nodes\0", b"4)\0"), KEEL_ERR_INVALID_ARGUMENT);
    assert_eq!(set(b"\0", b"4\0"), KEEL_ERR_INVALID_ARGUMENT);
    assert_eq!(set(b"no\xffdes\0", b"4\0"), KEEL_ERR_INVALID_ARGUMENT);
    // SAFETY: NULLs are what is tested; then the mapper is still whole.
    unsafe {
        assert_eq!(
            keel_mapper_set_param(m, null(), c"1".as_ptr()),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_mapper_set_param(null_mut(), c"nodes".as_ptr(), c"1".as_ptr()),
            KEEL_ERR_NULL_POINTER
        );
        let spec = CStr::from_ptr(keel_mapper_spec(m)).to_str().unwrap();
        assert!(
            spec.starts_with("hier:")
                && spec.contains("nodes=4")
                && spec.contains("inner=(greedy)"),
            "{spec}"
        );
        keel_mapper_free(m);
    }
}

#[test]
fn the_last_error_message_is_per_thread() {
    // SAFETY: a C string; NULL status.
    let m = unsafe { keel_mapper_new(c"no-such-policy".as_ptr(), null_mut()) };
    assert!(m.is_null());
    let here = message();
    assert!(here.contains("no-such-policy"), "{here}");
    let there = std::thread::spawn(|| {
        let before = message();
        // SAFETY: NULL is what is tested.
        let s = unsafe { keel_mapper_new(null(), null_mut()) };
        assert!(s.is_null());
        (before, message())
    })
    .join()
    .unwrap();
    assert_eq!(there.0, "", "a fresh thread has no message");
    assert!(there.1.contains("NULL"), "{}", there.1);
    assert_eq!(message(), here, "another thread's failure left this one's");
    // A call that succeeds leaves the message as it was.
    let ok = mapper(c"greedy");
    assert_eq!(message(), here);
    // SAFETY: made above.
    unsafe { keel_mapper_free(ok) };
}
