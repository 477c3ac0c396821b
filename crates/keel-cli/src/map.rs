//! `keel map`: one problem, several policies, one row each.

use std::io::Write;

use keel_workloads::{generate, read_trace, MappingProblem};

use crate::cli::MapArgs;
use crate::error::CliError;
use crate::report;

/// Runs `keel map`.
pub fn run(args: &MapArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (source, problem) = load(args)?;
    let specs: Vec<&str> = args.policies.iter().map(String::as_str).collect();
    let cmp = report::compare(&problem, &specs)?;
    if args.json {
        report::write_json(out, &source, &problem, &cmp, args.show_mapping)
    } else {
        report::write_summary(out, &source, &problem)?;
        report::write_table(out, &cmp)?;
        if args.show_mapping {
            report::write_mappings(out, &cmp)?;
        }
        Ok(())
    }
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
