//! `keel omp report FILE [--json]`: the per-loop report that programs run
//! under `libkeel_omp.so` with `KEEL_OMP_REPORT=FILE` (or `keel omp run
//! --report-file FILE`) wrote — one JSON line per process — as a table per
//! process: each loop Keel took, named by the symbol holding its call site
//! where the binary has one, with its instances, total time, mean LIB and
//! the schedules it ran over time.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use keel::loops::process_report::{ProcessReport, SiteReport};
use keel::loops::LoopReport;

use crate::error::CliError;
use crate::report::{align, duration};

/// `keel omp report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The report file (`KEEL_OMP_REPORT`, `keel omp run --report-file`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print one JSON document (`{"processes": [...]}`) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr (this command prints none; accepted so that
    /// `--quiet` works on every command).
    #[arg(long)]
    pub quiet: bool,
}

/// A report larger than this is not one (a program with thousands of
/// loops writes a few megabytes).
const MAX_REPORT_BYTES: u64 = 256 << 20;
/// An object file larger than this is not searched for symbols.
const MAX_OBJECT_BYTES: u64 = 1 << 30;

/// Prints the report in `args.file`.
pub fn run(args: &ReportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut reports = read_reports(&args.file)?;
    name_call_sites(&mut reports);
    if args.json {
        #[derive(Serialize)]
        struct Document<'a> {
            processes: &'a [ProcessReport],
        }
        serde_json::to_writer_pretty(
            &mut *out,
            &Document {
                processes: &reports,
            },
        )?;
        writeln!(out)?;
        return Ok(());
    }
    write_tables(&reports, out)
}

/// The processes' reports in `path`, in the order they were written.
pub fn read_reports(path: &Path) -> Result<Vec<ProcessReport>, CliError> {
    let shown = path.display();
    let text = keel::output::read_regular_file(path, "the loop report", MAX_REPORT_BYTES)
        .map_err(|e| CliError::Runtime(format!("cannot read the loop report {shown}: {e}")))?;
    let mut reports = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| CliError::Runtime(format!("{shown}, line {}: {why}", number + 1));
        let report = ProcessReport::from_line(line).map_err(|e| bad(e.to_string()))?;
        reports.push(report);
    }
    if reports.is_empty() {
        return Err(CliError::Runtime(format!(
            "{shown} holds no loop report: no process under libkeel_omp.so exited normally after taking a loop"
        )));
    }
    Ok(reports)
}

/// Fills each loop's `symbol` from its object's symbol table, where the
/// object is still there and has one.
pub fn name_call_sites(reports: &mut [ProcessReport]) {
    let mut objects: HashMap<String, Option<Symbols>> = HashMap::new();
    for site in reports.iter_mut().flat_map(|r| r.loops.iter_mut()) {
        let (Some(object), Some(offset)) = (&site.object, site.offset) else {
            continue;
        };
        let symbols = objects
            .entry(object.clone())
            .or_insert_with(|| Symbols::read(Path::new(object)));
        site.symbol = symbols.as_ref().and_then(|s| s.at(offset));
    }
}

/// The function symbols of one ELF object, by address.
struct Symbols {
    /// The address the object's first loaded segment starts at, page
    /// aligned: where the dynamic loader's base (a call site's offset is
    /// from it) sits in the object's own addresses.
    base: u64,
    /// (start, size, name), sorted by start.
    functions: Vec<(u64, u64, String)>,
}

impl Symbols {
    fn read(path: &Path) -> Option<Symbols> {
        use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
        let size = std::fs::metadata(path).ok()?.len();
        if size > MAX_OBJECT_BYTES {
            return None;
        }
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let base = file.segments().map(|s| s.address()).min()? & !0xfff;
        let mut functions: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        functions.sort();
        functions.dedup_by_key(|f| f.0);
        Some(Symbols { base, functions })
    }

    /// The function holding the call site at `offset` from the base.
    fn at(&self, offset: u64) -> Option<String> {
        let address = self.base.checked_add(offset)?;
        let i = self.functions.partition_point(|f| f.0 <= address);
        let (start, size, name) = self.functions.get(i.checked_sub(1)?)?;
        (address < start.saturating_add(*size)).then(|| name.clone())
    }
}

/// One table per process.
pub fn write_tables(reports: &[ProcessReport], out: &mut dyn Write) -> Result<(), CliError> {
    for (i, process) in reports.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{} (pid {}): Keel took {} loop instance{}, forwarded {} to the OpenMP runtime",
            sanitize(&process.program),
            process.pid,
            process.taken,
            if process.taken == 1 { "" } else { "s" },
            process.forwarded
        )?;
        if process.loops.is_empty() {
            writeln!(out, "  no loop taken")?;
            continue;
        }
        let all: f64 = process.loops.iter().map(|l| l.report.total_time).sum();
        let mut rows = vec![[
            "loop".to_string(),
            "instances".into(),
            "total time".into(),
            "share".into(),
            "mean LIB".into(),
        ]];
        let mut histories = vec!["schedules over time".to_string()];
        for site in &process.loops {
            let r = &site.report;
            let share = if all > 0.0 {
                format!("{:.1} %", 100.0 * r.total_time / all)
            } else {
                "–".into()
            };
            rows.push([
                sanitize(&loop_name(site)),
                r.instances.to_string(),
                duration(r.total_time),
                share,
                format!("{:.1} %", r.mean_lib_percent),
            ]);
            histories.push(sanitize(&history(r)));
        }
        for (line, history) in align(&rows).into_iter().zip(histories) {
            writeln!(out, "{line}  {history}")?;
        }
    }
    Ok(())
}

/// The symbol with the loop's name (`file+offset`), or the name alone.
fn loop_name(site: &SiteReport) -> String {
    let place = site
        .report
        .name
        .strip_prefix("omp:")
        .unwrap_or(&site.report.name);
    match &site.symbol {
        Some(symbol) => format!("{symbol} ({place})"),
        None => place.to_string(),
    }
}

/// Runs a table cell shows from the start of a loop's history, and from
/// its end; the runs between are summed up.
const RUNS_FIRST: usize = 2;
const RUNS_LAST: usize = 3;

/// The schedules over time: `gss×40`, `static×3 → gss×37`; a long history
/// as its first and last runs with what lies between summed up; under
/// `auto`, the method and how many instances it spent exploring.
fn history(report: &LoopReport) -> String {
    let run = |r: &keel::loops::ScheduleRunReport| format!("{}×{}", r.schedule, r.instances);
    let runs = &report.schedules;
    let mut cells: Vec<String> = if runs.len() <= RUNS_FIRST + RUNS_LAST + 1 {
        runs.iter().map(run).collect()
    } else {
        let middle = &runs[RUNS_FIRST..runs.len() - RUNS_LAST];
        let instances: u64 = middle.iter().map(|r| r.instances).sum();
        let mut cells: Vec<String> = runs[..RUNS_FIRST].iter().map(run).collect();
        cells.push(format!(
            "({} instance{} in {} runs)",
            instances,
            if instances == 1 { "" } else { "s" },
            middle.len()
        ));
        cells.extend(runs[runs.len() - RUNS_LAST..].iter().map(run));
        cells
    };
    if report.schedule_runs_dropped > 0 {
        cells.push(format!(
            "({} later instance{} not kept)",
            report.schedule_runs_dropped,
            if report.schedule_runs_dropped == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    let cells = cells.join(" → ");
    match &report.selection {
        Some(selection) => format!(
            "auto,{}{}: {cells}",
            selection.method,
            selection_cost(selection)
        ),
        None => cells,
    }
}

/// What selection cost a loop: instances explored, their time beyond the
/// settled schedule's as a share of the loop's time, why the search ended,
/// and the exploited instances run unmeasured.
fn selection_cost(selection: &keel::loops::SelectionReport) -> String {
    let mut parts = vec![format!("{} explored", selection.exploration_instances)];
    if let Some(cost) = &selection.cost {
        if cost.loop_seconds > 0.0 {
            parts.push(format!(
                "exploring cost {} = {:.1} % of {}",
                seconds(cost.exploration_excess_seconds),
                100.0 * cost.exploration_share(),
                seconds(cost.loop_seconds)
            ));
        }
        if cost.unmeasured_instances > 0 {
            parts.push(format!("{} unmeasured", cost.unmeasured_instances));
        }
        if cost.classes > 1 {
            parts.push(format!("{} size classes", cost.classes));
        }
    }
    if let Some(reason) = &selection.settled_by {
        parts.push(format!("settled by {}", sanitize(reason)));
    }
    format!(" ({})", parts.join("; "))
}

/// Seconds with a unit that keeps three significant digits.
fn seconds(s: f64) -> String {
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.2} s")
    } else if a >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// The text without control characters (a report is read from a file a
/// program wrote, and names symbols of objects it names: neither may drive
/// the reader's terminal). Every text a table shows from a report passes
/// here.
fn sanitize(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests;
