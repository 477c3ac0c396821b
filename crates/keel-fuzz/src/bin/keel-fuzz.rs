//! `keel-fuzz`: run the parser fuzz targets by hand, and the worker process
//! that the supervisor (and the tests) start.
//!
//! ```text
//! keel-fuzz list
//! keel-fuzz run [--target NAME]... [--seed N] [--cases N | --seconds S] [--out DIR]
//! keel-fuzz one --target NAME FILE
//! keel-fuzz case --target NAME --seed N --case I     (prints the input, escaped)
//! keel-fuzz work --target NAME --seed N --first I [--cases N] [--seconds S] --out DIR
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use keel_fuzz::driver::{self, Plan};
use keel_fuzz::{case_input, corpus, escape, target, targets, Target};

struct Args {
    targets: Vec<&'static Target>,
    seed: Option<u64>,
    first: u64,
    case: Option<u64>,
    cases: Option<u64>,
    seconds: Option<f64>,
    out: Option<PathBuf>,
    files: Vec<PathBuf>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        targets: Vec::new(),
        seed: None,
        first: 0,
        case: None,
        cases: None,
        seconds: None,
        out: None,
        files: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`{arg}` needs {what}"))
        };
        let number = |text: String, what: &str| {
            text.parse::<u64>()
                .map_err(|_| format!("`{arg}` needs {what}, got `{text}`"))
        };
        match arg.as_str() {
            "--target" => {
                let name = value("a target name")?;
                a.targets.push(target(&name).ok_or_else(|| {
                    let names: Vec<&str> = targets().iter().map(|t| t.name).collect();
                    format!("no target `{name}`; targets: {}", names.join(", "))
                })?);
            }
            "--seed" => a.seed = Some(number(value("a number")?, "a number")?),
            "--first" => a.first = number(value("a case number")?, "a case number")?,
            "--case" => a.case = Some(number(value("a case number")?, "a case number")?),
            "--cases" => a.cases = Some(number(value("a count")?, "a count")?),
            "--seconds" => {
                let text = value("seconds")?;
                let s: f64 = text
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s <= 1e6)
                    .ok_or_else(|| format!("`--seconds` needs 0 to 1e6 seconds, got `{text}`"))?;
                a.seconds = Some(s);
            }
            "--out" => a.out = Some(PathBuf::from(value("a folder")?)),
            other if other.starts_with("--") => return Err(format!("unknown option `{other}`")),
            file => a.files.push(PathBuf::from(file)),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprintln!("usage: keel-fuzz list | run | one | case | work (see the crate's README)");
        return ExitCode::from(2);
    };
    let parsed = match parse(&args[1..]) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("keel-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    match run(command, parsed) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("keel-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

fn one_target(a: &Args) -> Result<&'static Target, String> {
    match a.targets.as_slice() {
        [t] => Ok(t),
        _ => Err("give exactly one `--target`".into()),
    }
}

fn run(command: &str, a: Args) -> Result<ExitCode, String> {
    match command {
        "list" => {
            for t in targets() {
                println!("{:14} {}", t.name, t.summary);
            }
            Ok(ExitCode::SUCCESS)
        }
        "work" => {
            let t = one_target(&a)?;
            let plan = Plan {
                seed: a.seed.ok_or("`work` needs `--seed`")?,
                first: a.first,
                cases: a.cases,
                time: a.seconds.map(Duration::from_secs_f64),
                out: a.out.ok_or("`work` needs `--out`")?,
            };
            driver::work(t, &plan).map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        "one" => {
            let t = one_target(&a)?;
            let [file] = a.files.as_slice() else {
                return Err("`one` needs one input file".into());
            };
            let input = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
            match driver::run_one(t, input) {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(e) => {
                    println!("{}: {e}", t.name);
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        "case" => {
            let t = one_target(&a)?;
            let seeds = corpus::seeds(t.name).map_err(|e| e.to_string())?;
            let grammar = (t.grammar)();
            let input = case_input(
                &grammar,
                &seeds,
                a.seed.ok_or("`case` needs `--seed`")?,
                t.name,
                a.case.ok_or("`case` needs `--case`")?,
            );
            println!("{}", escape(&input, usize::MAX));
            Ok(ExitCode::SUCCESS)
        }
        "run" => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let seed = a.seed.unwrap_or_else(keel_fuzz::time_seed);
            let chosen: Vec<&Target> = if a.targets.is_empty() {
                targets().iter().collect()
            } else {
                a.targets.clone()
            };
            let out = a
                .out
                .clone()
                .map_or_else(
                    // A fresh directory (random suffix), kept for the user.
                    || {
                        tempfile::Builder::new()
                            .prefix(&format!("keel-fuzz-{seed}-"))
                            .tempdir()
                            .map(tempfile::TempDir::keep)
                    },
                    Ok,
                )
                .map_err(|e| format!("cannot create a directory for failing inputs: {e}"))?;
            println!(
                "keel-fuzz: seed {seed}, failing inputs under {}",
                out.display()
            );
            let per_target = a
                .seconds
                .map(|s| Duration::from_secs_f64(s / chosen.len() as f64));
            let mut failed = false;
            for t in chosen {
                let plan = Plan {
                    seed,
                    first: a.first,
                    cases: a.cases.or(if per_target.is_none() {
                        Some(1000)
                    } else {
                        None
                    }),
                    time: per_target,
                    out: out.clone(),
                };
                let summary = driver::supervise(&exe, t, &plan).map_err(|e| e.to_string())?;
                println!("{}", keel_fuzz::report_line(t.name, &summary));
                for f in summary.distinct() {
                    failed = true;
                    println!("  {f}");
                }
            }
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        other => Err(format!("unknown command `{other}`")),
    }
}
