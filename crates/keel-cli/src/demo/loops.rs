//! The loop section: a few schedules on the Mandelbrot loop (one iteration
//! per pixel column), run now on Keel's global pool, against the same body
//! run sequentially.

use std::io::Write;

use keel_workloads::loops::loop_workload;

use super::Section;
use crate::bench;
use crate::error::CliError;

/// Small enough for the whole section to take well under 2 s.
const MANDELBROT: &str = "mandelbrot:width=192,height=192,max-iter=500";

/// The schedules shown: block, self-scheduling, guided, factoring, an
/// adaptive one, and Keel's default.
const SCHEDULES: [&str; 6] = ["static", "dynamic,4", "guided", "fac2", "awf-b", "auto"];

/// Interleaved rounds, each one sequential run and one instance per
/// schedule (medians are shown).
const REPS: usize = 3;

/// The loop sections, in demo order.
pub fn sections() -> Vec<Section> {
    vec![Section {
        name: "loops",
        title: "Mandelbrot by pixel columns (the cardioid is a heavy band right of the middle), a few loop schedules",
        look_for: "static hands the heavy band to one thread (high LIB, ÷ ideal well above 1); dynamic, guided and factoring schedules come near 1.",
        body: mandelbrot,
    }]
}

fn mandelbrot(out: &mut dyn Write) -> Result<(), CliError> {
    let w = loop_workload(MANDELBROT)?;
    let threads = keel_experiments::bench::loops::global_threads()?;
    let schedules: Vec<String> = SCHEDULES.iter().map(|s| s.to_string()).collect();
    let result = keel_experiments::bench::loops::bench_workload(
        w.as_ref(),
        &schedules,
        None,
        REPS,
        threads,
        &mut |_| {},
    );
    writeln!(
        out,
        "{threads} threads (Keel's global pool), median of {REPS} interleaved rounds; ÷ ideal (same round) = T_par / (T_serial / P), T_serial from the same round; ÷ best = T_par / the round's fastest schedule"
    )?;
    bench::write_workload(out, &result)
}
