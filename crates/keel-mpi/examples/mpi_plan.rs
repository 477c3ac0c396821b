//! The plan-only API under MPI: every rank holds 16 objects, rank 0's ten
//! times heavier than the others'; one plan moves load off rank 0.
//!
//! ```sh
//! cargo build --release -p keel-mpi --features mpi --example mpi_plan
//! mpiexec -n 4 target/release/examples/mpi_plan
//! ```
//!
//! Each rank prints one line: `rank R/N exports E imports I ids A..B`,
//! then rank 0 the job's λ before and after. `mpi_plan bad R` makes rank R
//! pass a NaN weight (every rank then prints the same error and exits 3);
//! `mpi_plan die R` makes rank R panic before the plan (the job ends with
//! the panic's message, not a hang).

use keel_mpi::{plan, Collective, LocalObject, MpiComm, PlanRequest};

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    MpiComm::abort_job_on_panic();
    let comm = MpiComm::new(universe.world());
    let (rank, size) = (comm.rank(), comm.size());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let chosen = |what: &str| {
        args.first().is_some_and(|a| a == what)
            && args.get(1).and_then(|r| r.parse::<usize>().ok()) == Some(rank)
    };
    if chosen("die") {
        panic!("rank {rank} dies before the plan, as asked");
    }
    let weight = if rank == 0 { 10.0 } else { 1.0 };
    let mut objects: Vec<LocalObject> = (0..16)
        .map(|i| LocalObject {
            id: (rank * 16 + i) as u64,
            weight,
            size: 1024,
            migratable: true,
        })
        .collect();
    if chosen("bad") {
        objects[3].weight = f64::NAN;
    }
    match plan(
        &comm,
        &PlanRequest {
            spec: "greedy",
            ..PlanRequest::new(&objects)
        },
    ) {
        Ok(p) => {
            let kept: Vec<u64> = objects
                .iter()
                .zip(&p.destinations)
                .filter(|(_, &d)| d == rank)
                .map(|(o, _)| o.id)
                .collect();
            let ids: Vec<String> = p
                .imports
                .iter()
                .map(|t| format!("{}<{}", t.id, t.rank))
                .collect();
            println!(
                "rank {rank}/{size} exports {} imports {} keeps {} [{}]",
                p.exports.len(),
                p.imports.len(),
                kept.len(),
                ids.join(" ")
            );
            if rank == 0 {
                println!(
                    "lambda {:.4} -> {:.4} migrations {} bytes {}",
                    p.metrics.lambda_before,
                    p.metrics.lambda_after,
                    p.metrics.migrations,
                    p.metrics.bytes_moved
                );
            }
        }
        Err(e) => {
            println!("rank {rank}/{size} error: {e}");
            std::process::exit(3);
        }
    }
}
