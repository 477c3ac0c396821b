//! A soak: a program that runs named `auto` loops, a farm and over-decomposed
//! objects, round after round, for 10⁶ loop instances, keeps a flat
//! resident set once warmed up: nothing Keel keeps grows with the number of
//! instances, farm runs or object steps. (The 10⁷-instance figure is a
//! benchmark run by hand: `docs/scaling.md`.)

use std::sync::atomic::{AtomicU64, Ordering};

use keel::farm::Farm;
use keel::objects::{Object, Objects, StepContext};

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let resident: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    resident * page
}

/// Rounds, and loop instances per round: 10⁶ instances in all.
const ROUNDS: u64 = 1_000;
const INSTANCES_PER_ROUND: u64 = 1_000;
/// Rounds run before the baseline is taken.
const WARM_UP: u64 = 100;
/// What the resident set may grow by after the warm-up.
const FLAT_WITHIN: u64 = 1 << 20;

struct Cell {
    hits: u64,
}

impl Object for Cell {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let hits = AtomicU64::new(0);
        ctx.for_each(0..8, |_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        self.hits += hits.into_inner();
    }
}

#[test]
fn a_million_loop_instances_with_farms_and_objects_keep_memory_flat() {
    let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    let mut farm = Farm::builder().workers(2).policy("arrs").build().unwrap();
    let cells: Vec<Cell> = (0..16).map(|_| Cell { hits: 0 }).collect();
    let mut objects = Objects::builder()
        .policy("greedy")
        .period(5)
        .build(&pool, cells)
        .unwrap();
    let names = ["soak/a", "soak/b", "soak/c", "soak/d"];
    let mut baseline = None;
    for round in 0..ROUNDS {
        if round == WARM_UP {
            baseline = Some(rss_bytes());
        }
        for k in 0..INSTANCES_PER_ROUND {
            let sum = AtomicU64::new(0);
            pool.parallel(0..32u64)
                .id(names[(k % 4) as usize])
                .for_each(|i| {
                    sum.fetch_add(i, Ordering::Relaxed);
                });
            assert_eq!(sum.into_inner(), 496, "every iteration once");
        }
        let items = AtomicU64::new(0);
        let report = farm
            .run(0..100u64, |_, _| {
                items.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        assert_eq!(items.into_inner(), 100);
        assert_eq!(report.per_worker.iter().sum::<u64>(), 100);
        objects.run(2).unwrap();
    }
    let growth = rss_bytes().saturating_sub(baseline.unwrap());
    assert!(
        growth <= FLAT_WITHIN,
        "the resident set grew by {} KiB after the warm-up",
        growth >> 10
    );
    let cells = objects.into_objects();
    assert!(cells.iter().all(|c| c.hits == ROUNDS * 2 * 8));
}
