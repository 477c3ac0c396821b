//! `apps` (§3.4's application mixes) and the text form of every scenario
//! table: the setup, the per-job rows, the class timeline.

use std::io::Write;

use keel_experiments::sim::cosched::{self as lab, Setup};
use keel_sim::cluster::scenarios::{ScenarioTable, FCS_GOAL};

use super::{tables, with_progress, AppsArgs, Common};
use crate::error::CliError;
use crate::report;

pub(super) fn apps(a: &AppsArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let setup = common.setup();
    let report = with_progress("sim cosched apps", common.quiet, |p| {
        lab::apps(&a.mix, &setup, p)
    })?;
    tables(&report, common, write_table, out)
}

pub(super) fn write_setup(out: &mut dyn Write, s: &Setup) -> Result<(), CliError> {
    let m = &s.model;
    writeln!(
        out,
        "keel sim cosched: latency {}, context switch {}, kernel {}: OS time slice {} (±{:.0} %), tick {}, wake-up {}, monitoring {} per call, T_comm clock {}, T_cpu clock {}; seed {}, iterations × {}",
        report::duration(m.net.latency),
        report::duration(m.cluster.context_switch),
        m.os.kernel,
        report::duration(m.os.quantum),
        m.os.quantum_jitter * 100.0,
        report::duration(m.os.tick),
        report::duration(m.os.wakeup),
        report::duration(m.monitor_cost),
        m.comm_clock.name(),
        m.cpu_clock.name(),
        s.seed,
        s.scale
    )?;
    if s.scale != 1.0 {
        writeln!(
            out,
            "(iterations scaled: a smoke run, not the paper's jobs; FCS needs ten assigned slots per process before it classifies)"
        )?;
    }
    Ok(())
}

/// The paper's spelling of a policy's name.
pub(super) fn label(policy: &str) -> String {
    match policy {
        "fcfs" | "gs" | "sb" | "fcs" => policy.to_uppercase(),
        "local" => "Local".into(),
        other => other.into(),
    }
}

pub(super) fn write_table(out: &mut dyn Write, t: &ScenarioTable) -> Result<(), CliError> {
    writeln!(out, "{}", t.title)?;
    let mut header = vec!["Algorithm".to_string()];
    header.extend(t.jobs.iter().map(|j| {
        let mut s = j.clone();
        if let Some(c) = s.get_mut(0..1) {
            c.make_ascii_uppercase();
        }
        s
    }));
    header.extend(["Max (s)".into(), "paper Max (s)".into(), "util".into()]);
    let mut rows = vec![header];
    for r in &t.rows {
        let name = match r.spec.split_once(':') {
            Some((_, params)) => format!("{}:{params}", label(&r.policy)),
            None => label(&r.policy),
        };
        let best = t.rows.iter().map(|x| x.max).fold(f64::INFINITY, f64::min);
        let mut row = vec![if r.max == best {
            format!("{name} *")
        } else {
            name
        }];
        row.extend(r.ends.iter().map(|e| format!("{e:.2}")));
        row.push(format!("{:.2}", r.max));
        row.push(r.paper_max.map_or("–".into(), |p| format!("{p:.2}")));
        row.push(format!("{:.3}", r.utilisation));
        rows.push(row);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    if let (Some(gap), Some(met)) = (t.fcs_gap, t.fcs_goal_met) {
        writeln!(
            out,
            "  best (*): {}; FCS {:+.2} % from the best ({} the ≤ {:.0} % target)",
            label(&t.best),
            gap * 100.0,
            report::meets(met),
            FCS_GOAL * 100.0
        )?;
    } else {
        writeln!(out, "  best (*): {}", label(&t.best))?;
    }
    if let Some(o) = &t.ordering {
        writeln!(
            out,
            "  order by Max — paper: {}; here: {}; {}/{} pairs agree",
            o.paper
                .iter()
                .map(|p| label(p))
                .collect::<Vec<_>>()
                .join(" < "),
            o.ours
                .iter()
                .map(|p| label(p))
                .collect::<Vec<_>>()
                .join(" < "),
            o.concordant,
            o.pairs
        )?;
        for (a, b, paper, ours) in &o.discordant {
            writeln!(
                out,
                "    {} vs {}: paper {:+.2} %, here {:+.2} %",
                label(a),
                label(b),
                paper,
                ours
            )?;
        }
    }
    if let Some(fcs) = t.rows.iter().find(|r| r.policy == "fcs") {
        let classes: Vec<String> = fcs
            .classes
            .iter()
            .enumerate()
            .map(|(j, c)| format!("job {j}: {}", summarise_classes(c)))
            .collect();
        writeln!(out, "  FCS classes (held longest): {}", classes.join("; "))?;
        writeln!(
            out,
            "  FCS class timeline: {}",
            timeline(&fcs.class_changes)
        )?;
    }
    Ok(())
}

/// Class changes grouped by time, job and change, the first few spelled
/// out: `0.475 s job 0 ranks 0-1 CS→DC; …`.
fn timeline(changes: &[keel_sim::cluster::ClassChange]) -> String {
    const SHOWN: usize = 6;
    let mut groups: Vec<(f64, usize, &str, &str, Vec<usize>)> = Vec::new();
    for c in changes {
        match groups.last_mut() {
            Some(g) if g.0 == c.time && g.1 == c.job && g.2 == c.from && g.3 == c.to => {
                g.4.push(c.rank)
            }
            _ => groups.push((c.time, c.job, c.from, c.to, vec![c.rank])),
        }
    }
    let mut parts: Vec<String> = groups
        .iter()
        .take(SHOWN)
        .map(|(t, job, from, to, ranks)| {
            let ranks = match (ranks.first(), ranks.last()) {
                (Some(a), Some(b)) if ranks.len() > 1 && b - a + 1 == ranks.len() => {
                    format!("ranks {a}-{b}")
                }
                _ => format!(
                    "rank{} {}",
                    if ranks.len() > 1 { "s" } else { "" },
                    ranks
                        .iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            };
            format!("{t:.3} s job {job} {ranks} {from}→{to}")
        })
        .collect();
    if groups.len() > SHOWN {
        parts.push(format!("… ({} changes in all)", changes.len()));
    }
    if parts.is_empty() {
        "no change (every process kept its first class)".into()
    } else {
        parts.join("; ")
    }
}

/// `CS CS F F`, or `64 × DC` / `60 CS + 4 F` for wide jobs.
fn summarise_classes(c: &[&str]) -> String {
    if c.len() <= 8 {
        return c.join(" ");
    }
    let mut parts = Vec::new();
    for class in ["CS", "F", "DC"] {
        let n = c.iter().filter(|&&x| x == class).count();
        if n > 0 {
            parts.push(format!("{n} {class}"));
        }
    }
    parts.join(" + ")
}
