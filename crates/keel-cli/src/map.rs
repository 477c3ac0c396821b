//! `keel map`: one problem, several policies, one row each.

use std::io::Write;

use keel_policy::Concept;
use keel_workloads::{generate, read_trace, MappingProblem};

use crate::cli::MapArgs;
use crate::error::CliError;
use crate::report;

/// Runs `keel map`: every policy that can decide gets its row; the ones
/// that refuse the input are reported after the rows (exit status 1).
pub fn run(args: &MapArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (source, problem) = load(args)?;
    let specs: Vec<&str> = args.policies.iter().map(String::as_str).collect();
    let cmp = report::compare(&problem, &specs)?;
    if args.json {
        report::write_json(out, &source, &problem, &cmp, args.show_mapping)?;
    } else {
        report::write_summary(out, &source, &problem)?;
        // A header with no row under it says nothing the error does not.
        if cmp.current.is_some() || !cmp.outcomes.is_empty() {
            report::write_table(out, &cmp)?;
        }
        if args.show_mapping {
            report::write_mappings(out, &cmp, problem.task_ids.as_deref())?;
        }
    }
    let from_file = args.generate.is_none();
    let csv = args
        .tasks
        .as_ref()
        .is_some_and(|t| t.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")));
    cmp.check(&|concept| missing_input(concept, from_file, csv))
}

/// What the user adds to the input to provide `concept`, where the input
/// has a place for it.
fn missing_input(concept: &Concept, from_file: bool, csv: bool) -> Option<String> {
    let (csv_column, json_field, generator) = match concept {
        Concept::CurrentMapping => ("current_pu", "current_mapping", Some("current=block")),
        Concept::TaskMigratable => ("migratable", "migratable", None),
        _ => return None,
    };
    Some(match (from_file, csv) {
        (true, true) => format!("add a `{csv_column}` column to the task CSV"),
        (true, false) => format!("add a `{json_field}` array to the JSON trace"),
        (false, _) => format!("add `{}` to the workload spec", generator?),
    })
}

/// The problem named by the arguments, and how to name it in the report.
fn load(args: &MapArgs) -> Result<(String, MappingProblem), CliError> {
    match (&args.generate, &args.tasks) {
        (Some(spec), _) => Ok((spec.trim().to_string(), generate(spec)?)),
        (None, Some(tasks)) => {
            let problem = read_trace(tasks, args.pu_file.as_deref(), args.pus)?;
            Ok((tasks.display().to_string(), problem))
        }
        // clap's argument group already requires one of the two.
        (None, None) => Err(CliError::Usage(
            "give the tasks: --tasks FILE or --generate SPEC".to_string(),
        )),
    }
}
