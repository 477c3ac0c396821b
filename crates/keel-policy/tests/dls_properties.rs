//! Property tests of the loop schedules' contract, exactly once above all, over
//! grids and random inputs; the protocols that enact it are tested apart.
//!
//! 1. Exactly once: every schedule (every registered name, parameter
//!    variants, with and without measured inputs) is run by a single-threaded
//!    simulation of the context — `P` virtual threads taking turns
//!    round-robin, or with thread 0 asking twice as often — claiming through
//!    the plan's [`Claim`] (static blocks, a chunk-index counter, a
//!    remaining counter as the CAS would see it, home ranges with a victim
//!    scan for stealing), feeding adaptive plans synthetic timings. Every
//!    iteration of `[0, N)` must be claimed exactly once, for small `N`
//!    (0, 1, `N < P`, …) with `k ∈ {none, 1, 2, 7, N, N+5}` and for `N`
//!    near 2⁶³ and `u64::MAX` with huge `k` (index and remaining arithmetic).
//! 2. The chunk parameter is a minimum: remaining-claimed sizes never go
//!    below `k`, index-claimed chunks only at the end (`tss`: `k` is the last
//!    chunk, excluded).
//! 3. Adaptivity: fed a board (or weights, or history) on which one thread
//!    takes 4× the time per iteration, `wf`, `awf`, `awf-b..e`, `af` and
//!    `maf` give that thread smaller chunks than the others.
//! 4. Fallbacks: the profile schedules without a profile plan as `mfac2`.

use std::ops::Range;

use keel_policy::dls::{
    registry, Claim, LoopSchedule, LoopShape, Plan, Request, ThreadLocal, ThreadTiming, Timing,
    AUTO4OMP_PORTFOLIO, WORKLOAD_SCHEDULES,
};
use keel_policy::select::parse_setting;
use keel_policy::{Concept, ContextHandler, Model, Origin, Subject};
use proptest::prelude::*;

/// A fixed schedule and its chunk from schedule text, read as every
/// context reads it.
fn parse_schedule(text: &str) -> (Box<dyn LoopSchedule>, Option<u64>) {
    parse_setting(text)
        .unwrap()
        .into_fixed()
        .expect("a fixed schedule")
}

/// Parameter variants beyond the registered names.
const VARIANTS: &[&str] = &[
    "tap:alpha=0",
    "tap:alpha=3",
    "af:divider=1",
    "af:divider=3",
    "maf:divider=7",
];

/// Every registered name that plans from measurements alone, and
/// [`VARIANTS`]. The workload-aware schedules plan from an assignment made
/// from hints: [`workload_schedules_are_claimed_exactly_once`] covers them.
fn all_specs() -> Vec<String> {
    let mut specs = registry().names();
    specs.retain(|name| !WORKLOAD_SCHEDULES.contains(&name.as_str()));
    specs.extend(VARIANTS.iter().map(|s| s.to_string()));
    specs
}

/// Who asks next.
#[derive(Clone, Copy, Debug)]
enum Turns {
    /// 0, 1, …, P−1, 0, 1, …
    RoundRobin,
    /// 0, 1, …, P−1, 0, 0, 1, …: thread 0 asks twice per round, the others
    /// once.
    FirstTwice,
}

impl Turns {
    fn order(self, p: usize) -> Vec<usize> {
        match self {
            Turns::RoundRobin => (0..p).collect(),
            Turns::FirstTwice => (0..p).chain([0]).collect(),
        }
    }
}

/// Measured inputs a context may provide.
struct Measured {
    profile: Vec<f64>,
    overhead: Vec<f64>,
    weights: Vec<f64>,
    history: Vec<f64>,
}

impl Measured {
    fn new(p: usize, seed: u64) -> Self {
        // Deterministic spread from the seed; thread 0 slowest.
        let spread = |t: usize| 1.0 + ((seed >> (t % 60)) & 3) as f64;
        let mut history = Vec::with_capacity(2 * p);
        for t in 0..p {
            // Some threads without data, to exercise the fill.
            let work = if (seed >> (t % 64)) & 5 == 5 {
                0.0
            } else {
                1000.0
            };
            history.extend([work, 1e-3 * spread(t) * if t == 0 { 4.0 } else { 1.0 }]);
        }
        Measured {
            profile: vec![1e-6, 1e-6 * (seed % 5) as f64 * 0.7],
            overhead: vec![1e-7 * (seed % 3) as f64],
            weights: (0..p).map(|t| 1.0 / spread(t)).collect(),
            history,
        }
    }

    fn context(&self) -> ContextHandler<'_> {
        let mut ctx = ContextHandler::new();
        ctx.provide_values(
            Concept::IterationProfile,
            Origin::Runtime,
            &self.profile[..],
        )
        .provide_values(
            Concept::SchedulingOverhead,
            Origin::Runtime,
            &self.overhead[..],
        )
        .provide_values(Concept::ThreadWeights, Origin::User, &self.weights[..])
        .provide_values(Concept::ThreadHistory, Origin::Runtime, &self.history[..]);
        ctx
    }
}

/// Runs `plan` the way a context would, single-threaded, and returns every
/// claimed chunk with its size before clamping (remaining claims).
fn simulate(
    plan: &Plan<'_>,
    shape: &LoopShape,
    turns: Turns,
    slow: Option<usize>,
) -> Result<Vec<Range<u64>>, String> {
    const MAX_TURNS: usize = 2_000_000;
    let (n, p, k) = (shape.iterations, shape.threads, shape.min_chunk());
    let order = turns.order(p);
    let mut done = vec![false; p];
    let mut claims: Vec<Range<u64>> = Vec::new();
    let mut locals = vec![ThreadLocal::default(); p];
    let mut board = vec![ThreadTiming::default(); p];
    let mut rounds = vec![0u64; p];
    let mut homes: Vec<Range<u64>> = (0..p).map(|t| plan.home_range(t)).collect();
    let (mut index, mut next, mut number) = (0u64, 0u64, 0u64);

    for (step, &t) in order.iter().cycle().enumerate() {
        if done.iter().all(|&d| d) {
            return Ok(claims);
        }
        if step > MAX_TURNS {
            return Err(format!("no end after {MAX_TURNS} turns"));
        }
        if done[t] {
            continue;
        }
        let chunk = match plan.claim() {
            Claim::Static => {
                let block = plan.static_block(t, rounds[t]);
                rounds[t] += 1;
                block
            }
            Claim::Indexed => {
                let chunk = plan.chunk_at(index);
                index += 1;
                chunk
            }
            Claim::Remaining => {
                let remaining = n - next;
                if remaining == 0 {
                    None
                } else {
                    let request = Request { thread: t, number };
                    number += 1;
                    let size = plan.next_size(remaining, request, &mut locals[t], &board);
                    if size < k.min(remaining).max(1) {
                        return Err(format!("size {size} below k = {k} with {remaining} left"));
                    }
                    let start = next;
                    next += size.min(remaining);
                    locals[t].claimed(next - start);
                    Some(start..next)
                }
            }
            Claim::Steal => {
                let unit = plan.chunk_unit();
                if unit == 0 {
                    return Err("zero stealing unit".into());
                }
                if homes[t].is_empty() {
                    for v in (1..p).map(|d| (t + d) % p) {
                        let left = homes[v].end - homes[v].start;
                        let amount = plan.steal_amount(left).min(left);
                        if left > 0 && amount == 0 {
                            return Err(format!("a thief left {left} iterations alone"));
                        }
                        if amount > 0 {
                            let end = homes[v].end;
                            homes[v].end -= amount;
                            homes[t] = homes[v].end..end;
                            break;
                        }
                    }
                }
                let home = &mut homes[t];
                (!home.is_empty()).then(|| {
                    let start = home.start;
                    home.start += unit.min(home.end - home.start);
                    start..home.start
                })
            }
        };
        let Some(chunk) = chunk else {
            done[t] = true;
            continue;
        };
        if chunk.start >= chunk.end || chunk.end > n {
            return Err(format!("bad chunk {chunk:?} of [0, {n})"));
        }
        // Execute and time the chunk as the plan asks; publish when the
        // thread's chunk budget is spent.
        let size = chunk.end - chunk.start;
        if plan.timing() != Timing::None {
            let per_iteration = if slow == Some(t) { 4e-6 } else { 1e-6 };
            let overhead = if plan.timing() == Timing::Request {
                1e-7
            } else {
                0.0
            };
            locals[t].record(size, size as f64 * per_iteration + overhead);
            if locals[t].chunk_spent() {
                board[t] = locals[t].timing();
            }
        }
        claims.push(chunk);
    }
    unreachable!("the turn order cycles forever")
}

/// Every iteration of `[0, n)` exactly once.
fn check_exactly_once(mut claims: Vec<Range<u64>>, n: u64) -> Result<(), String> {
    claims.sort_by_key(|c| c.start);
    let mut covered = 0u64;
    for c in &claims {
        if c.start != covered {
            return Err(format!("gap or overlap at {covered}: next chunk {c:?}"));
        }
        covered = c.end;
    }
    if covered != n {
        return Err(format!("covered [0, {covered}) of [0, {n})"));
    }
    Ok(())
}

/// Index-claimed chunks are at least `k` except the one that ends the loop.
/// `gac` computes `⌈N·xⁱ⌉` in `f64`: beyond 2⁵³ its sizes are exact only to
/// a few ulps of `N` (the tiling stays exact), hence the slack.
fn check_minimum(
    name: &str,
    plan: &Plan<'_>,
    shape: &LoopShape,
    claims: &[Range<u64>],
) -> Result<(), String> {
    if plan.claim() != Claim::Indexed || name == "tss" {
        return Ok(());
    }
    let slack = if name == "gac" || name == "auto" {
        shape.iterations >> 48
    } else {
        0
    };
    let k = shape.min_chunk().saturating_sub(slack);
    match claims
        .iter()
        .find(|c| c.end != shape.iterations && c.end - c.start < k)
    {
        Some(c) => Err(format!("chunk {c:?} below k = {k}")),
        None => Ok(()),
    }
}

fn run_all(
    n: u64,
    p: usize,
    k: Option<u64>,
    turns: Turns,
    seed: u64,
    measured: bool,
) -> Result<(), TestCaseError> {
    let shape = LoopShape::new(n, p, k).unwrap();
    let inputs = Measured::new(p, seed);
    let empty = ContextHandler::new();
    let full = inputs.context();
    let ctx = if measured { &full } else { &empty };
    let slow = seed.is_multiple_of(2).then_some(0);
    let registry = registry();
    for spec in all_specs() {
        let schedule = registry.build(&spec).unwrap();
        let plan = schedule
            .plan(&shape, ctx)
            .map_err(|e| TestCaseError::fail(format!("{spec}: {e}")))?;
        let claims = simulate(&plan, &shape, turns, slow)
            .map_err(|e| TestCaseError::fail(format!("{spec} {shape:?} {turns:?}: {e}")))?;
        check_minimum(&spec, &plan, &shape, &claims)
            .map_err(|e| TestCaseError::fail(format!("{spec} {shape:?}: {e}")))?;
        check_exactly_once(claims, n)
            .map_err(|e| TestCaseError::fail(format!("{spec} {shape:?} {turns:?}: {e}")))?;
    }
    Ok(())
}

fn turns() -> impl Strategy<Value = Turns> {
    prop_oneof![Just(Turns::RoundRobin), Just(Turns::FirstTwice)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn small_loops_are_claimed_exactly_once(
        n in prop_oneof![Just(0u64), Just(1), 0..17u64, 0..400u64],
        p in 1..=16usize,
        k_choice in 0..6usize,
        turns in turns(),
        seed in any::<u64>(),
        measured in any::<bool>(),
    ) {
        let k = [None, Some(1), Some(2), Some(7), Some(n.max(1)), Some(n + 5)][k_choice];
        run_all(n, p, k, turns, seed, measured)?;
    }

    #[test]
    fn huge_loops_are_claimed_exactly_once(
        n in prop_oneof![
            (1u64 << 63) - 1000..(1u64 << 63) + 1000,
            u64::MAX - 1000..=u64::MAX,
        ],
        p in 1..=16usize,
        divisor in prop_oneof![1..=64u64, Just(0)],
        turns in turns(),
        seed in any::<u64>(),
        measured in any::<bool>(),
    ) {
        // Huge k keeps the chunk count small: n/divisor, or n + 5 (saturating).
        let k = n.checked_div(divisor).unwrap_or(n.saturating_add(5));
        run_all(n, p, Some(k), turns, seed, measured)?;
    }

    #[test]
    fn rules_that_ignore_request_numbers_say_so(
        n in 1u64..1_000_000,
        p in 1..=16usize,
        number in 1u64..10_000,
        thread_pick in any::<prop::sample::Index>(),
    ) {
        // The context numbers requests only for rules that declare it; a rule
        // that read the number without declaring it would see 0 forever.
        let shape = LoopShape::new(n, p, None).unwrap();
        let ctx = ContextHandler::new();
        let board = vec![ThreadTiming::default(); p];
        let thread = thread_pick.index(p);
        for spec in all_specs() {
            let plan = registry().build(&spec).unwrap().plan(&shape, &ctx).unwrap();
            if plan.claim() != Claim::Remaining || plan.numbers_requests() {
                continue;
            }
            let ask = |number: u64| {
                let mut local = ThreadLocal::default();
                plan.next_size(n / 2 + 1, Request { thread, number }, &mut local, &board)
            };
            prop_assert_eq!(ask(0), ask(number), "{}", spec);
        }
    }

    #[test]
    fn workload_schedules_are_claimed_exactly_once(
        name in prop::sample::select(&["binlpt", "binlpt:chunks=5", "binlpt:cut=improved", "greedy"][..]),
        hints in prop::collection::vec(0.0f64..1e3, 0..500),
        p in 1..=16usize,
        k in prop::option::of(1u64..50),
        turns in turns(),
    ) {
        let n = hints.len() as u64;
        let shape = LoopShape::new(n, p, k).unwrap();
        let (schedule, _) = parse_schedule(name);
        let workload = schedule.as_workload().expect("a workload-aware schedule");
        let hints_concept = Concept::Workload { subject: Subject::Tasks, model: Model::Static };
        let mut with_hints = ContextHandler::new();
        with_hints.provide_values(hints_concept, Origin::User, &hints[..]);
        let assignment = workload.assign(&shape, &with_hints).unwrap();
        let mut ctx = ContextHandler::new();
        ctx.provide_assignment(Origin::Runtime, &assignment);
        let plan = schedule.plan(&shape, &ctx).unwrap();
        let claims = simulate(&plan, &shape, turns, None)
            .map_err(|e| TestCaseError::fail(format!("{name} {shape:?}: {e}")))?;
        check_exactly_once(claims, n)
            .map_err(|e| TestCaseError::fail(format!("{name} {shape:?}: {e}")))?;
    }

    #[test]
    fn a_thread_four_times_slower_gets_smaller_chunks(
        p in 2..=16usize,
        slow_pick in any::<prop::sample::Index>(),
        n in 10_000u64..1_000_000_000,
    ) {
        let slow = slow_pick.index(p);
        let fast = (slow + 1) % p;
        let per_iteration = |t: usize| if t == slow { 4e-6 } else { 1e-6 };
        let weights: Vec<f64> = (0..p).map(|t| 1e-6 / per_iteration(t)).collect();
        let history: Vec<f64> = (0..p).flat_map(|t| [1000.0, 1000.0 * per_iteration(t)]).collect();
        let board: Vec<ThreadTiming> = (0..p)
            .map(|t| ThreadTiming {
                time_per_iteration: per_iteration(t),
                mean: per_iteration(t),
                sd: 0.1 * per_iteration(t),
            })
            .collect();
        let shape = LoopShape::new(n, p, None).unwrap();
        for name in ["wf", "awf", "awf-b", "awf-c", "awf-d", "awf-e", "af", "maf"] {
            let mut ctx = ContextHandler::new();
            match name {
                "wf" => { ctx.provide_values(Concept::ThreadWeights, Origin::User, &weights[..]); }
                "awf" => { ctx.provide_values(Concept::ThreadHistory, Origin::Runtime, &history[..]); }
                _ => {}
            }
            let plan = registry().build(name).unwrap().plan(&shape, &ctx).unwrap();
            // Same batch (requests 0 and 1 of P >= 2), same remaining.
            let ask = |thread: usize, number: u64| {
                let mut local = ThreadLocal::default();
                plan.next_size(n, Request { thread, number }, &mut local, &board)
            };
            let (slow_size, fast_size) = (ask(slow, 0), ask(fast, 1));
            prop_assert!(
                slow_size < fast_size,
                "{}: slow thread {} got {}, fast thread {} got {}", name, slow, slow_size, fast, fast_size
            );
        }
    }
}

#[test]
fn profile_schedules_without_a_profile_plan_as_mfac2() {
    let shape = LoopShape::new(1000, 4, Some(3)).unwrap();
    let empty = ContextHandler::new();
    let reference: Vec<_> = {
        let plan = registry()
            .build("mfac2")
            .unwrap()
            .plan(&shape, &empty)
            .unwrap();
        (0..).map_while(|i| plan.chunk_at(i)).collect()
    };
    for name in ["fsc", "fac", "mfac", "tap", "bold"] {
        let plan = registry()
            .build(name)
            .unwrap()
            .plan(&shape, &empty)
            .unwrap();
        assert!(matches!(plan, Plan::Fac2(_)), "{name}: {plan:?}");
        let chunks: Vec<_> = (0..).map_while(|i| plan.chunk_at(i)).collect();
        assert_eq!(chunks, reference, "{name}");
    }
    // With a profile they are themselves.
    let profile = [1e-6, 2e-6];
    let mut ctx = ContextHandler::new();
    ctx.provide_values(Concept::IterationProfile, Origin::Runtime, &profile[..]);
    for (name, claim) in [
        ("fsc", Claim::Indexed),
        ("fac", Claim::Remaining),
        ("tap", Claim::Remaining),
        ("bold", Claim::Remaining),
    ] {
        let plan = registry().build(name).unwrap().plan(&shape, &ctx).unwrap();
        assert!(!matches!(plan, Plan::Fac2(_)), "{name}");
        assert_eq!(plan.claim(), claim, "{name}");
    }
}

#[test]
fn claims_and_timings_are_the_documented_ones() {
    let shape = LoopShape::new(1000, 4, None).unwrap();
    let ctx = ContextHandler::new();
    let expect = [
        ("static", Claim::Static, Timing::None),
        ("ss", Claim::Indexed, Timing::None),
        ("gss", Claim::Remaining, Timing::None),
        ("gss-llvm", Claim::Remaining, Timing::None),
        ("gac", Claim::Indexed, Timing::None),
        ("tss", Claim::Indexed, Timing::None),
        ("fac2", Claim::Indexed, Timing::None),
        ("mfac2", Claim::Indexed, Timing::None),
        ("wf", Claim::Remaining, Timing::None),
        ("awf", Claim::Remaining, Timing::None),
        ("awf-b", Claim::Remaining, Timing::Chunk),
        ("awf-c", Claim::Remaining, Timing::Chunk),
        ("awf-d", Claim::Remaining, Timing::Request),
        ("awf-e", Claim::Remaining, Timing::Request),
        ("af", Claim::Remaining, Timing::Chunk),
        ("maf", Claim::Remaining, Timing::Request),
        ("static-steal", Claim::Steal, Timing::None),
    ];
    for (name, claim, timing) in expect {
        let plan = registry().build(name).unwrap().plan(&shape, &ctx).unwrap();
        assert_eq!((plan.claim(), plan.timing()), (claim, timing), "{name}");
    }
    // AF hands its first chunk of 100 out in tenths, one per request.
    let af = registry().build("af").unwrap().plan(&shape, &ctx).unwrap();
    let mut local = keel_policy::dls::ThreadLocal::default();
    let request = keel_policy::dls::Request {
        thread: 0,
        number: 0,
    };
    let board = vec![keel_policy::dls::ThreadTiming::default(); shape.threads];
    for _ in 0..10 {
        assert_eq!(af.next_size(1000, request, &mut local, &board), 10);
        local.claimed(10);
    }
    assert!(local.chunk_spent());
}

#[test]
fn the_portfolio_parses_in_both_syntaxes() {
    for name in AUTO4OMP_PORTFOLIO {
        let (a, _) = parse_schedule(name);
        let (b, chunk) = parse_schedule(&format!("{name},5"));
        let (c, _) = parse_schedule(&format!("{name}:chunk=5"));
        assert_eq!(a.spec().name, name);
        assert_eq!((b.spec(), chunk), (c.spec(), Some(5)));
    }
}

#[test]
fn plans_are_small_copies_that_borrow_the_context() {
    // Starting a loop copies a plan into every worker: keep it small.
    assert!(
        std::mem::size_of::<Plan<'static>>() <= 96,
        "{}",
        std::mem::size_of::<Plan<'static>>()
    );
    let weights = [1.0, 2.0];
    let mut ctx = ContextHandler::new();
    ctx.provide_values(Concept::ThreadWeights, Origin::User, &weights[..]);
    let shape = LoopShape::new(100, 2, None).unwrap();
    let plan = registry().build("wf").unwrap().plan(&shape, &ctx).unwrap();
    let copy = plan;
    let board: Vec<ThreadTiming> = Vec::new();
    let ask = |p: &Plan<'_>| {
        p.next_size(
            100,
            Request {
                thread: 1,
                number: 0,
            },
            &mut ThreadLocal::default(),
            &board,
        )
    };
    assert_eq!(ask(&plan), ask(&copy));
}

#[test]
fn thread_local_sums_give_awf_pi_and_af_mean_and_sd() {
    let mut local = ThreadLocal::default();
    local.record(10, 1.0); // κ = 1: 0.1 s/it
    local.record(20, 6.0); // κ = 2: 0.3 s/it
    let timing = local.timing();
    // π = (1·1 + 2·6) / (1·10 + 2·20) = 13/50.
    assert!((timing.time_per_iteration - 0.26).abs() < 1e-12);
    // Samples 0.1 and 0.3: mean 0.2, sample sd √0.02.
    assert!((timing.mean - 0.2).abs() < 1e-12);
    assert!((timing.sd - 0.02f64.sqrt()).abs() < 1e-12);
    assert_eq!(ThreadLocal::default().timing(), ThreadTiming::default());
}
