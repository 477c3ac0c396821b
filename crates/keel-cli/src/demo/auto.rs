//! The auto-selection section: `keel bench auto --quick`, two small
//! time-stepping loops, every fixed schedule, Oracle, ManualBest and the
//! four selection methods, run now.

use std::io::Write;

use keel_workloads::steps::stepped_workload;

use super::Section;
use crate::bench_auto::{self, AutoReport, QUICK_WORKLOADS};
use crate::error::CliError;
use keel_experiments::bench::loops::global_threads;

/// The auto sections, in demo order.
pub fn sections() -> Vec<Section> {
    vec![Section {
        name: "auto",
        title: "automatic schedule selection per loop (Auto4OMP), on two small time-stepping loops",
        look_for: "% degradation relative to Oracle (the best fixed schedule per instance): the methods against ManualBest; on phase-change the best schedule changes half-way, so no fixed schedule is best throughout.",
        body: auto,
    }]
}

fn auto(out: &mut dyn Write) -> Result<(), CliError> {
    let threads = global_threads()?;
    let mut workloads = Vec::new();
    for spec in QUICK_WORKLOADS {
        let w = stepped_workload(spec)?;
        workloads.push(bench_auto::bench_workload(
            w.as_ref(),
            1,
            threads,
            &mut |_| {},
        )?);
    }
    let report = AutoReport {
        threads,
        reps: 1,
        workloads,
    };
    bench_auto::write_report(out, &report, true)
}
