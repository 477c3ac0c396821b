//! Each schedule's time on one loop workload as the median of its paired
//! per-round ratios to a reference schedule, in one interleaved run: the
//! figure `docs/adaptive-factoring.md` quotes for `af` and `maf` on
//! `mandelbrot-edge`.
//!
//! ```text
//! cargo run --release -p keel-experiments --example paired_ratios -- \
//!     [--workload mandelbrot-edge] [--threads 2] [--rounds 15] [--steps 5] \
//!     [--reference ss] [SCHEDULE ...]
//! ```
//!
//! A round runs every schedule (the reference included) once, the starting
//! schedule rotating from round to round; each run is `steps` instances of
//! the loop under that schedule's own loop id (so the schedules that read
//! the loop's history or profile see their earlier instances, as a
//! time-stepping program's loop does), timed as a whole. The printed ratio
//! is the median over rounds of `time(schedule) / time(reference)` in the
//! same round, with the 10th and 90th percentiles beside it (lower nearest
//! rank, the same as `keel-policy`'s mapping bench).

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use keel::policy::stats::percentile;
use keel::{Schedule, ThreadPool};
use keel_workloads::loops::loop_workload;

const DEFAULT_SCHEDULES: &[&str] = &[
    "af",
    "maf",
    "fac",
    "mfac",
    "tap",
    "bold",
    "fsc",
    "awf",
    "awf-b",
    "awf-c",
    "awf-d",
    "awf-e",
    "wf",
    "fac2",
    "mfac2",
    "tss",
    "gss",
    "static",
    "static-steal",
];

struct Options {
    workload: String,
    threads: usize,
    rounds: usize,
    steps: usize,
    reference: String,
    schedules: Vec<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        workload: "mandelbrot-edge".into(),
        threads: 2,
        rounds: 15,
        steps: 5,
        reference: "ss".into(),
        schedules: Vec::new(),
    };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let number = |v: String, name: &str| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or(format!("{name} must be a whole number >= 1, not {v:?}"))
        };
        match a.as_str() {
            "--workload" => o.workload = value("--workload")?,
            "--threads" => o.threads = number(value("--threads")?, "--threads")?,
            "--rounds" => o.rounds = number(value("--rounds")?, "--rounds")?,
            "--steps" => o.steps = number(value("--steps")?, "--steps")?,
            "--reference" => o.reference = value("--reference")?,
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            _ => o.schedules.push(a),
        }
    }
    if o.schedules.is_empty() {
        o.schedules = DEFAULT_SCHEDULES.iter().map(|s| s.to_string()).collect();
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("paired_ratios: {e}");
            return ExitCode::from(2);
        }
    };
    let workload = match loop_workload(&o.workload) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("paired_ratios: {e}");
            return ExitCode::from(2);
        }
    };
    let mut names = vec![o.reference.clone()];
    names.extend(o.schedules.iter().filter(|s| **s != o.reference).cloned());
    let mut schedules = Vec::new();
    for name in &names {
        match name.parse::<Schedule>() {
            Ok(s) => schedules.push(s),
            Err(e) => {
                eprintln!("paired_ratios: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let pool = match ThreadPool::builder().threads(o.threads).build() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("paired_ratios: {e}");
            return ExitCode::from(1);
        }
    };
    let n = workload.iterations();
    let mut times = vec![Vec::with_capacity(o.rounds); names.len()];
    for round in 0..o.rounds {
        for k in 0..names.len() {
            let s = (round + k) % names.len();
            let began = Instant::now();
            for _ in 0..o.steps {
                pool.parallel(0..n)
                    .schedule(schedules[s].clone())
                    .id(format!("paired/{}", names[s]))
                    .for_each(|i| {
                        black_box(workload.run(i));
                    });
            }
            times[s].push(began.elapsed().as_secs_f64());
        }
    }
    println!(
        "{} on {} threads, {} rounds of {} instances; ratio = median of per-round time / {}'s",
        workload.spec(),
        o.threads,
        o.rounds,
        o.steps,
        o.reference
    );
    println!(
        "{:>14} {:>10} {:>8} {:>16}",
        "schedule", "median ms", "ratio", "[10 %, 90 %]"
    );
    for (s, name) in names.iter().enumerate() {
        let ratios: Vec<f64> = (0..o.rounds).map(|r| times[s][r] / times[0][r]).collect();
        let at = |values: &[f64], p| percentile(values, p).unwrap_or(f64::NAN);
        println!(
            "{name:>14} {:>10.2} {:>8.3} [{:.3}, {:.3}]",
            at(&times[s], 50) * 1e3 / o.steps as f64,
            at(&ratios, 50),
            at(&ratios, 10),
            at(&ratios, 90)
        );
    }
    ExitCode::SUCCESS
}
