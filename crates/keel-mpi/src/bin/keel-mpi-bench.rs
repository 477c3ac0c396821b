//! One run of `keel mpi bench`, on every rank of an MPI job: an object
//! workload (the Lassen-like proxy's front of expensive domains sweeping
//! the grid, or a hot band that stays, drifts or jumps; each domain's hot
//! work a potential-task loop) as distributed objects, under one
//! configuration; rank 0 prints one JSON line with what the run took.
//!
//! ```sh
//! mpiexec -n 4 keel-mpi-bench --config greedy-stealing --threads 1 [--workload lassen] [--quick]
//! ```
//!
//! Configurations (the Charm++ + OpenMP paper's Table 1 rows, and the
//! fixed period they used): `no-lb` (no balancing, no stealing), `greedy`
//! (greedy across ranks and among each rank's PUs when it pays: the
//! adaptive invocation), `greedy-stealing` (the same, with idle workers
//! stealing potential tasks inside each step), `greedy-periodic` (greedy
//! across ranks and among PUs every 50 steps). The objects start in blocks
//! of ids, one block per rank.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

use keel::objects::{Object, StepContext};
use keel_mpi::bench::{MpiRun, CONFIGS};
use keel_mpi::{Collective, DistributedObjects, MpiComm};
use keel_policy::invoke::Invocation;
use keel_workloads::objects::{object_workload, run_units, ObjectWorkload, INVOCATION_WORKLOADS};
use serde::{Deserialize, Serialize};

/// The balancing period of `greedy-periodic`, steps.
const PERIOD: usize = 50;
/// The exposure policy of the stealing configuration.
const STEALING: &str = "history-idle";

/// The workload, the same on every rank (a pure function of the job's
/// size and the flags).
static WORK: OnceLock<Box<dyn ObjectWorkload>> = OnceLock::new();

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

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Args {
    config: String,
    workload: String,
    threads: usize,
    quick: bool,
}

const USAGE: &str = "usage: keel-mpi-bench [--config no-lb|greedy|greedy-stealing|greedy-periodic] [--workload persistent|drift|phase|lassen] [--threads N] [--quick]";

/// What a command line means: the run, or the text to print instead (the
/// usage for `--help`, `Ok`; what is wrong, `Err`).
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, Result<String, String>> {
    let mut parsed = Args {
        config: "greedy".to_string(),
        workload: "lassen".to_string(),
        threads: 1,
        quick: false,
    };
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" => {
                parsed.config = args
                    .next()
                    .ok_or_else(|| Err("--config needs a configuration name".to_string()))?;
            }
            "--workload" => {
                parsed.workload = args
                    .next()
                    .ok_or_else(|| Err("--workload needs a workload name".to_string()))?;
            }
            "--threads" => {
                parsed.threads = args
                    .next()
                    .and_then(|t| t.parse().ok())
                    .filter(|&t| (1..=keel::pool::MAX_THREADS).contains(&t))
                    .ok_or_else(|| {
                        Err(format!(
                            "--threads needs a count from 1 to {}",
                            keel::pool::MAX_THREADS
                        ))
                    })?;
            }
            "--quick" => parsed.quick = true,
            "-h" | "--help" => return Err(Ok(USAGE.to_string())),
            other => return Err(Err(format!("unknown argument {:?}", shown(other)))),
        }
    }
    if !CONFIGS.contains(&parsed.config.as_str()) {
        return Err(Err(format!(
            "unknown configuration {:?} ({})",
            shown(&parsed.config),
            CONFIGS.join(", ")
        )));
    }
    if !INVOCATION_WORKLOADS.contains(&parsed.workload.as_str()) {
        return Err(Err(format!(
            "unknown workload {:?} ({})",
            shown(&parsed.workload),
            INVOCATION_WORKLOADS.join(", ")
        )));
    }
    Ok(parsed)
}

/// At most 80 characters of an argument, for a message about it.
fn shown(argument: &str) -> String {
    argument.chars().take(80).collect()
}

fn main() {
    // Read before MPI starts; every rank reads the same line, and only
    // rank 0 prints what it says instead of a run.
    let parsed = parse_args(std::env::args().skip(1));
    let universe = mpi::initialize().expect("MPI initialises once");
    let Args {
        config,
        workload,
        threads,
        quick,
    } = match parsed {
        Ok(args) => args,
        Err(text) => {
            let rank0 = MpiComm::new(universe.world()).rank() == 0;
            let code = match text {
                Ok(usage) => {
                    if rank0 {
                        println!("{usage}");
                    }
                    0
                }
                Err(problem) => {
                    if rank0 {
                        eprintln!("keel-mpi-bench: {problem}\n{USAGE}");
                    }
                    2
                }
            };
            // MPI finalises before the exit.
            drop(universe);
            std::process::exit(code);
        }
    };
    MpiComm::abort_job_on_panic();
    let comm = MpiComm::new(universe.world());
    let (rank, ranks) = (comm.rank(), comm.size());
    let (invocation, stealing) = match config.as_str() {
        "no-lb" => (Invocation::Never, "none"),
        "greedy" => (Invocation::Adaptive, "none"),
        "greedy-stealing" => (Invocation::Adaptive, STEALING),
        _ => (Invocation::every(PERIOD).expect("PERIOD ≥ 1"), "none"),
    };
    let spec = if quick {
        format!("{workload}:pus={},steps=100,scale=0.25", ranks * threads)
    } else {
        format!("{workload}:pus={}", ranks * threads)
    };
    let work = WORK.get_or_init(|| object_workload(&spec).expect("a pinned workload"));
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
    let mut builder = DistributedObjects::builder()
        .stealing(stealing)
        .invocation(invocation)
        .local_invocation(invocation);
    if invocation != Invocation::Never {
        builder = builder.rank_policy("greedy").local_policy("greedy");
    }
    let mut run = builder
        .build(&comm, &pool, objects)
        .unwrap_or_else(|r| panic!("{}", r.error));
    let began = Instant::now();
    let (mut steps_s, mut ideal_s) = (0.0, 0.0);
    let mut lambda = 0.0;
    let (mut rebalances, mut decide_s, mut migrate_s, mut migrations) = (0, 0.0, 0.0, 0);
    let steps = run.run(work.steps()).unwrap_or_else(|e| panic!("{e}"));
    let total_s = began.elapsed().as_secs_f64();
    for step in steps {
        steps_s += step.seconds;
        let mean = step.rank_seconds.iter().sum::<f64>() / ranks as f64;
        ideal_s += mean;
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
            steps: work.steps(),
            workload: work.spec(),
            total_s,
            steps_s,
            ideal_s,
            lambda_ranks: lambda / work.steps() as f64,
            rebalances,
            decide_s,
            migrate_s,
            migrations,
            checksum,
        };
        println!("{}", serde_json::to_string(&line).expect("serialisable"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &[&str]) -> Result<Args, Result<String, String>> {
        parse_args(line.iter().map(|s| s.to_string()))
    }

    #[test]
    fn help_and_bad_arguments_are_answered_not_panicked() {
        assert!(matches!(parse(&["--help"]), Err(Ok(usage)) if usage.starts_with("usage:")));
        assert!(matches!(parse(&["-h"]), Err(Ok(_))));
        for bad in [
            &["--bogus"][..],
            &["--config"],
            &["--config", "fastest"],
            &["--threads"],
            &["--threads", "0"],
            &["--threads", "many"],
            &["--threads", "99999999999999999999"],
        ] {
            assert!(matches!(parse(bad), Err(Err(_))), "{bad:?}");
        }
        for bad in [&["--workload"][..], &["--workload", "stencil"]] {
            assert!(matches!(parse(bad), Err(Err(_))), "{bad:?}");
        }
        let long = "x".repeat(5_000);
        let Err(Err(message)) = parse(&[&long]) else {
            panic!("a long argument is refused");
        };
        assert!(message.len() < 200, "{message}");
    }

    #[test]
    fn a_good_line_is_read() {
        assert_eq!(
            parse(&[
                "--config",
                "greedy-stealing",
                "--threads",
                "4",
                "--quick",
                "--workload",
                "drift"
            ]),
            Ok(Args {
                config: "greedy-stealing".into(),
                workload: "drift".into(),
                threads: 4,
                quick: true
            })
        );
        assert_eq!(
            parse(&[]),
            Ok(Args {
                config: "greedy".into(),
                workload: "lassen".into(),
                threads: 1,
                quick: false
            })
        );
    }
}
