//! One run of `keel mpi bench`, on every rank of an MPI job: the
//! Lassen-like proxy (a front of expensive domains sweeping the grid, each
//! domain's front work a potential-task loop) as distributed objects, under
//! one configuration; rank 0 prints one JSON line with what the run took.
//!
//! ```sh
//! mpiexec -n 4 keel-mpi-bench --config greedy-stealing --threads 1 [--quick]
//! ```
//!
//! Configurations (the Charm++ + OpenMP paper's Table 1 rows): `no-lb`
//! (no balancing, no stealing), `greedy` (greedy across ranks and among
//! each rank's PUs every 50 steps), `greedy-stealing` (the same, with
//! idle workers stealing potential tasks inside each step). The objects
//! start in blocks of ids, one block per rank.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

use keel::objects::{Object, StepContext};
use keel_mpi::bench::MpiRun;
use keel_mpi::{Collective, DistributedObjects, MpiComm};
use keel_workloads::objects::{run_units, LassenLike, ObjectWorkload};
use serde::{Deserialize, Serialize};

/// The balancing period of the balanced configurations, steps.
const PERIOD: usize = 50;
/// The exposure policy of the stealing configuration.
const STEALING: &str = "history-idle";

/// The workload, the same on every rank (a pure function of the job's
/// size and the flags).
static WORK: OnceLock<LassenLike> = OnceLock::new();

/// One domain: its id and a checksum of its work (its state).
#[derive(Serialize, Deserialize)]
struct Domain {
    id: usize,
    checksum: f64,
}

impl Object for Domain {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let w = WORK.get().expect("set before the run");
        let (id, step) = (self.id, ctx.step());
        self.checksum += black_box(run_units(w.serial_units(id, step), id as u64));
        ctx.for_each(0..w.cells(id), |c| {
            black_box(run_units(w.cell_units(id, step, c), c as u64));
        });
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    MpiComm::abort_job_on_panic();
    let comm = MpiComm::new(universe.world());
    let (rank, ranks) = (comm.rank(), comm.size());
    let mut config = "greedy".to_string();
    let mut threads = 1usize;
    let mut quick = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" => config = args.next().expect("--config NAME"),
            "--threads" => {
                threads = args
                    .next()
                    .and_then(|t| t.parse().ok())
                    .expect("--threads N")
            }
            "--quick" => quick = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let (balanced, stealing) = match config.as_str() {
        "no-lb" => (false, "none"),
        "greedy" => (true, "none"),
        "greedy-stealing" => (true, STEALING),
        other => panic!("unknown configuration {other} (no-lb, greedy, greedy-stealing)"),
    };
    let mut workload = LassenLike::for_pus(ranks * threads);
    if quick {
        workload.steps = 100;
        workload.scale = 0.25;
    }
    let work = WORK.get_or_init(|| workload);
    let n = work.objects();
    let pool = keel::ThreadPool::builder()
        .threads(threads)
        .pin(false)
        .build()
        .expect("a pool");
    let block = n.div_ceil(ranks);
    let objects: Vec<(u64, Domain)> = (rank * block..((rank + 1) * block).min(n))
        .map(|id| (id as u64, Domain { id, checksum: 0.0 }))
        .collect();
    let mut builder = DistributedObjects::builder().stealing(stealing);
    if balanced {
        builder = builder
            .rank_policy("greedy")
            .period(PERIOD)
            .local_policy("greedy")
            .local_period(PERIOD);
    }
    let mut run = builder
        .build(&comm, &pool, objects)
        .unwrap_or_else(|r| panic!("{}", r.error));
    let began = Instant::now();
    let mut steps_s = 0.0;
    let mut lambda = 0.0;
    let (mut rebalances, mut decide_s, mut migrate_s, mut migrations) = (0, 0.0, 0.0, 0);
    let steps = run.run(work.steps).unwrap_or_else(|e| panic!("{e}"));
    let total_s = began.elapsed().as_secs_f64();
    for step in steps {
        steps_s += step.seconds;
        let mean = step.rank_seconds.iter().sum::<f64>() / ranks as f64;
        if mean > 0.0 {
            lambda += step.seconds / mean - 1.0;
        }
        if let Some(r) = step.rebalance {
            rebalances += 1;
            decide_s += r.decide_seconds;
            migrate_s += r.migrate_seconds;
            migrations += r.metrics.migrations;
        }
    }
    let mut sum = 0.0;
    run.visit(|_, d| sum += d.checksum);
    let all = comm.all_gather(&sum.to_le_bytes()).expect("gather");
    let checksum: f64 = all
        .iter()
        .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap()))
        .sum();
    if rank == 0 {
        let line = MpiRun {
            config,
            ranks,
            threads,
            objects: n,
            steps: work.steps,
            workload: work.spec(),
            total_s,
            steps_s,
            lambda_ranks: lambda / work.steps as f64,
            rebalances,
            decide_s,
            migrate_s,
            migrations,
            checksum,
        };
        println!("{}", serde_json::to_string(&line).expect("serialisable"));
    }
}
