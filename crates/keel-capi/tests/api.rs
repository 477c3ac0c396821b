//! The C API called from Rust: hostile inputs are error codes, decisions
//! equal the Rust API's bit for bit, loops run every iteration exactly
//! once, and a failing body or a panic leaves the pool usable.

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

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

/// Per-iteration counters and the participants seen, for exactly-once.
struct Counts {
    hits: Vec<AtomicU32>,
    begin: i64,
    threads: usize,
    bad_thread: AtomicUsize,
    owner: Vec<AtomicUsize>,
}

unsafe extern "C-unwind" fn count(begin: i64, end: i64, thread: usize, ctx: *mut c_void) -> i32 {
    // SAFETY: the tests pass a `Counts`.
    let c = unsafe { &*(ctx as *const Counts) };
    if thread >= c.threads {
        c.bad_thread.fetch_add(1, Ordering::Relaxed);
        return 0;
    }
    // One OS thread per participant index within an instance.
    let me = thread_id();
    if let Some(owner) = c.owner.get(thread) {
        let prev = owner.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed);
        if prev.is_err_and(|other| other != me) {
            c.bad_thread.fetch_add(1, Ordering::Relaxed);
        }
    }
    for i in begin..end {
        c.hits[(i - c.begin) as usize].fetch_add(1, Ordering::Relaxed);
    }
    0
}

fn thread_id() -> usize {
    thread_local!(static ID: u8 = const { 0 });
    ID.with(|id| id as *const u8 as usize)
}

fn pool(threads: usize) -> *mut keel_pool {
    let mut status = keel_status::KEEL_ERR_PANIC;
    // SAFETY: a status to write.
    let p = unsafe { keel_pool_new(threads, &mut status) };
    assert_eq!(status, keel_status::KEEL_OK, "{}", message());
    p
}

#[test]
fn every_schedule_runs_every_iteration_exactly_once() {
    let p = pool(3);
    for schedule in [
        c"static",
        c"static,7",
        c"dynamic,1",
        c"dynamic,13",
        c"guided",
        c"auto",
        c"fac2",
        c"static-steal",
        c"tss",
    ] {
        for (begin, end) in [
            (0i64, 1000i64),
            (-500, 501),
            (i64::MAX - 100, i64::MAX),
            (5, 5),
            (9, 3),
        ] {
            let n = (end - begin).max(0) as usize;
            let c = Counts {
                hits: (0..n).map(|_| AtomicU32::new(0)).collect(),
                begin,
                threads: 3,
                bad_thread: AtomicUsize::new(0),
                owner: (0..3).map(|_| AtomicUsize::new(0)).collect(),
            };
            let mut stats = keel_loop_stats {
                threads: 0,
                iterations: 0,
                chunks: 0,
                t_par: 0.0,
                lib_percent: 0.0,
            };
            // SAFETY: `c` outlives the loop.
            let status = unsafe {
                keel_parallel_for_id(
                    p,
                    c"exactly-once".as_ptr(),
                    begin,
                    end,
                    schedule.as_ptr(),
                    KEEL_LOOP_RECORDED,
                    Some(count),
                    &c as *const Counts as *mut c_void,
                    &mut stats,
                )
            };
            assert_eq!(status, keel_status::KEEL_OK, "{schedule:?}: {}", message());
            assert!(
                c.hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "{schedule:?} {begin}..{end}"
            );
            assert_eq!(c.bad_thread.load(Ordering::Relaxed), 0, "{schedule:?}");
            assert_eq!((stats.iterations, stats.threads), (n as u64, 3));
            assert!(stats.t_par >= 0.0 && stats.lib_percent >= 0.0);
        }
    }
    // SAFETY: made above, no loop running.
    unsafe { keel_pool_free(p) };
}

unsafe extern "C-unwind" fn fail_at_500(begin: i64, end: i64, _: usize, ctx: *mut c_void) -> i32 {
    // SAFETY: the test passes a counter.
    let ran = unsafe { &*(ctx as *const AtomicUsize) };
    ran.fetch_add((end - begin) as usize, Ordering::Relaxed);
    if (begin..end).contains(&500) {
        42
    } else {
        0
    }
}

unsafe extern "C-unwind" fn panic_at_500(begin: i64, end: i64, _: usize, _: *mut c_void) -> i32 {
    assert!(!(begin..end).contains(&500), "iteration 500 refuses");
    0
}

#[test]
fn a_failing_or_panicking_body_is_an_error_code_and_the_pool_stays_usable() {
    use keel_status::*;
    let p = pool(2);
    let ran = AtomicUsize::new(0);
    let ctx = &ran as *const AtomicUsize as *mut c_void;
    // SAFETY: `ran` outlives every loop; NULLs are tested.
    unsafe {
        assert_eq!(
            keel_parallel_for(p, 0, 100_000, c"dynamic,1".as_ptr(), Some(fail_at_500), ctx),
            KEEL_ERR_BODY
        );
        assert!(message().contains("returned 42"), "{}", message());
        assert!(
            ran.load(Ordering::Relaxed) < 100_000,
            "the loop went on after the failure"
        );
        assert_eq!(
            keel_parallel_for(
                p,
                0,
                1000,
                c"dynamic,4".as_ptr(),
                Some(panic_at_500),
                null_mut()
            ),
            KEEL_ERR_PANIC
        );
        assert!(message().contains("iteration 500 refuses"), "{}", message());
        ran.store(0, Ordering::Relaxed);
        assert_eq!(
            keel_parallel_for(p, 0, 400, c"guided".as_ptr(), Some(fail_at_500), ctx),
            KEEL_OK
        );
        assert_eq!(ran.load(Ordering::Relaxed), 400);
        let mut last = keel_loop_stats {
            threads: 0,
            iterations: 0,
            chunks: 0,
            t_par: 0.0,
            lib_percent: 0.0,
        };
        assert_eq!(keel_pool_last_stats(p, &mut last), KEEL_OK);
        assert_eq!((last.iterations, last.threads), (400, 2));
        assert!(last.t_par.is_nan(), "not recorded: no clock read");
        assert_eq!(
            keel_parallel_for(p, 0, 10, c"dynamic,x".as_ptr(), Some(fail_at_500), ctx),
            KEEL_ERR_SCHEDULE
        );
        assert_eq!(
            keel_parallel_for(p, 0, 10, c"unknown".as_ptr(), Some(fail_at_500), ctx),
            KEEL_ERR_SCHEDULE
        );
        assert_eq!(
            keel_parallel_for(p, 0, 10, null(), None, ctx),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_parallel_for(null(), 0, 10, null(), Some(fail_at_500), ctx),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_parallel_for_id(
                p,
                null(),
                0,
                10,
                null(),
                0,
                Some(fail_at_500),
                ctx,
                null_mut()
            ),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_parallel_for_id(
                p,
                c"x".as_ptr(),
                0,
                10,
                null(),
                6,
                Some(fail_at_500),
                ctx,
                null_mut()
            ),
            KEEL_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            keel_loop_record_stats(c"never-ran".as_ptr(), &mut last),
            KEEL_ERR_NOT_FOUND
        );
        assert_eq!(
            keel_pool_last_stats(null(), &mut last),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(keel_pool_threads(null()), 0);
        let mut status = KEEL_OK;
        assert!(keel_pool_new(usize::MAX, &mut status).is_null());
        assert_eq!(status, KEEL_ERR_POOL);
        keel_pool_free(p);
        keel_pool_free(null_mut());
    }
}

/// A loop started from inside a loop's body on the same pool runs inline:
/// every nested chunk is participant 0's.
unsafe extern "C-unwind" fn nest(begin: i64, end: i64, _: usize, ctx: *mut c_void) -> i32 {
    // SAFETY: the test passes (pool, counts).
    let (pool, inner) = unsafe { &*(ctx as *const (*mut keel_pool, Counts)) };
    for _ in begin..end {
        // SAFETY: the pool is live during the outer loop.
        let s = unsafe {
            keel_parallel_for(
                *pool,
                0,
                10,
                c"dynamic,1".as_ptr(),
                Some(count),
                inner as *const Counts as *mut c_void,
            )
        };
        if s != keel_status::KEEL_OK {
            return 1;
        }
    }
    0
}

#[test]
fn nested_loops_run_inline_as_participant_zero() {
    let p = pool(2);
    let inner = Counts {
        hits: (0..10).map(|_| AtomicU32::new(0)).collect(),
        begin: 0,
        threads: 1,
        bad_thread: AtomicUsize::new(0),
        // Participant 0 of each inner loop is whichever outer thread ran
        // it: no single owner to check.
        owner: Vec::new(),
    };
    let ctx = (p, inner);
    // SAFETY: `ctx` outlives the loop.
    let s = unsafe {
        keel_parallel_for(
            p,
            0,
            4,
            c"static".as_ptr(),
            Some(nest),
            &ctx as *const _ as *mut c_void,
        )
    };
    assert_eq!(s, keel_status::KEEL_OK, "{}", message());
    assert!(ctx.1.hits.iter().all(|h| h.load(Ordering::Relaxed) == 4));
    assert_eq!(ctx.1.bad_thread.load(Ordering::Relaxed), 0);
    // SAFETY: made above.
    unsafe { keel_pool_free(p) };
}

/// Per-participant iteration counts, as a body sees them.
struct PerThread {
    iterations: Vec<AtomicUsize>,
}

unsafe extern "C-unwind" fn per_thread(
    begin: i64,
    end: i64,
    thread: usize,
    ctx: *mut c_void,
) -> i32 {
    // SAFETY: the test passes a `PerThread`.
    let c = unsafe { &*(ctx as *const PerThread) };
    c.iterations[thread].fetch_add((end - begin) as usize, Ordering::Relaxed);
    0
}

#[test]
fn hinted_loops_assign_iterations_as_the_rust_api() {
    use keel_status::*;
    let p = pool(2);
    let loads: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 97) as f64 + 1.0).collect();
    let counts = PerThread {
        iterations: (0..2).map(|_| AtomicUsize::new(0)).collect(),
    };
    let ctx = &counts as *const PerThread as *mut c_void;
    let mut stats = keel_loop_stats {
        threads: 0,
        iterations: 0,
        chunks: 0,
        t_par: 0.0,
        lib_percent: 0.0,
    };
    // SAFETY: `loads` and `counts` outlive the loop.
    let status = unsafe {
        keel_parallel_for_hinted(
            p,
            c"hinted/c".as_ptr(),
            0,
            1000,
            c"binlpt:chunks=16".as_ptr(),
            KEEL_LOOP_RECORDED,
            loads.as_ptr(),
            loads.len(),
            Some(per_thread),
            ctx,
            &mut stats,
        )
    };
    assert_eq!(status, KEEL_OK, "{}", message());
    let from_body: Vec<u64> = counts
        .iterations
        .iter()
        .map(|c| c.load(Ordering::Relaxed) as u64)
        .collect();
    assert_eq!(from_body.iter().sum::<u64>(), 1000);
    // SAFETY: live until freed below.
    let rust_pool = unsafe { &*p }.thread_pool();
    rust_pool
        .parallel(0..1000i64)
        .schedule("binlpt:chunks=16".parse().unwrap())
        .workload(&loads)
        .id("hinted/rust")
        .recorded()
        .for_each_chunk(|_| {});
    let rust = keel_rt::loops::record(keel_rt::LoopId::named("hinted/rust")).unwrap();
    let c = keel_rt::loops::record(keel_rt::LoopId::named("hinted/c")).unwrap();
    assert_eq!(c.last.thread_iterations, rust.last.thread_iterations);
    assert_eq!(from_body, rust.last.thread_iterations);
    assert_eq!(c.last.chunks, rust.last.chunks);
    // SAFETY: hostile hints and lengths; `loads` outlives the calls.
    unsafe {
        let hinted = |w: *const f64, n: usize| {
            keel_parallel_for_hinted(
                p,
                c"hinted/bad".as_ptr(),
                0,
                1000,
                c"binlpt".as_ptr(),
                0,
                w,
                n,
                Some(per_thread),
                ctx,
                null_mut(),
            )
        };
        assert_eq!(hinted(loads.as_ptr(), 999), KEEL_ERR_LENGTH_MISMATCH);
        assert_eq!(hinted(null(), 1000), KEEL_ERR_NULL_POINTER);
        assert_eq!(hinted(null(), 0), KEEL_ERR_LENGTH_MISMATCH);
        let mut bad = loads.clone();
        bad[500] = f64::NAN;
        let s = hinted(bad.as_ptr(), 1000);
        assert!(
            matches!(s, KEEL_ERR_SCHEDULE | KEEL_ERR_INVALID_INPUT),
            "{s:?}: {}",
            message()
        );
        bad[500] = -1.0;
        assert_ne!(hinted(bad.as_ptr(), 1000), KEEL_OK);
        // Without hints binlpt cannot plan: a code, not a panic.
        assert_eq!(
            keel_parallel_for(p, 0, 10, c"binlpt".as_ptr(), Some(per_thread), ctx),
            KEEL_ERR_SCHEDULE
        );
        keel_pool_free(p);
    }
}
