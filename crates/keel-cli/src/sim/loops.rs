//! `keel sim loops`: loop schedules at the Auto4OMP paper's scale, which this
//! 2-core machine cannot reach, on the pinned SPHYNX-like L1
//! (`keel_sim::loops::sphynx_l1`: N = 1,000,000, costs in spin units times
//! the calibrated seconds per unit, dispatch overhead from the calibration):
//!
//! 1. **Bathtub (Fig. 1).** One instance of L1 at P = 20 under `static,k`,
//!    `dynamic,k` and `guided,k` for k = N/(2P), halved down to 1. Large
//!    chunks leave threads idle at the end; small ones queue on the shared
//!    counter (the calibrated contention). The expert chunk (48 here) should
//!    sit near the bottom.
//! 2. **Selection vs Oracle (Table 3).** L1 over its time steps at P = 20
//!    and 64: every portfolio schedule with its default chunk and with the
//!    expert chunk, then each method `auto,keel|expert|exhaustive|random`.
//!    Oracle is the best fixed configuration per instance, ManualBest the
//!    best default-chunk schedule over the run; every row is % degradation
//!    relative to Oracle, as `keel bench auto` reports it on threads.
//!
//! With `--trace FILE` it simulates the user's own loops instead (formats
//! in `keel-sim`'s README): every instance in file order, per schedule.

use std::io::Write;
use std::path::{Path, PathBuf};

use keel_policy::dls::AUTO4OMP_PORTFOLIO;
use keel_policy::select::{degradation_percent, expert_chunk, LoopTimes};
use keel_sim::loops::sphynx_l1::{self, SphynxL1};
use keel_sim::loops::{Call, IterationCosts, Machine, Stepper};
use keel_sim::{Noise, OverheadModel, WorkerModel};
use serde::Serialize;

use super::{load_calibration, progress, sim_error};
use crate::error::CliError;
use crate::report;

/// The bathtub's schedules (the paper's Fig. 1: STATIC, SS, GSS).
pub const BATHTUB_SCHEDULES: [&str; 3] = ["static", "dynamic", "guided"];

/// The selection methods, in report order.
pub const METHODS: [&str; 4] = ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"];

/// The expert chunk counts as "near the bottom" within this factor of the
/// best chunk's time.
pub const NEAR_BOTTOM: f64 = 1.10;

/// `keel sim loops`.
#[derive(Debug, clap::Args)]
pub struct LoopsArgs {
    /// Worker counts of the selection experiment.
    #[arg(long, value_delimiter = ',', default_values_t = [20usize, 64])]
    pub threads: Vec<usize>,

    /// Time steps of the selection experiment (default: the pinned 20).
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,

    /// Only the bathtub.
    #[arg(long)]
    pub bathtub_only: bool,

    /// Coefficient of variation of every chunk's time (normal noise, mean 1).
    #[arg(long, default_value_t = 0.0, value_parser = super::bounds::cv)]
    pub noise_cv: f64,

    /// Seed of the noise (and of RandomSel's stream).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// A calibration file (default: the committed one).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    /// Write the bathtub curves to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Simulate this CSV/JSON trace of per-iteration costs instead.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// With --trace: schedules (default: the Auto4OMP portfolio).
    #[arg(short, long = "schedule", value_name = "SPEC")]
    pub schedules: Vec<String>,

    /// With --trace: workers.
    #[arg(long, value_name = "P", default_value_t = 20)]
    pub trace_threads: usize,

    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// One chunk size of the bathtub.
#[derive(Debug, Clone, Serialize)]
pub struct BathtubPoint {
    /// The chunk parameter.
    pub chunk: u64,
    /// Simulated T_par per schedule, seconds, in [`BATHTUB_SCHEDULES`] order.
    pub t_par: Vec<f64>,
}

/// The bathtub experiment.
#[derive(Debug, Clone, Serialize)]
pub struct Bathtub {
    /// Workers.
    pub threads: usize,
    /// The expert chunk for N and P.
    pub expert_chunk: u64,
    /// Points, largest chunk first.
    pub points: Vec<BathtubPoint>,
    /// Per schedule: the best chunk, its time, the expert chunk's time over it.
    pub best: Vec<(String, u64, f64, f64)>,
}

/// One configuration's outcome against Oracle.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigRow {
    /// `static`, `static+expert`, `auto,keel`, …
    pub config: String,
    /// Simulated seconds over every instance.
    pub total: f64,
    /// (total − Oracle)/Oracle · 100.
    pub degradation_percent: f64,
    /// For methods: the schedule chosen at the last instance.
    pub last_choice: Option<String>,
    /// For methods: instances spent exploring.
    pub exploration_instances: Option<u64>,
}

/// Selection at one P.
#[derive(Debug, Clone, Serialize)]
pub struct Selection {
    /// Workers.
    pub threads: usize,
    /// Instances (time steps).
    pub instances: usize,
    /// Oracle's total.
    pub oracle: f64,
    /// ManualBest: its schedule and total.
    pub manual_best: ConfigRow,
    /// Every fixed configuration.
    pub fixed: Vec<ConfigRow>,
    /// Every method.
    pub methods: Vec<ConfigRow>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct LoopsReport {
    /// The workload's spec.
    pub workload: String,
    /// Iterations.
    pub iterations: usize,
    /// Seconds per spin unit used.
    pub spin_unit_seconds: f64,
    /// The overhead model used.
    pub overhead: OverheadModel,
    /// Calibration date.
    pub calibration_date: String,
    /// Fig. 1.
    pub bathtub: Bathtub,
    /// Table 3, per P.
    pub selection: Vec<Selection>,
}

fn machine(threads: usize, overhead: OverheadModel, cv: f64) -> Result<Machine, CliError> {
    let noise = if cv > 0.0 {
        Noise::Normal { cv }
    } else {
        Noise::None
    };
    let worker = WorkerModel::with(1.0, noise, &[]).map_err(sim_error)?;
    Machine::new(vec![worker; threads], overhead).map_err(sim_error)
}

/// k = N/(2P), halved (rounding down) to 1.
pub fn bathtub_chunks(n: u64, p: u64) -> Vec<u64> {
    let mut k = (n / (2 * p)).max(1);
    let mut chunks = vec![k];
    while k > 1 {
        k /= 2;
        chunks.push(k.max(1));
    }
    chunks
}

fn bathtub(
    costs: &IterationCosts,
    args: &LoopsArgs,
    overhead: OverheadModel,
    tick: &mut dyn FnMut(&str),
) -> Result<Bathtub, CliError> {
    let p = 20;
    let m = machine(p, overhead, args.noise_cv)?;
    let n = costs.len();
    let mut points = Vec::new();
    for k in bathtub_chunks(n, p as u64) {
        let mut t_par = Vec::new();
        for s in BATHTUB_SCHEDULES {
            tick(&format!("bathtub {s},{k}"));
            let mut stepper =
                Stepper::new(m.clone(), &format!("{s},{k}"), args.seed).map_err(sim_error)?;
            t_par.push(stepper.run("l1", costs).map_err(sim_error)?.t_par);
        }
        points.push(BathtubPoint { chunk: k, t_par });
    }
    let expert = expert_chunk(n, p).unwrap_or(1);
    let best = BATHTUB_SCHEDULES
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (chunk, t) = points
                .iter()
                .map(|pt| (pt.chunk, pt.t_par[i]))
                .fold((0, f64::INFINITY), |b, x| if x.1 < b.1 { x } else { b });
            let at_expert = points
                .iter()
                .find(|pt| pt.chunk == expert)
                .map_or(f64::NAN, |pt| pt.t_par[i]);
            (s.to_string(), chunk, t, at_expert / t)
        })
        .collect();
    Ok(Bathtub {
        threads: p,
        expert_chunk: expert,
        points,
        best,
    })
}

fn selection(
    costs: &[IterationCosts],
    threads: usize,
    args: &LoopsArgs,
    overhead: OverheadModel,
    tick: &mut dyn FnMut(&str),
) -> Result<Selection, CliError> {
    let m = machine(threads, overhead, args.noise_cv)?;
    let n = costs.first().map_or(0, |c| c.len());
    let expert = expert_chunk(n, threads);
    let run_all = |setting: &str, chunk: Option<u64>, tick: &mut dyn FnMut(&str)| {
        let mut stepper = Stepper::new(m.clone(), setting, args.seed).map_err(sim_error)?;
        let mut times = Vec::with_capacity(costs.len());
        for c in costs {
            tick(&format!("P={threads} {setting}"));
            let call = Call { chunk, hints: None };
            times.push(stepper.run_with("l1", c, call).map_err(sim_error)?.t_par);
        }
        Ok::<_, CliError>((times, stepper))
    };
    let mut labels = Vec::new();
    let mut rows = Vec::new();
    let mut defaults = Vec::new();
    for name in AUTO4OMP_PORTFOLIO {
        defaults.push(rows.len());
        labels.push(name.to_string());
        rows.push(run_all(name, None, tick)?.0);
        labels.push(format!("{name}+expert"));
        rows.push(run_all(name, expert, tick)?.0);
    }
    let table = LoopTimes::new(&rows)?;
    let oracle = table.oracle();
    let default_rows: Vec<Vec<f64>> = defaults.iter().map(|&k| rows[k].clone()).collect();
    let (best, best_total) = LoopTimes::new(&default_rows)?.manual_best();
    let row = |config: String, total: f64| ConfigRow {
        config,
        total,
        degradation_percent: degradation_percent(total, oracle),
        last_choice: None,
        exploration_instances: None,
    };
    let fixed = labels
        .iter()
        .zip(&rows)
        .map(|(l, r)| row(l.clone(), r.iter().sum()))
        .collect();
    let mut methods = Vec::new();
    for method in METHODS {
        let (times, stepper) = run_all(method, None, tick)?;
        let record = stepper.selection_record("l1");
        let mut r = row(method.to_string(), times.iter().sum());
        r.last_choice = record
            .and_then(|rec| rec.runs().last())
            .map(|run| AUTO4OMP_PORTFOLIO[run.index].to_string());
        r.exploration_instances = record.map(|rec| rec.exploration_instances());
        methods.push(r);
    }
    Ok(Selection {
        threads,
        instances: costs.len(),
        oracle,
        manual_best: row(
            format!("ManualBest ({})", AUTO4OMP_PORTFOLIO[best]),
            best_total,
        ),
        fixed,
        methods,
    })
}

/// `keel sim loops`.
pub fn run(args: &LoopsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.threads.contains(&0) || args.trace_threads == 0 {
        return Err(CliError::Usage("thread counts must be at least 1".into()));
    }
    if !(args.noise_cv.is_finite() && args.noise_cv >= 0.0) {
        return Err(CliError::Usage(
            "--noise-cv must be a finite number ≥ 0".into(),
        ));
    }
    let calibration = load_calibration(args.calibration.as_deref())?;
    if let Some(path) = &args.trace {
        return run_trace(path, args, calibration.overhead, out);
    }
    let steps = args.steps.unwrap_or(sphynx_l1::STEPS);
    if steps == 0 || steps > sphynx_l1::STEPS {
        return Err(CliError::Usage(format!(
            "--steps must be in 1..={} (the pinned workload's steps)",
            sphynx_l1::STEPS
        )));
    }
    let l1 = SphynxL1::new();
    let spin = calibration.spin_unit_seconds;
    let overhead = calibration.overhead;
    let n = sphynx_l1::PARTICLES as u64;
    let selection_threads: &[usize] = if args.bathtub_only {
        &[]
    } else {
        &args.threads
    };
    let sims = bathtub_chunks(n, 20).len() * BATHTUB_SCHEDULES.len()
        + selection_threads.len() * (2 * AUTO4OMP_PORTFOLIO.len() + METHODS.len()) * steps;
    let bar = progress(sims as u64, "sim loops", args.quiet);
    let mut tick = |msg: &str| {
        bar.set_message(msg.to_string());
        bar.inc(1);
    };
    let first = l1.costs(sphynx_l1::BATHTUB_STEP, spin).map_err(sim_error)?;
    let tub = bathtub(&first, args, overhead, &mut tick)?;
    drop(first);
    let mut selections = Vec::new();
    if !selection_threads.is_empty() {
        // Spread the pinned steps evenly when fewer are asked for.
        let costs = (0..steps)
            .map(|s| l1.costs(s * sphynx_l1::STEPS / steps, spin))
            .collect::<Result<Vec<_>, _>>()
            .map_err(sim_error)?;
        for &p in selection_threads {
            selections.push(selection(&costs, p, args, overhead, &mut tick)?);
        }
    }
    bar.finish_and_clear();
    let report = LoopsReport {
        workload: SphynxL1::spec(),
        iterations: sphynx_l1::PARTICLES,
        spin_unit_seconds: spin,
        overhead,
        calibration_date: calibration.date.clone(),
        bathtub: tub,
        selection: selections,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_report(out, &report, args)?;
    }
    // The tables come first: a plot that cannot be written must not throw
    // away what was computed; its failure is still the command's error.
    if let Some(path) = &args.svg {
        out.flush()?;
        plot(path, &report.bathtub)?;
        if !args.json {
            writeln!(out)?;
            writeln!(out, "plot: {}", path.display())?;
        }
    }
    Ok(())
}

fn write_report(out: &mut dyn Write, r: &LoopsReport, args: &LoopsArgs) -> Result<(), CliError> {
    writeln!(
        out,
        "keel sim loops: SPHYNX-like L1 ({}), N = {}, {:.3} ns per spin unit, overhead fork_join {:.0} ns, claim_local {:.1} ns, claim_serial {:.1} ns (calibration of {}), noise cv {}",
        r.workload,
        r.iterations,
        r.spin_unit_seconds * 1e9,
        r.overhead.fork_join * 1e9,
        r.overhead.claim_local * 1e9,
        r.overhead.claim_serial * 1e9,
        r.calibration_date,
        args.noise_cv
    )?;
    let b = &r.bathtub;
    writeln!(out)?;
    writeln!(
        out,
        "Bathtub (Auto4OMP Fig. 1): simulated T_par of step {} at P = {}, chunk k from N/(2P) down to 1; expert chunk {}",
        sphynx_l1::BATHTUB_STEP,
        b.threads,
        b.expert_chunk
    )?;
    let mut table = vec![{
        let mut h = vec!["k".to_string()];
        h.extend(BATHTUB_SCHEDULES.iter().map(|s| format!("{s},k")));
        h
    }];
    for pt in &b.points {
        let mut line = vec![format!(
            "{}{}",
            pt.chunk,
            if pt.chunk == b.expert_chunk {
                " (expert)"
            } else {
                ""
            }
        )];
        line.extend(pt.t_par.iter().map(|&t| report::duration(t)));
        table.push(line);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    for (s, chunk, t, ratio) in &b.best {
        writeln!(
            out,
            "{s}: best k = {chunk} ({}); expert k = {} at {:.3}× the best — {}",
            report::duration(*t),
            b.expert_chunk,
            ratio,
            if *ratio <= NEAR_BOTTOM {
                "near the bottom"
            } else {
                "NOT near the bottom"
            }
        )?;
    }
    for s in &r.selection {
        writeln!(out)?;
        writeln!(
            out,
            "Selection vs Oracle (Table 3 style), P = {}: {} instances of L1; Oracle {} (best fixed configuration per instance)",
            s.threads,
            s.instances,
            report::duration(s.oracle)
        )?;
        let mut table = vec![[
            "configuration".to_string(),
            "total".into(),
            "% vs Oracle".into(),
            "last choice".into(),
            "explored".into(),
        ]];
        let mut add = |c: &ConfigRow| {
            table.push([
                c.config.clone(),
                report::duration(c.total),
                format!("{:.1}", c.degradation_percent),
                c.last_choice.clone().unwrap_or_default(),
                c.exploration_instances
                    .map_or(String::new(), |e| e.to_string()),
            ])
        };
        for m in &s.methods {
            add(m);
        }
        add(&s.manual_best);
        for f in &s.fixed {
            add(f);
        }
        for line in report::align(&table) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

fn plot(path: &Path, b: &Bathtub) -> Result<(), CliError> {
    use plotters::prelude::*;
    let svg_error =
        |e: &dyn std::fmt::Display| CliError::Usage(format!("svg {}: {e}", path.display()));
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| svg_error(&e))?;
    let xmax = b.points.iter().map(|p| p.chunk).max().unwrap_or(1) as f64 * 1.5;
    let ms = |t: f64| t * 1e3;
    let ymax = b
        .points
        .iter()
        .flat_map(|p| p.t_par.iter().copied())
        .fold(0.0, f64::max);
    let ymin = b
        .points
        .iter()
        .flat_map(|p| p.t_par.iter().copied())
        .fold(f64::INFINITY, f64::min);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Simulated SPHYNX-like L1, N = 10^6, P = {}: T_par over the chunk parameter",
                b.threads
            ),
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (0.8f64..xmax).log_scale(),
            (ms(ymin) * 0.9..ms(ymax) * 1.05).log_scale(),
        )
        .map_err(|e| svg_error(&e))?;
    chart
        .configure_mesh()
        .x_desc("chunk parameter k (log)")
        .y_desc("T_par (ms, log)")
        .draw()
        .map_err(|e| svg_error(&e))?;
    for (i, s) in BATHTUB_SCHEDULES.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64)> = b
            .points
            .iter()
            .map(|p| (p.chunk as f64, ms(p.t_par[i])))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| svg_error(&e))?
            .label(format!("{s},k"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(|e| svg_error(&e))?;
    }
    let k = b.expert_chunk as f64;
    chart
        .draw_series(LineSeries::new(
            vec![(k, ms(ymin) * 0.9), (k, ms(ymax) * 1.05)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| svg_error(&e))?
        .label(format!("expert chunk {}", b.expert_chunk))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperMiddle)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| svg_error(&e))?;
    root.present().map_err(|e| svg_error(&e))?;
    Ok(())
}

/// A user trace: every instance in file order under each schedule.
fn run_trace(
    path: &Path,
    args: &LoopsArgs,
    overhead: OverheadModel,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let trace = keel_sim::trace::read_trace(path).map_err(sim_error)?;
    let costs = trace
        .instances
        .iter()
        .map(|i| i.iteration_costs())
        .collect::<Result<Vec<_>, _>>()
        .map_err(sim_error)?;
    let schedules: Vec<String> = if args.schedules.is_empty() {
        AUTO4OMP_PORTFOLIO.iter().map(|s| s.to_string()).collect()
    } else {
        args.schedules.clone()
    };
    let m = machine(args.trace_threads, overhead, args.noise_cv)?;
    #[derive(Serialize)]
    struct TraceRow {
        schedule: String,
        total: f64,
        mean_lib_percent: f64,
        chunks: u64,
    }
    let mut rows = Vec::new();
    for s in &schedules {
        let mut stepper = Stepper::new(m.clone(), s, args.seed).map_err(sim_error)?;
        let (mut total, mut lib, mut chunks) = (0.0, 0.0, 0);
        for (inst, c) in trace.instances.iter().zip(&costs) {
            let r = stepper.run(&inst.loop_name, c).map_err(sim_error)?;
            total += r.t_par;
            lib += r.lib_percent;
            chunks += r.total_chunks();
        }
        rows.push(TraceRow {
            schedule: s.clone(),
            total,
            mean_lib_percent: lib / costs.len().max(1) as f64,
            chunks,
        });
    }
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "keel sim loops --trace {}: {} instances, {} iterations, {} workers",
        path.display(),
        trace.instances.len(),
        trace.iterations(),
        args.trace_threads
    )?;
    let mut table = vec![[
        "schedule".to_string(),
        "total T_par".into(),
        "mean LIB %".into(),
        "chunks".into(),
    ]];
    for r in &rows {
        table.push([
            r.schedule.clone(),
            report::duration(r.total),
            format!("{:.1}", r.mean_lib_percent),
            r.chunks.to_string(),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bathtub_chunks_of_the_paper() {
        let k = bathtub_chunks(1_000_000, 20);
        assert_eq!(k.first(), Some(&25_000));
        assert_eq!(k.last(), Some(&1));
        assert!(k.contains(&48), "{k:?}");
    }
}
