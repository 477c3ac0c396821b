//! `keel policies`: what can be named on the command line.

use std::io::Write;

use keel_workloads::generators;

use crate::error::CliError;

/// Runs `keel policies`.
pub fn run(out: &mut dyn Write) -> Result<(), CliError> {
    let registry = keel_policy::mapping::registry();
    writeln!(out, "Mapping policies (keel map --policy SPEC):")?;
    let width = registry
        .summaries()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    for (name, summary) in registry.summaries() {
        writeln!(out, "  {name:<width$}  {summary}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Workload generators (keel map --generate SPEC; each also takes pus=P and current=block|round-robin|greedy|none):"
    )?;
    let width = generators().iter().map(|g| g.name.len()).max().unwrap_or(0);
    for g in generators() {
        writeln!(out, "  {:<width$}  {}", g.name, g.summary)?;
        writeln!(out, "  {:<width$}  defaults: {}", "", g.params)?;
    }
    Ok(())
}
