//! `keel sim rank-scale`: a balancing step across 64, 1,024 and 16,384
//! ranks with 64 and 1,024 objects each, one level (every rank gathers
//! every record) against the tree (groups of ranks; leaders gather their
//! members' objects, one summary per group crosses the top): the decision
//! measured on this machine, the messages modelled with the simulator's
//! network link, the bytes each rank receives, and the makespan the plan
//! leaves against the ideal.

use std::io::Write;

use keel_experiments::sim::rank_scale::{self, RankScaleConfig};

use crate::error::CliError;
use crate::report;

/// `keel sim rank-scale`.
#[derive(Debug, clap::Args)]
pub struct RankScaleArgs {
    /// Rank counts.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 1024, 16384], value_parser = super::bounds::count)]
    pub ranks: Vec<usize>,

    /// Objects per rank.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 1024], value_parser = super::bounds::count)]
    pub objects: Vec<usize>,

    /// Ranks per group of the tree (default: ⌈√ranks⌉).
    #[arg(long, value_name = "G")]
    pub group: Option<usize>,

    /// The policy of the one-level decision and of each group's placement.
    #[arg(long, default_value = "greedy-refine")]
    pub policy: String,

    /// Problems with more objects skip the one-level row.
    #[arg(long, value_name = "N", default_value_t = 1 << 24)]
    pub one_level_max: usize,

    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `keel sim rank-scale`.
pub fn run(args: &RankScaleArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = RankScaleConfig {
        ranks: args.ranks.clone(),
        objects_per_rank: args.objects.clone(),
        group: args.group,
        policy: args.policy.clone(),
        one_level_max_objects: args.one_level_max,
        ..RankScaleConfig::default()
    };
    let quiet = args.quiet;
    let r = rank_scale::run(&config, &mut |line| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "keel sim rank-scale: {line}");
        }
    })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &r)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "keel sim rank-scale: policy {}; decisions measured here, messages modelled ({} per message, {:.1} GB/s per link)",
        args.policy,
        report::duration(r.latency),
        r.bandwidth / 1e9
    )?;
    writeln!(
        out,
        "received: data each rank receives; + sizes: what an MPI layer's variable-size collectives add (4 bytes per rank per operation)"
    )?;
    let mut rows = vec![[
        "ranks × objects".to_string(),
        "shape".into(),
        "decide".into(),
        "messages".into(),
        "step".into(),
        "received (non-leader)".into(),
        "received (leader)".into(),
        "+ sizes".into(),
        "makespan ÷ ideal".into(),
        "before".into(),
        "moved".into(),
    ]];
    for x in &r.rows {
        rows.push([
            format!("{} × {}", x.ranks, x.objects_per_rank),
            x.shape.clone(),
            report::duration(x.decide_s),
            report::duration(x.messages_s),
            report::duration(x.step_s),
            bytes(x.bytes_non_leader),
            bytes(x.bytes_leader),
            bytes(x.count_bytes),
            format!("{:.3}", x.makespan_over_ideal),
            format!("{:.3}", x.before_over_ideal),
            x.migrations.to_string(),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
