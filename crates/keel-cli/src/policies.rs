//! `keel policies`: what can be named on the command line, family by family,
//! read from the policy registries so that a new policy shows up here
//! without touching this file.

use std::io::Write;

use keel_workloads::generators;
use serde::Serialize;

use crate::error::CliError;

/// `keel policies`.
#[derive(Debug, clap::Args)]
pub struct PoliciesArgs {
    /// Print one JSON object keyed by family instead of the lists.
    #[arg(long)]
    pub json: bool,

    /// No progress on stderr (this command prints none; accepted so that
    /// `--quiet` works on every command).
    #[arg(long)]
    pub quiet: bool,
}

/// One nameable thing and what it does.
#[derive(Debug, Serialize)]
struct Entry {
    name: String,
    summary: String,
    /// Default parameters, for the workload generators.
    #[serde(skip_serializing_if = "Option::is_none")]
    defaults: Option<String>,
}

/// One family: where its names go, and the names.
#[derive(Debug, Serialize)]
struct Family {
    /// The flag or variable that takes these names.
    used_by: &'static str,
    entries: Vec<Entry>,
}

fn entry(name: &str, summary: &str) -> Entry {
    Entry {
        name: name.to_string(),
        summary: summary.to_string(),
        defaults: None,
    }
}

fn from_registry<'a>(summaries: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<Entry> {
    summaries.map(|(n, s)| entry(n, s)).collect()
}

/// Every family, in the order they are printed: (key, heading, family).
fn families() -> Vec<(&'static str, &'static str, Family)> {
    use keel_policy::expose::Scheme;
    use keel_policy::select::Method;
    let method_summary = |m: Method| match m {
        Method::Keel => "Keel's own selection (what `auto` alone means)",
        Method::Expert => "Auto4OMP's ExpertSel: rules on the measured LIB",
        Method::Exhaustive => {
            "Auto4OMP's ExhaustiveSel: tries every portfolio schedule, keeps the best"
        }
        Method::Random => "Auto4OMP's RandomSel: a random portfolio schedule per instance",
    };
    let scheme_summary = |s: Scheme| match s {
        Scheme::None => "expose nothing: the owner runs every chunk (no stealing)",
        Scheme::All => "expose every chunk (plain work stealing)",
        Scheme::Idle => "only the idle-worker counter",
        Scheme::History => "only the stolen-to-local history",
        Scheme::HistoryIdle => "the larger of both (the Charm++ + OpenMP paper's scheme)",
    };
    let schemes = [
        Scheme::None,
        Scheme::All,
        Scheme::Idle,
        Scheme::History,
        Scheme::HistoryIdle,
    ];
    vec![
        (
            "mapping",
            "Mapping policies",
            Family {
                used_by: "keel map --policy SPEC",
                entries: from_registry(keel_policy::mapping::registry().summaries()),
            },
        ),
        (
            "loop_schedules",
            "Loop schedules",
            Family {
                used_by: "keel bench loops --schedule SPEC, KEEL_SCHEDULE",
                entries: from_registry(keel_policy::dls::registry().summaries()),
            },
        ),
        (
            "auto_methods",
            "Schedule selection methods",
            Family {
                used_by: "auto,METHOD as a loop schedule",
                entries: Method::ALL
                    .into_iter()
                    .map(|m| entry(m.name(), method_summary(m)))
                    .collect(),
            },
        ),
        (
            "farm_dispatch",
            "Farm dispatch policies",
            Family {
                used_by: "keel sim farm --policy SPEC",
                entries: from_registry(keel_policy::farm::registry().summaries()),
            },
        ),
        (
            "exposure",
            "Stealing exposure schemes",
            Family {
                used_by: "keel sim objects --stealing SPEC",
                entries: schemes
                    .into_iter()
                    .map(|s| entry(s.name(), scheme_summary(s)))
                    .collect(),
            },
        ),
        (
            "cosched",
            "Co-scheduling policies",
            Family {
                used_by: "keel cosched run, keel sim cosched",
                entries: from_registry(keel_policy::cosched::registry().summaries()),
            },
        ),
        (
            "generators",
            "Workload generators (each also takes pus=P and current=block|round-robin|greedy|none)",
            Family {
                used_by: "keel map --generate SPEC",
                entries: generators()
                    .iter()
                    .map(|g| Entry {
                        name: g.name.to_string(),
                        summary: g.summary.to_string(),
                        defaults: Some(g.params.to_string()),
                    })
                    .collect(),
            },
        ),
    ]
}

/// Runs `keel policies`.
pub fn run(args: &PoliciesArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let families = families();
    if args.json {
        let object: serde_json::Map<String, serde_json::Value> = families
            .into_iter()
            .map(|(key, _, family)| Ok((key.to_string(), serde_json::to_value(family)?)))
            .collect::<Result<_, serde_json::Error>>()?;
        serde_json::to_writer_pretty(&mut *out, &object)?;
        writeln!(out)?;
        return Ok(());
    }
    for (i, (_, heading, family)) in families.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{heading} ({}):", family.used_by)?;
        let width = family
            .entries
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0);
        for e in &family.entries {
            writeln!(out, "  {:<width$}  {}", e.name, e.summary)?;
            if let Some(defaults) = &e.defaults {
                writeln!(out, "  {:<width$}  defaults: {defaults}", "")?;
            }
        }
    }
    Ok(())
}
