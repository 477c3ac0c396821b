//! The report: what the harness measured, as JSON (`serde`) or as the
//! tables `keel-bench-loops` prints.

use std::io::{self, Write};

use serde::Serialize;

use crate::harness::{Config, Runtime};
use crate::stats::Summary;

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Threads of every runtime.
    pub threads: usize,
    /// Cores the machine offers.
    pub cores: usize,
    /// Recorded rounds.
    pub rounds: usize,
    /// Iterations of each loop (`iters_per_thread × threads`).
    pub iterations: u64,
    /// Seconds of one delay unit (one float addition) on this machine.
    pub seconds_per_delay_unit: f64,
    /// How Keel's workers wait.
    pub keel_wait_policy: String,
    /// Why there is no libgomp column (`None`: there is one).
    pub libgomp: Option<String>,
    /// `OMP_WAIT_POLICY` as libgomp read it (when built in).
    pub libgomp_wait_policy: Option<String>,
    /// The configuration.
    pub config: Config,
    /// Each delay: its length and its measured sequential reference.
    pub delays: Vec<DelayRow>,
    /// (a) EPCC overhead per chunk, Keel vs libgomp vs rayon.
    pub overhead: Vec<OverheadRow>,
    /// (b) Empty parallel loop (fork + join) latency.
    pub latency: Vec<LatencyRow>,
    /// Keel / libgomp for the empty loops.
    pub latency_ratios: Vec<RatioRow>,
    /// (c) Keel's schedules, per-chunk overhead against `ss`.
    pub adaptive: Vec<AdaptiveRow>,
    /// (d) One `Instant::now()`, ns.
    pub instant_now_ns: Option<Summary>,
    /// (d) One `Instant::now()` and `elapsed()` pair (what a timed chunk
    /// reads), ns.
    pub clock_pair_ns: Option<Summary>,
    /// (e) The loop runtime's cost goals, round by round.
    pub goals: Vec<GoalRow>,
    /// CPUs' worth of time other processes used during each recorded round
    /// (0 on a quiet machine; empty where `/proc` is unreadable).
    pub other_load_cpus: Vec<f64>,
    /// CPUs' worth of time the hypervisor stole during each round.
    pub steal_cpus: Vec<f64>,
    /// Threads the process had in each runtime's block (first recorded
    /// round): only the measured runtime has live workers.
    pub isolation: Vec<String>,
    /// Wall time of the whole run, seconds.
    pub seconds: f64,
}

/// A delay and its reference.
#[derive(Clone, Debug, Serialize)]
pub struct DelayRow {
    /// Target delay per iteration, µs.
    pub target_us: f64,
    /// Delay length (float additions) calibrated for it.
    pub length: u32,
    /// Sequential reference per loop (`iters_per_thread` delays), Rust, µs.
    pub rust_reference_us: Option<Summary>,
    /// The same in C (libgomp build only), µs.
    pub c_reference_us: Option<Summary>,
}

/// One runtime's result for one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Chunks per loop (median over rounds).
    pub chunks: Option<f64>,
    /// EPCC overhead divided by the chunks, ns.
    pub per_chunk_ns: Option<Summary>,
    /// EPCC overhead per loop (test − reference), µs.
    pub per_loop_us: Option<Summary>,
    /// Why it did not run (a schedule that does not parse, …).
    pub error: Option<String>,
}

/// One row of the head-to-head table.
#[derive(Clone, Debug, Serialize)]
pub struct OverheadRow {
    /// Delay per iteration, µs.
    pub delay_us: f64,
    /// The OpenMP schedule.
    pub schedule: String,
    /// How rayon runs it.
    pub rayon_mapping: String,
    /// Keel.
    pub keel: Cell,
    /// libgomp (`None` when not built in).
    pub libgomp: Option<Cell>,
    /// rayon.
    pub rayon: Cell,
    /// Median per-chunk overhead, Keel / libgomp.
    pub keel_over_libgomp: Option<f64>,
    /// Median per-chunk overhead, Keel / rayon.
    pub keel_over_rayon: Option<f64>,
}

/// One empty-loop measurement.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyRow {
    /// The runtime.
    pub runtime: Runtime,
    /// What was timed.
    pub what: String,
    /// ns per call.
    pub ns: Option<Summary>,
    /// Calls per sample.
    pub reps: u64,
    /// Why it did not run.
    pub error: Option<String>,
}

/// A Keel / libgomp ratio of medians.
#[derive(Clone, Debug, Serialize)]
pub struct RatioRow {
    /// What is compared.
    pub what: String,
    /// The ratio, when the denominator is positive.
    pub keel_over_libgomp: Option<f64>,
}

/// One Keel schedule of the adaptive table.
#[derive(Clone, Debug, Serialize)]
pub struct AdaptiveRow {
    /// Delay per iteration, µs.
    pub delay_us: f64,
    /// The schedule.
    pub schedule: String,
    /// Its measurements.
    pub cell: Cell,
    /// Its median per-chunk overhead over `ss`'s.
    pub per_chunk_over_ss: Option<f64>,
    /// Its overhead beyond `static`'s, per chunk beyond `static`'s, ns
    /// (medians): what one more chunk costs, without the fork and join.
    pub marginal_per_chunk_ns: Option<f64>,
    /// That marginal cost over `ss`'s.
    pub marginal_over_ss: Option<f64>,
}

/// One cost goal: a figure computed in every round from that round's
/// samples, its median over rounds, and the bound it is held to.
#[derive(Clone, Debug, Serialize)]
pub struct GoalRow {
    /// What is compared.
    pub what: String,
    /// The figure over rounds (median, range).
    pub value: Option<Summary>,
    /// The largest median that meets the goal.
    pub at_most: f64,
    /// Whether the median meets it (`None`: no figure).
    pub met: Option<bool>,
}

impl GoalRow {
    /// A goal met when `value`'s median is at most `bound`.
    pub fn at_most(what: &str, value: Option<Summary>, bound: f64) -> GoalRow {
        GoalRow {
            what: what.to_string(),
            value,
            at_most: bound,
            met: value.map(|v| v.median <= bound),
        }
    }
}

/// Other processes' CPU use above which a round counts as disturbed.
pub const DISTURBED: f64 = 0.1;

/// A number with 3 significant digits or so.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "–".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// `median [min – max]`.
pub fn summary(s: Option<Summary>) -> String {
    match s {
        Some(s) => format!("{} [{} – {}]", num(s.median), num(s.min), num(s.max)),
        None => "–".into(),
    }
}

fn ratio(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}"))
}

fn cell_text(c: &Cell) -> String {
    match &c.error {
        Some(e) if c.per_chunk_ns.is_none() => format!("error: {e}"),
        _ => summary(c.per_chunk_ns),
    }
}

fn chunks_text(c: Option<&Cell>) -> String {
    c.and_then(|c| c.chunks).map_or("–".into(), |x| {
        if x.fract() == 0.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    })
}

/// Writes `rows` as a table under `header` and a rule of dashes, columns
/// left-aligned and padded to their widest cell (counted in characters).
pub fn table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let mut all = Vec::with_capacity(rows.len() + 1);
    all.push(
        header
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<String>>(),
    );
    all.extend(rows.iter().cloned());
    for line in keel::table::TableStyle::RULED.lines(&all) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

impl Report {
    /// Prints the tables.
    pub fn write_tables(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "keel-bench-loops: {} threads on {} cores, {} rounds interleaved in one process, loops of {} iterations",
            self.threads, self.cores, self.rounds, self.iterations
        )?;
        writeln!(
            out,
            "waiting: Keel {}; libgomp OMP_WAIT_POLICY={}; rayon: its own (spin, then sleep)",
            self.keel_wait_policy,
            self.libgomp_wait_policy.as_deref().unwrap_or("–")
        )?;
        if let Some(why) = &self.libgomp {
            writeln!(out, "libgomp: {why}")?;
        }
        if let Some(load) = Summary::of(&self.other_load_cpus) {
            let disturbed = self
                .other_load_cpus
                .iter()
                .filter(|&&x| x > DISTURBED)
                .count();
            writeln!(
                out,
                "machine load: other processes used {} CPUs per round; {} of {} rounds above {DISTURBED} CPU{}; steal {} CPUs",
                summary(Some(load)),
                disturbed,
                self.other_load_cpus.len(),
                if disturbed > 0 { " (those rounds are disturbed: rerun on a quiet machine)" } else { "" },
                summary(Summary::of(&self.steal_cpus)),
            )?;
        }
        writeln!(
            out,
            "Every number: median [min – max] over rounds. Overhead is EPCC's: (T_loop − T_ref), T_ref = one thread's share run sequentially."
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "Delays (EPCC delay loop; one unit = {} ns):",
            num(self.seconds_per_delay_unit * 1e9)
        )?;
        let rows: Vec<Vec<String>> = self
            .delays
            .iter()
            .map(|d| {
                vec![
                    format!("{} µs", num(d.target_us)),
                    d.length.to_string(),
                    summary(d.rust_reference_us),
                    summary(d.c_reference_us),
                ]
            })
            .collect();
        table(
            out,
            &["delay", "length", "T_ref Rust, µs", "T_ref C, µs"],
            &rows,
        )?;

        writeln!(out)?;
        writeln!(
            out,
            "(a) Overhead per chunk, ns: (T_loop − T_ref) / chunks. chunks = Keel / libgomp / rayon pieces per loop."
        )?;
        let rows: Vec<Vec<String>> = self
            .overhead
            .iter()
            .map(|r| {
                vec![
                    format!("{} µs", num(r.delay_us)),
                    r.schedule.clone(),
                    format!(
                        "{} / {} / {}",
                        chunks_text(Some(&r.keel)),
                        chunks_text(r.libgomp.as_ref()),
                        chunks_text(Some(&r.rayon))
                    ),
                    cell_text(&r.keel),
                    r.libgomp.as_ref().map_or("–".into(), cell_text),
                    cell_text(&r.rayon),
                    ratio(r.keel_over_libgomp),
                    ratio(r.keel_over_rayon),
                ]
            })
            .collect();
        table(
            out,
            &[
                "delay",
                "schedule",
                "chunks",
                "Keel",
                "libgomp",
                "rayon",
                "Keel/libgomp",
                "Keel/rayon",
            ],
            &rows,
        )?;
        writeln!(out, "Overhead per loop, µs (T_loop − T_ref):")?;
        let rows: Vec<Vec<String>> = self
            .overhead
            .iter()
            .map(|r| {
                vec![
                    format!("{} µs", num(r.delay_us)),
                    r.schedule.clone(),
                    summary(r.keel.per_loop_us),
                    r.libgomp
                        .as_ref()
                        .map_or("–".into(), |c| summary(c.per_loop_us)),
                    summary(r.rayon.per_loop_us),
                    r.rayon_mapping.clone(),
                ]
            })
            .collect();
        table(
            out,
            &[
                "delay",
                "schedule",
                "Keel",
                "libgomp",
                "rayon",
                "rayon runs it as",
            ],
            &rows,
        )?;

        writeln!(out)?;
        writeln!(
            out,
            "(b) Empty parallel loop latency (fork + join), ns per call:"
        )?;
        let rows: Vec<Vec<String>> = self
            .latency
            .iter()
            .map(|r| {
                vec![
                    format!("{:?}", r.runtime),
                    r.what.clone(),
                    match &r.error {
                        Some(e) => format!("error: {e}"),
                        None => summary(r.ns),
                    },
                ]
            })
            .collect();
        table(out, &["runtime", "what", "ns"], &rows)?;
        for r in &self.latency_ratios {
            writeln!(out, "{}: {}", r.what, ratio(r.keel_over_libgomp))?;
        }

        writeln!(out)?;
        writeln!(
            out,
            "(c) Keel schedules on the same loop: EPCC overhead per chunk, and the marginal cost of a chunk"
        )?;
        writeln!(
            out,
            "    = (overhead − static's) / (chunks − static's chunks), both against ss (`dynamic`, chunk 1):"
        )?;
        let rows: Vec<Vec<String>> = self
            .adaptive
            .iter()
            .map(|r| {
                vec![
                    format!("{} µs", num(r.delay_us)),
                    r.schedule.clone(),
                    chunks_text(Some(&r.cell)),
                    cell_text(&r.cell),
                    summary(r.cell.per_loop_us),
                    ratio(r.per_chunk_over_ss),
                    r.marginal_per_chunk_ns.map_or("–".into(), num),
                    ratio(r.marginal_over_ss),
                ]
            })
            .collect();
        table(
            out,
            &[
                "delay",
                "schedule",
                "chunks",
                "per chunk, ns",
                "per loop, µs",
                "per chunk / ss",
                "marginal, ns",
                "marginal / ss",
            ],
            &rows,
        )?;

        writeln!(out)?;
        writeln!(
            out,
            "(d) One Instant::now(): {} ns; one Instant::now() + elapsed() pair: {} ns",
            summary(self.instant_now_ns),
            summary(self.clock_pair_ns)
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "(e) Goals: each figure computed per round from that round's samples; median [min – max] over rounds:"
        )?;
        let rows: Vec<Vec<String>> = self
            .goals
            .iter()
            .map(|g| {
                vec![
                    g.what.clone(),
                    summary(g.value),
                    format!("≤ {}", num(g.at_most)),
                    match g.met {
                        Some(true) => "met".into(),
                        Some(false) => "NOT MET".into(),
                        None => "no figure".into(),
                    },
                ]
            })
            .collect();
        table(out, &["goal", "figure", "bound", ""], &rows)?;
        writeln!(out)?;
        for line in &self.isolation {
            writeln!(out, "isolation: {line}")?;
        }
        writeln!(out, "run took {:.1} s", self.seconds)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_tables() {
        assert_eq!(num(1234.5), "1234");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(-0.1234), "-0.123");
        assert_eq!(num(f64::NAN), "–");
        let mut out = Vec::new();
        table(
            &mut out,
            &["a", "bb"],
            &[
                vec!["µµµ".into(), "x".into()],
                vec!["1".into(), "yy".into()],
            ],
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "a    bb\n---  --\nµµµ  x\n1    yy\n");
    }
}
