//! One entry of `benches/mapping.rs`, run once on the bench's own workload,
//! for counting instructions under callgrind, which repeat exactly where
//! wall-clock ratios on a shared machine do not.
//!
//! Only [`measured`] is counted (`--toggle-collect`), so building the loads
//! is left out. Entries: `sort` (a sorted copy of the loads) and `greedy`
//! (through the registry and a context handler) at 1,000,000 × 1,024;
//! `direct` (`Greedy::map_direct`) and `registry` (greedy through the
//! registry and a context handler) at 16,000 × 80.
//!
//! ```text
//! cargo build --release -p keel-policy --example mapping_callgrind
//! valgrind --tool=callgrind --toggle-collect='*measured*' \
//!     target/release/examples/mapping_callgrind greedy
//! ```
//!
//! The "Collected" line (`Ir`) is the entry's instruction count; the ratios
//! quoted in the bench header are `greedy / sort` and `registry / direct`.

use std::hint::black_box;

use keel_policy::mapping::{self, runtime_context, Greedy, MappingPolicy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The bench's `lb_test` loads (`benches/mapping.rs`: seed 2, `min + (max −
/// min)·U⁴` with 10 µs and 3,000 µs).
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

/// The counted region: one call of the entry, returning how many tasks it
/// placed (or sorted).
#[inline(never)]
fn measured(entry: &str, policy: &dyn MappingPolicy, loads: &[f64], pu_loads: &[f64]) -> usize {
    match entry {
        "sort" => {
            let mut sorted = loads.to_vec();
            sorted.sort_unstable_by(|a, b| b.partial_cmp(a).unwrap());
            black_box(sorted).len()
        }
        "direct" => black_box(Greedy::map_direct(loads, pu_loads.len())).len(),
        _ => {
            let ctx = runtime_context(loads, pu_loads);
            let mapping = policy.map(&ctx).expect("valid inputs");
            black_box(mapping).ntasks()
        }
    }
}

fn main() {
    let entry = std::env::args().nth(1).unwrap_or_default();
    let (ntasks, npus) = match entry.as_str() {
        "sort" | "greedy" => (1_000_000, 1024),
        "direct" | "registry" => (16_000, 80),
        _ => {
            eprintln!("usage: mapping_callgrind sort|greedy|direct|registry");
            std::process::exit(2);
        }
    };
    let loads = lb_test_loads(ntasks);
    let pu_loads = vec![0.0; npus];
    let policy = mapping::registry().build("greedy").expect("built-in spec");
    let placed = measured(black_box(&entry), policy.as_ref(), &loads, &pu_loads);
    assert_eq!(placed, ntasks);
}
