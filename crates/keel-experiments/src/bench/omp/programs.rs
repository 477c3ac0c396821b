//! The programs `keel omp bench` measures: their sources (shipped in
//! `crates/keel-experiments/programs`), the four original workloads' fixed sizes
//! (the seven others' are in `unseen.rs`), how they are compiled and how
//! their one line of output is read.

use std::path::{Path, PathBuf};
use std::process::Command;

use keel_policy::Spec;
use keel_workloads::steps::{LavaMdSteps, MandelbrotZoom, SteppedWorkload};

use super::Compiler;
use crate::error::ExperimentError;

/// One benchmark program and the arguments it runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The workload's name in the report.
    pub name: &'static str,
    /// The sources' file stem (`mandelbrot` for `mandelbrot.c`).
    pub stem: &'static str,
    /// The C source text.
    pub source: &'static str,
    /// The Fortran 2008 version's source text, computing the same, if the
    /// workload has one (`--compiler gfortran` runs only those).
    pub fortran: Option<&'static str>,
    /// Its command-line arguments.
    pub args: Vec<String>,
    /// What the sizes are, for the report.
    pub sizes: String,
    /// For the workloads measured loop by loop (`unseen.rs`): the most
    /// iterations any instance of the program's loops has, from which the
    /// runtime's `dynamic,k` configuration takes its `k`.
    pub largest_instance: Option<u64>,
}

/// The original workloads' names, in report order: `keel omp bench`
/// without `--workloads` runs these.
pub const WORKLOADS: [&str; 4] = ["mandelbrot-zoom", "lavamd-steps", "balanced", "short-loops"];

const MANDELBROT_C: &str = include_str!("../../../programs/mandelbrot.c");
const LAVAMD_C: &str = include_str!("../../../programs/lavamd.c");
const BALANCED_C: &str = include_str!("../../../programs/balanced.c");
const SHORT_C: &str = include_str!("../../../programs/short.c");

/// The C programs' shared argument helpers (`#include "bench_args.h"`).
const BENCH_ARGS_H: &str = include_str!("../../../programs/bench_args.h");
/// The Fortran programs' shared helpers (`use bench_io`).
const BENCH_IO_F90: &str = include_str!("../../../programs/bench_io.f90");

/// The balanced loop: 256 iterations of 2000 dependent multiply-adds each
/// (an instance of about 0.6 ms at 2 threads, above the 100 µs below which
/// a dispatcher's own cost would show), 30 steps.
pub const BALANCED: (u64, u64, u64) = (256, 2000, 30);

/// Many short loops: 10⁵ instances of 16 iterations × 50 dependent
/// multiply-adds (800 in all, about a microsecond).
pub const SHORT: (u64, u64, u64) = (16, 50, 100_000);

/// The programs at their fixed sizes; `quick` keeps every size but the
/// number of steps (instances), for a run that only shows the table's form.
pub fn programs(quick: bool) -> Result<Vec<Program>, ExperimentError> {
    // The Rust workloads' defaults, taken from keel-workloads itself so
    // that the C programs run what `keel bench auto` runs.
    let spec = |name: &str| {
        Spec::parse(name).map_err(|e| ExperimentError::Failed(format!("workload {name}: {e}")))
    };
    let zoom = MandelbrotZoom::from_spec(&spec(MandelbrotZoom::NAME)?)?;
    let lava = LavaMdSteps::from_spec(&spec(LavaMdSteps::NAME)?)?;
    let zoom_params = spec_params(&zoom.spec());
    let get = |key: &str| -> Result<String, ExperimentError> {
        zoom_params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| ExperimentError::Failed(format!("mandelbrot-zoom has no `{key}`")))
    };
    let steps = |full: usize| if quick { 2 } else { full };
    let boxes = lava.boxes();
    let mut lava_args = vec![
        boxes.boxes1d.to_string(),
        boxes.particles_per_unit.to_string(),
        steps(lava.steps()).to_string(),
    ];
    lava_args.extend(boxes.units().iter().map(u64::to_string));
    let (b_iter, b_work, b_steps) = BALANCED;
    let (s_iter, s_work, s_instances) = SHORT;
    Ok(vec![
        Program {
            name: WORKLOADS[0],
            stem: "mandelbrot",
            source: MANDELBROT_C,
            fortran: None,
            args: vec![
                get("width")?,
                get("height")?,
                get("max-iter")?,
                steps(zoom.steps()).to_string(),
                get("start")?,
                get("zoom")?,
            ],
            sizes: format!("{}, {} steps", zoom.spec(), steps(zoom.steps())),
            largest_instance: None,
        },
        Program {
            name: WORKLOADS[1],
            stem: "lavamd",
            source: LAVAMD_C,
            fortran: None,
            sizes: format!("{}, {} steps", lava.spec(), steps(lava.steps())),
            args: lava_args,
            largest_instance: None,
        },
        Program {
            name: WORKLOADS[2],
            stem: "balanced",
            source: BALANCED_C,
            fortran: None,
            args: vec![
                b_iter.to_string(),
                b_work.to_string(),
                steps(b_steps as usize).to_string(),
            ],
            sizes: format!(
                "{b_iter} iterations x {b_work} multiply-adds, {} steps",
                steps(b_steps as usize)
            ),
            largest_instance: None,
        },
        Program {
            name: WORKLOADS[3],
            stem: "short",
            source: SHORT_C,
            fortran: None,
            args: vec![
                s_iter.to_string(),
                s_work.to_string(),
                if quick { 1000 } else { s_instances }.to_string(),
            ],
            sizes: format!(
                "{} instances of {s_iter} iterations x {s_work} multiply-adds",
                if quick { 1000 } else { s_instances }
            ),
            largest_instance: None,
        },
    ])
}

/// `name:k=v,k=v` → `[(k, v)]`.
fn spec_params(spec: &str) -> Vec<(String, String)> {
    spec.split_once(':')
        .map_or("", |(_, p)| p)
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Writes each program's source into `dir` and compiles it with
/// `<compiler> -fopenmp -O2` (the C source, or under gfortran the Fortran
/// one: a program without one is refused); returns the executables in the
/// programs' order. The shared helpers go into `dir` too: the C programs
/// include `bench_args.h` from their own folder, and gfortran compiles
/// `bench_io.f90` with each program, its `.mod` file kept in `dir` (`-J`)
/// rather than the working directory.
pub fn compile(
    programs: &[Program],
    dir: &Path,
    compiler: Compiler,
) -> Result<Vec<PathBuf>, ExperimentError> {
    let cc = compiler.command();
    let module = match compiler {
        Compiler::Gfortran => {
            let module = dir.join("bench_io.f90");
            std::fs::write(&module, BENCH_IO_F90).map_err(|e| write_failed(&module, e))?;
            Some(module)
        }
        Compiler::Gcc | Compiler::Clang => {
            std::fs::write(dir.join("bench_args.h"), BENCH_ARGS_H)
                .map_err(|e| write_failed(&dir.join("bench_args.h"), e))?;
            None
        }
    };
    programs
        .iter()
        .map(|p| {
            let (text, ext) = match compiler {
                Compiler::Gfortran => (
                    p.fortran.ok_or_else(|| {
                        ExperimentError::Failed(format!("{} has no Fortran version", p.name))
                    })?,
                    "f90",
                ),
                Compiler::Gcc | Compiler::Clang => (p.source, "c"),
            };
            let source = dir.join(format!("{}.{ext}", p.stem));
            let exe = dir.join(p.stem);
            std::fs::write(&source, text).map_err(|e| write_failed(&source, e))?;
            let mut command = Command::new(cc);
            command.args(["-fopenmp", "-O2", "-o"]).arg(&exe);
            if let Some(module) = &module {
                command.arg("-J").arg(dir).arg(module);
            }
            let out = command
                .arg(&source)
                .arg("-lm")
                .output()
                .map_err(|e| ExperimentError::Failed(format!("cannot run {cc}: {e}")))?;
            if !out.status.success() {
                return Err(ExperimentError::Failed(format!(
                    "{cc} -fopenmp -O2 {}.{ext} failed: {}",
                    p.stem,
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            Ok(exe)
        })
        .collect()
}

/// What one run printed: the time inside its loops, its checksum and,
/// where the program times its loops one by one, each loop's time.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    /// Seconds inside the measured loops.
    pub seconds: f64,
    /// The program's checksum (the same for every schedule, or an
    /// iteration ran twice or not at all).
    pub checksum: u64,
    /// `(name, seconds)` of each `loop.<name>=<seconds>` field, in the
    /// line's order (empty for the programs that print none).
    pub loops: Vec<(String, f64)>,
}

/// Reads `loop_seconds=<f> checksum=<u64> [loop.<name>=<f> ...] [more=...]`
/// from a program's output (its last non-empty line).
pub fn parse_output(text: &str) -> Result<RunOutput, String> {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("no output")?;
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
            .ok_or_else(|| format!("no `{key}=` in {line:?}"))
    };
    let time = |what: &str, text: &str| -> Result<f64, String> {
        let seconds: f64 = text
            .parse()
            .map_err(|e| format!("{what} in {line:?}: {e}"))?;
        // A loop's time may be 0 (a loop too short for the clock); the
        // program's total may not.
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(format!("{what} {seconds} is not a time"));
        }
        Ok(seconds)
    };
    let seconds = time("loop_seconds", field("loop_seconds")?)?;
    if seconds <= 0.0 {
        return Err(format!("loop_seconds {seconds} is not a positive time"));
    }
    let checksum = field("checksum")?
        .parse()
        .map_err(|e| format!("checksum in {line:?}: {e}"))?;
    let mut loops: Vec<(String, f64)> = Vec::new();
    for word in line.split_whitespace() {
        let Some((name, value)) = word.strip_prefix("loop.").and_then(|f| f.split_once('=')) else {
            continue;
        };
        if name.is_empty() || loops.iter().any(|(n, _)| n == name) {
            return Err(format!("loop name {name:?} empty or repeated in {line:?}"));
        }
        loops.push((name.to_string(), time(&format!("loop.{name}"), value)?));
    }
    Ok(RunOutput {
        seconds,
        checksum,
        loops,
    })
}

/// A source file that could not be written into the build folder.
fn write_failed(path: &Path, e: std::io::Error) -> ExperimentError {
    ExperimentError::Failed(format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the sizes: a change here changes every figure of the bench.
    #[test]
    fn golden_sizes() {
        let p = programs(false).unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.name).collect();
        assert_eq!(names, WORKLOADS);
        assert_eq!(p[0].args, ["256", "320", "500", "100", "3", "0.96"]);
        assert_eq!(&p[1].args[..3], ["5", "5", "100"]);
        assert_eq!(p[1].args.len(), 3 + 125);
        let units: u64 = p[1].args[3..]
            .iter()
            .map(|u| u.parse::<u64>().unwrap())
            .sum();
        assert_eq!(units, LAVAMD_UNITS);
        assert_eq!(p[2].args, ["256", "2000", "30"]);
        assert_eq!(p[3].args, ["16", "50", "100000"]);
        let quick = programs(true).unwrap();
        assert_eq!(quick[0].args[3], "2");
        assert_eq!(quick[3].args[2], "1000");
    }

    /// The unit draws of `lavamd-steps`' 125 boxes, summed.
    const LAVAMD_UNITS: u64 = 615;

    /// Pins what the C programs compute at the quick sizes, under libgomp
    /// and two threads, and ties the two step programs to the Rust
    /// workloads they mirror. Needs `gcc -fopenmp`; SKIPPED without it.
    #[test]
    fn the_c_programs_checksums_are_pinned() {
        let dir = tempfile::TempDir::new().unwrap();
        let quick = programs(true).unwrap();
        let exes = compile(&quick, dir.path(), Compiler::Gcc);
        let test = "the_c_programs_checksums_are_pinned";
        if !keel_testkit::can_run(test, "gcc -fopenmp", exes.is_ok()) {
            return;
        }
        let exes = exes.unwrap();
        let run = |k: usize, schedule: &str| {
            let out = Command::new(&exes[k])
                .args(&quick[k].args)
                .env("OMP_NUM_THREADS", "2")
                .env("OMP_SCHEDULE", schedule)
                .env_remove("LD_PRELOAD")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", quick[k].name);
            parse_output(&String::from_utf8_lossy(&out.stdout))
                .unwrap()
                .checksum
        };
        let golden = [
            15_109_685,
            5_300_550,
            3_304_894_978_257_526_784,
            8_756_303_584_732_208_576,
        ];
        for (k, want) in golden.into_iter().enumerate() {
            assert_eq!(run(k, "dynamic,3"), want, "{}", quick[k].name);
            assert_eq!(run(k, "static"), want, "{}", quick[k].name);
        }
        // Mandelbrot: the sum of the Rust workload's escape times over the
        // same two steps, pixel for pixel.
        let zoom = MandelbrotZoom::from_spec(&Spec::parse("mandelbrot-zoom").unwrap()).unwrap();
        let rust: f64 = (0..2)
            .flat_map(|step| (0..256).map(move |c| (step, c)))
            .map(|(step, c)| zoom.run(step, 0, c))
            .sum();
        assert_eq!(rust, golden[0] as f64);
        // LavaMD: two steps of the Rust box loop's pair interactions.
        use keel_workloads::loops::LoopWorkload;
        let lava = LavaMdSteps::from_spec(&Spec::parse("lavamd-steps").unwrap()).unwrap();
        assert_eq!(2 * lava.boxes().work().iter().sum::<u64>(), golden[1]);
        // A bad argument is the program's usage error, not a crash.
        let out = Command::new(&exes[0]).arg("x").output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let out = Command::new(&exes[1])
            .args(["5", "5", "1", "3"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
    }

    #[test]
    fn output_is_parsed_or_refused() {
        assert_eq!(
            parse_output("loop_seconds=0.5 checksum=42 forces=1e3\n"),
            Ok(RunOutput {
                seconds: 0.5,
                checksum: 42,
                loops: Vec::new(),
            })
        );
        // The per-loop fields, in the line's order, other fields ignored.
        assert_eq!(
            parse_output(
                "loop_seconds=0.75 checksum=7 loop.mandel=0.5 x=1 loop.triad=0.25 loop.t=0\n"
            ),
            Ok(RunOutput {
                seconds: 0.75,
                checksum: 7,
                loops: vec![
                    ("mandel".into(), 0.5),
                    ("triad".into(), 0.25),
                    ("t".into(), 0.0)
                ],
            })
        );
        for bad in [
            "",
            "checksum=1",
            "loop_seconds=x checksum=1",
            "loop_seconds=-1 checksum=1",
            "loop_seconds=nan checksum=1",
            "loop_seconds=1 checksum=-3",
            "loop_seconds=1 checksum=3 loop.a=x",
            "loop_seconds=1 checksum=3 loop.a=-1",
            "loop_seconds=1 checksum=3 loop.a=inf",
            "loop_seconds=1 checksum=3 loop.=1",
            "loop_seconds=1 checksum=3 loop.a=1 loop.a=2",
        ] {
            assert!(parse_output(bad).is_err(), "{bad:?}");
        }
    }
}
