//! The two decision-time goals of `benches/mapping.rs` alone, as per-round
//! wall-clock ratios: `greedy / sort` at 1,000,000 × 1,024 and
//! `registry / direct` at 16,000 × 80, on the bench's own workload and
//! entries, in one interleaved run (each round runs every entry once, the
//! starting entry rotating), in seconds rather than the bench's minutes.
//!
//! ```text
//! MALLOC_TRIM_THRESHOLD_=1099511627776 MALLOC_MMAP_THRESHOLD_=33554432 \
//!     cargo run --release -p keel-policy --example mapping_ratio -- 41
//! ```
//!
//! The argument is the number of rounds at the large size (the small size
//! runs 50 times as many). The two malloc settings are the bench's
//! (`benches/mapping.rs`, "Allocator"): they keep freed buffers in the heap,
//! so that the ratios measure the algorithms rather than page faults.
//! Printed per entry: the median time and the median [10 %, 90 %] of its
//! per-round ratio to the first entry.

use std::hint::black_box;
use std::time::Instant;

use keel_policy::mapping::{self, lpt_order, runtime_context, Greedy, MappingPolicy};
use keel_policy::stats::percentile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The bench's `lb_test` loads (seed 2, `min + (max − min)·U⁴` with 10 µs
/// and 3,000 µs).
fn lb_test_loads(n: usize) -> Vec<f64> {
    const LOAD_MIN: f64 = 10e-6;
    const LOAD_MAX: f64 = 3000e-6;
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    (0..n)
        .map(|_| {
            let u: f64 = rng.gen();
            LOAD_MIN + (LOAD_MAX - LOAD_MIN) * u.powi(4)
        })
        .collect()
}

/// One timed routine.
type Entry<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Runs `rounds` interleaved rounds after one warm-up call of each entry and
/// prints each entry against the first.
fn interleave(size: &str, rounds: usize, entries: &mut [Entry<'_>]) {
    for (_, run) in entries.iter_mut() {
        run();
    }
    let mut times = vec![Vec::with_capacity(rounds); entries.len()];
    for round in 0..rounds {
        for k in 0..entries.len() {
            let e = (round + k) % entries.len();
            let began = Instant::now();
            (entries[e].1)();
            times[e].push(began.elapsed().as_secs_f64());
        }
    }
    let at = |v: &[f64], p| percentile(v, p).unwrap_or(f64::NAN);
    for (e, (name, _)) in entries.iter().enumerate() {
        let ratios: Vec<f64> = times[e].iter().zip(&times[0]).map(|(a, b)| a / b).collect();
        println!(
            "{size:<14} {name:<10} {:>9.3} ms  {:.3} [{:.3}, {:.3}]",
            at(&times[e], 50) * 1e3,
            at(&ratios, 50),
            at(&ratios, 10),
            at(&ratios, 90),
        );
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(31, |a| a.parse().expect("rounds: a number"));
    let registry = mapping::registry();
    let greedy = registry.build("greedy").expect("built-in spec");
    let map = |p: &dyn MappingPolicy, loads: &[f64], pu_loads: &[f64]| {
        let ctx = runtime_context(loads, pu_loads);
        black_box(p.map(&ctx).expect("valid inputs")).ntasks()
    };
    println!(
        "size           entry       median     per-round ratio to the first: median [10 %, 90 %]"
    );

    let (loads, pu_loads) = (lb_test_loads(1_000_000), vec![0.0; 1024]);
    let mut entries: Vec<Entry<'_>> = vec![
        (
            "sort",
            Box::new(|| {
                let mut sorted = black_box(&loads[..]).to_vec();
                sorted.sort_unstable_by(|a, b| b.partial_cmp(a).unwrap());
                drop(black_box(sorted));
            }),
        ),
        (
            "lpt-order",
            Box::new(|| drop(black_box(lpt_order(black_box(&loads), |_| true)))),
        ),
        (
            "greedy",
            Box::new(|| {
                black_box(map(greedy.as_ref(), black_box(&loads), &pu_loads));
            }),
        ),
    ];
    interleave("1000000x1024", rounds, &mut entries);

    let (loads, pu_loads) = (lb_test_loads(16_000), vec![0.0; 80]);
    let mut entries: Vec<Entry<'_>> = vec![
        (
            "direct",
            Box::new(|| drop(black_box(Greedy::map_direct(black_box(&loads), 80)))),
        ),
        (
            "registry",
            Box::new(|| {
                black_box(map(greedy.as_ref(), black_box(&loads), &pu_loads));
            }),
        ),
    ];
    interleave("16000x80", rounds * 50, &mut entries);
}
