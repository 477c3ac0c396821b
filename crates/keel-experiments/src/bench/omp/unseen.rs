//! The seven workloads of characters `auto`'s selector was not developed
//! on: a memory-bound stream, a triangular loop, a wavefront,
//! many short balanced loops, a power-law sparse loop, a loop whose best
//! schedule changes midway, and a program of three loops that want
//! different schedules. Their sizes were fixed before `auto` was measured
//! on them (each program ≈ 0.2–0.3 s at 2 threads under libgomp's `static`
//! on the development machine) and are pinned by `golden_sizes`; each
//! program times each of its loops and prints `loop.<name>=<seconds>`.

use super::programs::Program;

/// Their names, in report order (after the original four).
pub const WORKLOADS: [&str; 7] = [
    "stream",
    "triangular",
    "wavefront",
    "short-balanced",
    "sparse",
    "phase-shift",
    "multi-loop",
];

/// The stream triad: elements (8 × 10⁶ doubles: three arrays of 64 MB,
/// far beyond any cache) and steps.
pub const STREAM: (u64, u64) = (8_000_000, 40);

/// The triangular loop: iterations n (iteration i costs n − i units),
/// recurrence steps per unit, and steps.
pub const TRIANGULAR: (u64, u64, u64) = (3000, 1, 60);

/// The wavefront: grid side M (2M − 1 = 1535 loop instances per sweep, of
/// 1 to 768 cells), recurrence steps per cell (≈ 0.15 µs), sweeps.
pub const WAVEFRONT: (u64, u64, u64) = (768, 128, 5);

/// Many short balanced loops: iterations per instance, recurrence steps per
/// iteration (≈ 10 µs per instance at 2 threads) and instances.
pub const SHORT_BALANCED: (u64, u64, u64) = (64, 256, 20_000);

/// The sparse loop: rows (≈ 2 × 10⁶ entries in all) and steps.
pub const SPARSE: (u64, u64) = (150_000, 120);

/// The phase shift: iterations, recurrence steps per iteration (fine:
/// ≈ 35 ns), steps, heavy iterations at the head in the second half of the
/// steps (3 %) and how many times heavier they are.
pub const PHASE_SHIFT: (u64, u64, u64, u64, u64) = (100_000, 32, 40, 3000, 64);

/// The multi-loop program's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiLoop {
    /// Mandelbrot image columns (pixels per row).
    pub width: u64,
    /// Its rows: the `mandel` loop's iterations.
    pub height: u64,
    /// Escape-time bound.
    pub max_iter: u64,
    /// The `tasks` loop's iterations.
    pub tasks: u64,
    /// Recurrence steps per cost unit of a task.
    pub unit: u64,
    /// The `triad` loop's doubles.
    pub n: u64,
    /// Time steps (each runs the three loops once).
    pub steps: u64,
}

/// The multi-loop program: the three loops take about a third of the time
/// each under libgomp's `static`.
pub const MULTI_LOOP: MultiLoop = MultiLoop {
    width: 192,
    height: 192,
    max_iter: 128,
    tasks: 4096,
    unit: 32,
    n: 4_000_000,
    steps: 40,
};

const STREAM_C: &str = include_str!("../../../programs/stream.c");
const TRIANGULAR_C: &str = include_str!("../../../programs/triangular.c");
const WAVEFRONT_C: &str = include_str!("../../../programs/wavefront.c");
const SHORT_BALANCED_C: &str = include_str!("../../../programs/short_balanced.c");
const SPARSE_C: &str = include_str!("../../../programs/sparse.c");
const PHASE_SHIFT_C: &str = include_str!("../../../programs/phase_shift.c");
const MULTI_LOOP_C: &str = include_str!("../../../programs/multi_loop.c");

// The Fortran 2008 versions: the same arithmetic in signed 64-bit integers
// (every value below 2^53, so nothing overflows) and doubles computed in
// the same order, so the same checksums.
const STREAM_F90: &str = include_str!("../../../programs/stream.f90");
const TRIANGULAR_F90: &str = include_str!("../../../programs/triangular.f90");
const WAVEFRONT_F90: &str = include_str!("../../../programs/wavefront.f90");
const SHORT_BALANCED_F90: &str = include_str!("../../../programs/short_balanced.f90");
const SPARSE_F90: &str = include_str!("../../../programs/sparse.f90");
const PHASE_SHIFT_F90: &str = include_str!("../../../programs/phase_shift.f90");
const MULTI_LOOP_F90: &str = include_str!("../../../programs/multi_loop.f90");

/// The seven programs at their fixed sizes; `quick` keeps every size but
/// the number of steps (2; the wavefront 1 sweep, the short loops 200
/// instances), for a run that only shows the table's form.
pub fn programs(quick: bool) -> Vec<Program> {
    let steps = |full: u64| if quick { 2 } else { full };
    let strings = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>();
    let program =
        |name, stem, (source, fortran), args: &[u64], sizes: String, largest: u64| Program {
            name,
            stem,
            source,
            fortran: Some(fortran),
            args: strings(args),
            sizes,
            largest_instance: Some(largest),
        };
    let (s_n, s_steps) = STREAM;
    let (t_n, t_unit, t_steps) = TRIANGULAR;
    let (w_m, w_work, w_sweeps) = WAVEFRONT;
    let w_sweeps = if quick { 1 } else { w_sweeps };
    let (b_n, b_work, b_instances) = SHORT_BALANCED;
    let b_instances = if quick { 200 } else { b_instances };
    let (p_rows, p_steps) = SPARSE;
    let (h_n, h_work, h_steps, h_head, h_heavy) = PHASE_SHIFT;
    let m = MULTI_LOOP;
    vec![
        program(
            WORKLOADS[0],
            "stream",
            (STREAM_C, STREAM_F90),
            &[s_n, steps(s_steps)],
            format!("triad over {s_n} doubles, {} steps", steps(s_steps)),
            s_n,
        ),
        program(
            WORKLOADS[1],
            "triangular",
            (TRIANGULAR_C, TRIANGULAR_F90),
            &[t_n, t_unit, steps(t_steps)],
            format!(
                "{t_n} iterations, iteration i {t_unit} x ({t_n} - i) multiply-adds, {} steps",
                steps(t_steps)
            ),
            t_n,
        ),
        program(
            WORKLOADS[2],
            "wavefront",
            (WAVEFRONT_C, WAVEFRONT_F90),
            &[w_m, w_work, w_sweeps],
            format!(
                "{w_m} x {w_m} grid, {} anti-diagonal loops per sweep, {w_work} multiply-adds per cell, {w_sweeps} sweeps",
                2 * w_m - 1
            ),
            w_m,
        ),
        program(
            WORKLOADS[3],
            "short_balanced",
            (SHORT_BALANCED_C, SHORT_BALANCED_F90),
            &[b_n, b_work, b_instances],
            format!(
                "{b_instances} instances of {b_n} iterations x {b_work} multiply-adds"
            ),
            b_n,
        ),
        program(
            WORKLOADS[4],
            "sparse",
            (SPARSE_C, SPARSE_F90),
            &[p_rows, steps(p_steps)],
            format!(
                "SpMV, {p_rows} rows of Pareto(1.5) lengths 4 to 32767, {} steps",
                steps(p_steps)
            ),
            p_rows,
        ),
        program(
            WORKLOADS[5],
            "phase_shift",
            (PHASE_SHIFT_C, PHASE_SHIFT_F90),
            &[h_n, h_work, steps(h_steps), h_head, h_heavy],
            format!(
                "{h_n} iterations x {h_work} multiply-adds, {} steps, the first {h_head} {h_heavy}x heavier in the second half",
                steps(h_steps)
            ),
            h_n,
        ),
        program(
            WORKLOADS[6],
            "multi_loop",
            (MULTI_LOOP_C, MULTI_LOOP_F90),
            &[
                m.width,
                m.height,
                m.max_iter,
                m.tasks,
                m.unit,
                m.n,
                steps(m.steps),
            ],
            format!(
                "mandel {} rows x {} columns, {} iterations; tasks {} of Pareto(1.5) cost x {} multiply-adds; triad {} doubles; {} steps",
                m.height,
                m.width,
                m.max_iter,
                m.tasks,
                m.unit,
                m.n,
                steps(m.steps)
            ),
            m.height.max(m.tasks).max(m.n),
        ),
    ]
}

/// The runtime's `dynamic,k` configuration's `k` for a program whose
/// largest loop instance has `largest` iterations, on `threads` threads:
/// ⌊largest / (16 · threads)⌋, at least 1. No instance of any loop is then
/// cut into more than 16 chunks per thread (plus one), so the chunks'
/// dispatch cost is negligible everywhere; a program's shorter loops get
/// coarser shares (in `multi-loop`, `k` suits the triad, and the `mandel`
/// and `tasks` loops run as one chunk each).
pub fn chunk(largest: u64, threads: usize) -> u64 {
    (largest / (16 * threads as u64)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::omp::programs::{compile, parse_output, RunOutput};
    use crate::bench::omp::Compiler;
    use std::process::Command;

    /// Pins the sizes: a change here changes every figure of these
    /// workloads, and they were fixed before `auto` was measured on them.
    #[test]
    fn golden_sizes() {
        let p = programs(false);
        let names: Vec<&str> = p.iter().map(|p| p.name).collect();
        assert_eq!(names, WORKLOADS);
        let args: Vec<Vec<&str>> = p
            .iter()
            .map(|p| p.args.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(args[0], ["8000000", "40"]);
        assert_eq!(args[1], ["3000", "1", "60"]);
        assert_eq!(args[2], ["768", "128", "5"]);
        assert_eq!(args[3], ["64", "256", "20000"]);
        assert_eq!(args[4], ["150000", "120"]);
        assert_eq!(args[5], ["100000", "32", "40", "3000", "64"]);
        assert_eq!(
            args[6],
            ["192", "192", "128", "4096", "32", "4000000", "40"]
        );
        let largest: Vec<u64> = p.iter().map(|p| p.largest_instance.unwrap()).collect();
        assert_eq!(
            largest,
            [8_000_000, 3000, 768, 64, 150_000, 100_000, 4_000_000]
        );
        // The dynamic,k rule at 2 threads.
        let k: Vec<u64> = largest.iter().map(|&n| chunk(n, 2)).collect();
        assert_eq!(k, [250_000, 93, 24, 2, 4687, 3125, 125_000]);
        assert_eq!(chunk(5, 4), 1);
        let quick = programs(true);
        let quick_args: Vec<String> = quick.iter().map(|p| p.args.join(" ")).collect();
        assert_eq!(
            quick_args,
            [
                "8000000 2",
                "3000 1 2",
                "768 128 1",
                "64 256 200",
                "150000 2",
                "100000 32 2 3000 64",
                "192 192 128 4096 32 4000000 2"
            ]
        );
    }

    /// What the quick programs print, under libgomp and two threads: the
    /// checksums, the same under `static` and `dynamic,3`, and each
    /// program's loop names.
    const GOLDEN: [(u64, &[&str]); 7] = [
        (25_927_949_535_896_576, &["triad"]),
        (12_861_275_764_012, &["rows"]),
        (158_945_791_018_496, &["diagonal"]),
        (134_231_985_131, &["row"]),
        (648_331_747_566_218, &["spmv"]),
        (429_491_126_032_128, &["shift"]),
        (12_981_656_094_823_106, &["mandel", "tasks", "triad"]),
    ];

    /// Runs the quick programs built by `compiler` under two schedules and
    /// checks the golden checksums and loop names; `false` (with a
    /// SKIPPED line) where the compiler is missing, a failure where
    /// KEEL_TESTS_REQUIRE names it.
    fn check_golden(test: &str, compiler: Compiler, need: &str) -> bool {
        let dir = tempfile::TempDir::new().unwrap();
        let quick: Vec<Program> = programs(true)
            .into_iter()
            .filter(|p| compiler != Compiler::Gfortran || p.fortran.is_some())
            .collect();
        let exes = compile(&quick, dir.path(), compiler);
        if !keel_testkit::can_run(test, need, exes.is_ok()) {
            return false;
        }
        let exes = exes.unwrap();
        for (p, exe) in quick.iter().zip(&exes) {
            let k = WORKLOADS.iter().position(|&w| w == p.name).unwrap();
            let (want, loops) = GOLDEN[k];
            for schedule in ["static", "dynamic,3"] {
                let out = Command::new(exe)
                    .args(&p.args)
                    .env("OMP_NUM_THREADS", "2")
                    .env("OMP_SCHEDULE", schedule)
                    .env_remove("LD_PRELOAD")
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{} under {need}", p.name);
                let RunOutput {
                    seconds,
                    checksum,
                    loops: got,
                } = parse_output(&String::from_utf8_lossy(&out.stdout)).unwrap();
                assert_eq!(checksum, want, "{} under {need}, {schedule}", p.name);
                let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(names, loops, "{}", p.name);
                // The total is the sum of the loops' times (as printed, to
                // nanoseconds).
                let sum: f64 = got.iter().map(|(_, s)| s).sum();
                assert!(
                    (sum - seconds).abs() < 1e-8 * got.len() as f64,
                    "{}",
                    p.name
                );
            }
            // A bad argument is the program's usage error, not a crash.
            let out = Command::new(exe).arg("x").output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{} under {need}", p.name);
        }
        true
    }

    /// Needs `gcc -fopenmp`; SKIPPED without it.
    #[test]
    fn the_c_programs_checksums_are_pinned_under_gcc() {
        check_golden(
            "the_c_programs_checksums_are_pinned_under_gcc",
            Compiler::Gcc,
            "gcc -fopenmp",
        );
    }

    /// clang builds the same C: the same checksums (integer arithmetic,
    /// and doubles computed in the same order without contraction into
    /// fused multiply-adds on the baseline x86-64 target). Needs `clang
    /// -fopenmp`; SKIPPED without it.
    #[test]
    fn the_c_programs_checksums_are_the_same_under_clang() {
        check_golden(
            "the_c_programs_checksums_are_the_same_under_clang",
            Compiler::Clang,
            "clang -fopenmp",
        );
    }

    /// The Fortran versions compute what the C ones do: the same golden
    /// checksums and loop names, every workload. Needs `gfortran
    /// -fopenmp`; SKIPPED without it.
    #[test]
    fn the_fortran_programs_checksums_are_the_c_programs() {
        assert!(programs(true).iter().all(|p| p.fortran.is_some()));
        check_golden(
            "the_fortran_programs_checksums_are_the_c_programs",
            Compiler::Gfortran,
            "gfortran -fopenmp",
        );
    }
}
