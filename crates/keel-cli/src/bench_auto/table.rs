//! The text report: a Table-3-style summary, then each workload's detail.

use std::io::Write;

use keel_experiments::evaluation::oracle::degradation_percent;
use keel_policy::dls::AUTO4OMP_PORTFOLIO;
use keel_policy::select::Run;

use crate::error::CliError;
use crate::report;
use keel_experiments::bench::auto::{
    AutoReport, Goal, PerLoopGoals, VersusKeel, WorkloadReport, DISCRIMINATION, METHODS,
    PINNED_STATIC,
};

/// The tables: a Table-3-style summary, then each workload's detail.
pub fn write_report(out: &mut dyn Write, r: &AutoReport, brief: bool) -> Result<(), CliError> {
    writeln!(
        out,
        "keel bench auto: {} threads, {} repeat(s) of every configuration, taking turns step by step; every total sums each loop instance's median over the repeats; % degradation relative to Oracle (best fixed configuration per loop instance); {}",
        r.threads,
        r.reps,
        crate::progress::load_words(r.background_load)
    )?;
    // Summary: one column per workload.
    let mut header = vec!["".to_string()];
    header.extend(r.workloads.iter().map(|w| short_name(&w.spec)));
    let mut rows = vec![header];
    let mut row_of = |label: &str, pick: &dyn Fn(&WorkloadReport) -> String| {
        let mut row = vec![label.to_string()];
        row.extend(r.workloads.iter().map(pick));
        rows.push(row);
    };
    row_of("Oracle (time)", &|w| report::duration(w.oracle));
    row_of("ManualBest %", &|w| {
        format!("{:.1}", w.manual_best.degradation_percent)
    });
    for (k, method) in METHODS.iter().enumerate() {
        row_of(&format!("{method} %"), &|w| {
            format!("{:.1}", w.methods[k].result.degradation_percent)
        });
    }
    // One repeat (the demo, `--quick`) has neither a held-out Oracle nor
    // a noise estimate: no rows of dashes.
    if r.reps >= 2 {
        row_of("Oracle held out %", &|w| match w.oracle_held_out {
            Some(t) => format!("{:+.1}", degradation_percent(t, w.oracle)),
            None => "-".to_string(),
        });
        for (k, method) in METHODS.iter().enumerate().skip(1) {
            row_of(
                &format!("keel − {} (points)", short_method(method)),
                &|w| match &w.methods[k].versus_keel {
                    Some(v) => compact_versus(v),
                    None => "-".to_string(),
                },
            );
        }
    }
    row_of("best fixed %", &|w| {
        let best = w
            .fixed
            .iter()
            .min_by(|a, b| a.total.total_cmp(&b.total))
            .unwrap();
        format!("{:.1} {}", best.degradation_percent, best.config)
    });
    row_of("worst fixed %", &|w| {
        let worst = w
            .fixed
            .iter()
            .max_by(|a, b| a.total.total_cmp(&b.total))
            .unwrap();
        format!("{:.1} {}", worst.degradation_percent, worst.config)
    });
    row_of("spread (default chunks)", &|w| {
        let verdict = if w.balanced {
            "balanced"
        } else if w.spread >= DISCRIMINATION {
            "discriminates"
        } else {
            "does NOT discriminate"
        };
        format!("{:.0}% {verdict}", w.spread * 100.0)
    });
    row_of("mechanism (pinned static) %", &|w| {
        format!("{:+.1}", w.mechanism_cost_vs_static * 100.0)
    });
    // The goals, labelled by their own text: `auto / per-loop best <= 1.03`,
    // `every loop <= 1.05`.
    if let Some(first) = r.workloads.first() {
        for (k, goal) in first.per_loop.goals.iter().enumerate() {
            row_of(&format!("goal {}", goal.goal), &|w| {
                compact_goal(&w.per_loop.goals[k], k == 1, &w.per_loop)
            });
        }
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    for w in &r.workloads {
        writeln!(out)?;
        write_workload(out, w, brief)?;
    }
    Ok(())
}

/// A goal's value and verdict in a summary cell; the loop goal names its
/// worst loop.
fn compact_goal(g: &Goal, names_loop: bool, p: &PerLoopGoals) -> String {
    let verdict = if g.met { "met" } else { "MISSED" };
    if names_loop {
        format!("{:.3} {verdict} ({})", g.value, p.worst_loop)
    } else {
        format!("{:.3} {verdict}", g.value)
    }
}

fn short_method(method: &str) -> &str {
    method.strip_prefix("auto,").unwrap_or(method)
}

fn compact_versus(v: &VersusKeel) -> String {
    match v.noise_points {
        Some(half) => format!("{:+.1} ±{half:.1} {}", v.difference_points, v.verdict),
        None => format!("{:+.1} {}", v.difference_points, v.verdict),
    }
}

fn short_name(spec: &str) -> String {
    spec.split(':').next().unwrap_or(spec).to_string()
}

fn write_workload(out: &mut dyn Write, w: &WorkloadReport, brief: bool) -> Result<(), CliError> {
    writeln!(
        out,
        "{}: {} loop instances; Oracle {}",
        w.spec,
        w.instances,
        report::duration(w.oracle)
    )?;
    if let Some(held_out) = w.oracle_held_out {
        writeln!(
            out,
            "  Oracle held out (each instance's choice made from the other repeats, timed in the one left out): {} ({:+.1}%: Oracle's luck)",
            report::duration(held_out),
            degradation_percent(held_out, w.oracle)
        )?;
    }
    let manual: Vec<String> = w
        .manual_best_schedules
        .iter()
        .map(|(l, s)| format!("{l} = {s}"))
        .collect();
    writeln!(
        out,
        "  ManualBest ({}): {} ({:+.1}%)",
        manual.join(", "),
        report::duration(w.manual_best.total),
        w.manual_best.degradation_percent
    )?;
    for m in &w.methods {
        writeln!(
            out,
            "  {}: {} ({:+.1}%; repeats {:+.1} … {:+.1}%); exploration {} instances costing {} over Oracle",
            m.result.config,
            report::duration(m.result.total),
            m.result.degradation_percent,
            degradation_percent(m.repeat_totals[0], w.oracle),
            degradation_percent(m.repeat_totals[m.repeat_totals.len() - 1], w.oracle),
            m.exploration_instances,
            report::duration(m.exploration_cost.max(0.0)),
        )?;
        for (name, runs) in &m.timelines {
            writeln!(out, "    {name}: {}", timeline(runs))?;
        }
        if let Some(v) = m.versus_keel.as_ref().filter(|v| v.noise_points.is_some()) {
            writeln!(
                out,
                "    auto,keel − {}: {:+.1} ± {:.1} points (95 % interval of the paired repeats): {}",
                m.result.config,
                v.difference_points,
                v.noise_points.unwrap_or(f64::NAN),
                v.verdict
            )?;
        }
    }
    writeln!(
        out,
        "  selection mechanism ({PINNED_STATIC}) vs fixed static: {:+.1}% (median of paired repeats)",
        w.mechanism_cost_vs_static * 100.0
    )?;
    write_per_loop(out, &w.per_loop)?;
    if brief {
        return Ok(());
    }
    let mut rows = vec![[
        "fixed".to_string(),
        "total".to_string(),
        "% vs Oracle".to_string(),
    ]];
    for f in &w.fixed {
        rows.push([
            f.config.clone(),
            report::duration(f.total),
            format!("{:+.1}", f.degradation_percent),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// `auto,keel` loop by loop against each loop's best fixed configuration,
/// then the goals with their values.
fn write_per_loop(out: &mut dyn Write, p: &PerLoopGoals) -> Result<(), CliError> {
    writeln!(
        out,
        "  auto,keel per loop against the loop's best fixed configuration (either chunk; held out: chosen from the other repeats, timed in the one left out) and ManualBest's (default chunk):"
    )?;
    let mut rows = vec![[
        "loop".to_string(),
        "instances".to_string(),
        "auto,keel".to_string(),
        "best fixed".to_string(),
        "auto / best".to_string(),
        "held-out best".to_string(),
        "ManualBest".to_string(),
        "auto / ManualBest".to_string(),
    ]];
    for l in &p.loops {
        rows.push([
            l.name.clone(),
            l.instances.to_string(),
            report::duration(l.auto_keel),
            format!("{} {}", report::duration(l.best_fixed_total), l.best_fixed),
            format!("{:.3}", l.ratio),
            l.best_fixed_held_out
                .map_or("-".to_string(), report::duration),
            format!(
                "{} {}",
                report::duration(l.manual_best_total),
                l.manual_best
            ),
            format!("{:.3}", l.ratio_manual_best),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "    {line}")?;
    }
    for (k, g) in p.goals.iter().enumerate() {
        let detail = if k == 0 {
            let held_out = p
                .program_ratio_held_out
                .map_or(String::new(), |h| format!("held out {h:.3}; "));
            format!(
                "{} over {}; {held_out}over ManualBest {:.3}",
                report::duration(p.auto_keel),
                report::duration(p.per_loop_best),
                p.program_ratio_manual_best
            )
        } else {
            format!("worst loop {}", p.worst_loop)
        };
        writeln!(
            out,
            "  goal {}: {:.3} ({detail}): {}",
            g.goal,
            g.value,
            if g.met { "met" } else { "MISSED" }
        )?;
    }
    Ok(())
}

/// A loop's decisions in one line: exploring stretches are summarised by
/// their length, exploiting ones name their schedule.
fn timeline(runs: &[Run]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < runs.len() {
        let run = runs[k];
        if run.phase.is_exploration() {
            let mut end = k;
            while end + 1 < runs.len() && runs[end + 1].phase == run.phase {
                end += 1;
            }
            let last = runs[end].first + runs[end].len - 1;
            let span = if last == run.first {
                run.first.to_string()
            } else {
                format!("{}–{last}", run.first)
            };
            parts.push(format!("{span} {}", run.phase));
            k = end + 1;
        } else {
            let last = run.first + run.len - 1;
            let span = if run.len == 1 {
                run.first.to_string()
            } else {
                format!("{}–{last}", run.first)
            };
            parts.push(format!(
                "{span} {} ({})",
                AUTO4OMP_PORTFOLIO[run.index], run.phase
            ));
            k += 1;
        }
    }
    if parts.len() > 12 {
        let shown = parts[..12].join(", ");
        return format!("{shown}, … ({} more runs)", parts.len() - 12);
    }
    parts.join(", ")
}
