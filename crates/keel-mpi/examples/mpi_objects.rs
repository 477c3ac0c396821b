//! Distributed objects under MPI: every rank holds 16 objects stepping a
//! small state, rank 0's ten times heavier; the ranks balance every 4
//! steps (greedy-refine across ranks), each rank's pool steals inside
//! every step, and the objects' ids and states are checked after every
//! step: all of them, each once, each having run every step.
//!
//! ```sh
//! cargo build --release -p keel-mpi --features mpi --example mpi_objects
//! mpiexec -n 4 target/release/examples/mpi_objects [steps] [threads]
//! ```
//!
//! Prints one line per balancing step on rank 0 and, at the end, one
//! line per rank: `rank R/N objects K steps S checksum C`, then rank 0's
//! `conserved all=A checksum=C` over the job.

use keel::objects::{Object, StepContext};
use keel_mpi::{Collective, DistributedObjects, MpiComm};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Cell {
    id: u64,
    steps: u64,
    state: u64,
    work: u32,
}

impl Object for Cell {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let mut x = self.state ^ self.id;
        for _ in 0..self.work {
            x = std::hint::black_box(
                x.wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407),
            );
        }
        self.state = x ^ ctx.step() as u64;
        self.steps += 1;
    }
}

/// The state of object `id` after `steps` steps, wherever it ran.
fn expected_state(id: u64, steps: u64, work: u32) -> u64 {
    let mut state = 0u64;
    for s in 0..steps {
        let mut x = state ^ id;
        for _ in 0..work {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        state = x ^ s;
    }
    state
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    MpiComm::abort_job_on_panic();
    let comm = MpiComm::new(universe.world());
    let (rank, size) = (comm.rank(), comm.size());
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a number"));
    let steps = args.next().unwrap_or(12);
    let threads = args.next().unwrap_or(2);
    let pool = keel::ThreadPool::builder()
        .threads(threads)
        .pin(false)
        .build()
        .expect("a pool");
    let work = if rank == 0 { 40_000 } else { 4_000 };
    let objects: Vec<(u64, Cell)> = (0..16)
        .map(|i| {
            let id = (rank * 16 + i) as u64;
            (
                id,
                Cell {
                    id,
                    steps: 0,
                    state: 0,
                    work,
                },
            )
        })
        .collect();
    let mut run = DistributedObjects::builder()
        .period(4)
        .build(&comm, &pool, objects)
        .unwrap_or_else(|r| panic!("{}", r.error));
    for s in 0..steps {
        let step = run.step().unwrap_or_else(|e| panic!("{e}"));
        if let (0, Some(r)) = (rank, &step.rebalance) {
            println!(
                "step {s}: lambda {:.3} -> {:.3}, {} objects move, {} bytes from rank 0",
                r.metrics.lambda_before, r.metrics.lambda_after, r.metrics.migrations, r.bytes_sent
            );
        }
        let mut ok = true;
        run.visit(|id, cell| ok &= cell.id == id && cell.steps == s as u64 + 1);
        assert!(ok, "rank {rank}: an object missed step {s}");
    }
    let objects = run.into_objects();
    let mut checksum = 0u64;
    for (id, cell) in &objects {
        assert_eq!(
            cell.state,
            expected_state(*id, steps as u64, cell.work),
            "object {id}"
        );
        checksum = checksum.wrapping_add(id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ cell.state);
    }
    println!(
        "rank {rank}/{size} objects {} steps {steps} checksum {checksum}",
        objects.len()
    );
    let mut mine = (objects.len() as u64).to_le_bytes().to_vec();
    mine.extend_from_slice(&checksum.to_le_bytes());
    let all = comm.all_gather(&mine).expect("gather");
    if rank == 0 {
        let count: u64 = all
            .iter()
            .map(|b| u64::from_le_bytes(b[..8].try_into().unwrap()))
            .sum();
        let sum = all.iter().fold(0u64, |acc, b| {
            acc.wrapping_add(u64::from_le_bytes(b[8..16].try_into().unwrap()))
        });
        println!("conserved all={count} checksum={sum}");
    }
}
