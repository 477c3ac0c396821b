//! A hybrid MPI + threads run of the SPHYNX-like stepped workload (the
//! Auto4OMP paper's SPHYNX study, §4): particles distributed statically
//! over the ranks in blocks, each rank's block of every loop call run by
//! its thread pool under a Keel schedule (`auto` selects per loop, per
//! rank), the ranks' partial results combined every step.
//!
//! ```sh
//! cargo build --release -p keel-mpi --features mpi --example mpi_sphynx
//! mpiexec -n 2 target/release/examples/mpi_sphynx --schedule auto --threads 8
//! ```
//!
//! Rank 0 prints one JSON line: the run's time, a checksum of every step's
//! results (the same under every schedule and rank count, up to rounding
//! of the ranks' partial sums) and whether every particle of every call
//! ran exactly once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use keel_mpi::{Collective, MpiComm};
use keel_workloads::steps::{Sphynx, SteppedWorkload};

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    MpiComm::abort_job_on_panic();
    let comm = MpiComm::new(universe.world());
    let (rank, ranks) = (comm.rank(), comm.size());
    let (mut schedule, mut threads, mut spec) =
        ("auto".to_string(), 2usize, String::from("sphynx"));
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--schedule" => schedule = value(),
            "--threads" => threads = value().parse().expect("--threads N"),
            "--workload" => spec = value(),
            other => panic!("unknown argument {other}"),
        }
    }
    let work = Sphynx::from_spec(&keel_policy::Spec::parse(&spec).expect("a spec"))
        .expect("a sphynx spec");
    let schedule: keel::Schedule = schedule.parse().expect("a schedule");
    let pool = keel::ThreadPool::builder()
        .threads(threads)
        .pin(false)
        .build()
        .expect("a pool");
    let began = Instant::now();
    let mut checksum = 0.0f64;
    let mut once = true;
    for step in 0..work.steps() {
        for (call, c) in work.calls(step).into_iter().enumerate() {
            // This rank's static block of the call's iterations.
            let (lo, hi) = (
                c.iterations * rank / ranks,
                c.iterations * (rank + 1) / ranks,
            );
            let mut results = vec![0.0f64; hi - lo];
            let runs: Vec<AtomicU32> = (lo..hi).map(|_| AtomicU32::new(0)).collect();
            pool.parallel(0..hi - lo)
                .schedule(schedule.clone())
                .id(c.name)
                .for_each_chunk_mut(&mut results, |start, chunk| {
                    for (k, r) in chunk.iter_mut().enumerate() {
                        runs[start + k].fetch_add(1, Ordering::Relaxed);
                        *r = work.run(step, call, lo + start + k);
                    }
                });
            once &= runs.iter().all(|n| n.load(Ordering::Relaxed) == 1);
            // In index order: the same sum whatever the schedule.
            let partial: f64 = results.iter().sum();
            let all = comm.all_gather(&partial.to_le_bytes()).expect("gather");
            let total: f64 = all
                .iter()
                .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap()))
                .sum();
            checksum += total * (step * 3 + call + 1) as f64;
        }
    }
    let total_s = began.elapsed().as_secs_f64();
    let flags = comm.all_gather(&[u8::from(once)]).expect("gather");
    if rank == 0 {
        println!(
            "{{\"ranks\":{ranks},\"threads\":{threads},\"schedule\":\"{schedule}\",\"steps\":{},\"total_s\":{total_s},\"checksum\":{checksum},\"once\":{}}}",
            work.steps(),
            flags.iter().all(|f| f[0] == 1)
        );
    }
}
