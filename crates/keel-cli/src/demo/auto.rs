//! The auto-selection section: `keel bench auto --quick`, two small
//! time-stepping loops, every fixed schedule, Oracle, ManualBest and the
//! four selection methods, run now.

use std::io::Write;

use keel_experiments::bench::auto::{self, AutoConfig};

use super::Section;
use crate::bench_auto;
use crate::error::CliError;

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
    // `keel bench auto --quick`: the two quick workloads, one repeat.
    let config = AutoConfig {
        quick: true,
        ..AutoConfig::default()
    };
    let report = auto::run(&config, &mut |_| {})?;
    bench_auto::write_report(out, &report, true)
}
