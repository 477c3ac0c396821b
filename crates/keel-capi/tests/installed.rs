//! Keel as a user's project consumes it: against the prefix
//! `scripts/install.sh --prefix P` installed (named by `KEEL_INSTALL_PREFIX`),
//! a C project configured by CMake with `find_package(Keel)` (shared and
//! static targets) and a Fortran program built with
//! `pkg-config --cflags --libs keel`, run and compared with the Rust API:
//! the same destination for every task under every policy.
//!
//! Without `KEEL_INSTALL_PREFIX` each test prints `SKIPPED:`, unless
//! `KEEL_TESTS_REQUIRE` names `installed prefix` (CI installs one first), in
//! which case it fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{can_run, compare_with_rust, crate_dir, has, run, scratch};

/// The installed prefix, when the environment names one that holds Keel.
fn prefix(test: &str, tools: &[&str]) -> Option<PathBuf> {
    let prefix = std::env::var_os("KEEL_INSTALL_PREFIX").map(PathBuf::from);
    let installed = prefix
        .as_ref()
        .is_some_and(|p| p.join("lib/cmake/Keel/KeelConfig.cmake").is_file());
    if !can_run(test, "installed prefix", installed) {
        return None;
    }
    for tool in tools {
        if !can_run(test, tool, has(tool)) {
            return None;
        }
    }
    prefix
}

fn check(out: std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_cmake_project_finds_keel_and_decides_as_the_rust_api() {
    let test = "a_cmake_project_finds_keel_and_decides_as_the_rust_api";
    let Some(prefix) = prefix(test, &["cmake", "gcc"]) else {
        return;
    };
    let project = scratch().join("cmake-project");
    std::fs::create_dir_all(&project).unwrap();
    for (from, to) in [
        ("consumers/cmake/CMakeLists.txt", "CMakeLists.txt"),
        ("examples-c/map_loads.c", "map_loads.c"),
    ] {
        std::fs::copy(crate_dir().join(from), project.join(to)).unwrap();
    }
    let build = project.join("build");
    check(
        Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .output()
            .unwrap(),
        "cmake configure",
    );
    check(
        Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .output()
            .unwrap(),
        "cmake build",
    );
    compare_with_rust(&build.join("map_loads"), false, "CMake Keel::keel");
    compare_with_rust(
        &build.join("map_loads_static"),
        false,
        "CMake Keel::keel_static",
    );
}

#[test]
fn a_fortran_program_builds_with_pkg_config_and_decides_as_the_rust_api() {
    let test = "a_fortran_program_builds_with_pkg_config_and_decides_as_the_rust_api";
    let Some(prefix) = prefix(test, &["gfortran", "pkg-config"]) else {
        return;
    };
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "keel"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    check(pc.clone(), "pkg-config keel");
    let flags = String::from_utf8(pc.stdout).unwrap();
    let bin = scratch().join("loop_map_pkg_config");
    check(
        Command::new("gfortran")
            .arg(crate_dir().join("examples-c/loop_map.f90"))
            .args(flags.split_whitespace())
            .arg("-o")
            .arg(&bin)
            .current_dir(scratch())
            .output()
            .unwrap(),
        "gfortran with pkg-config's flags",
    );
    compare_with_rust(&bin, false, "pkg-config Fortran");
}

#[test]
fn the_installed_cli_finds_its_preload_library_and_man_pages() {
    let test = "the_installed_cli_finds_its_preload_library_and_man_pages";
    let Some(prefix) = prefix(test, &["gcc"]) else {
        return;
    };
    // An OpenMP program run by the installed `keel omp run` uses the
    // installed libkeel_omp.so: the report names Keel's schedule.
    let src = scratch().join("omp_sum.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nint main(void){long s=0;\n#pragma omp parallel for reduction(+:s) schedule(runtime)\nfor(long i=0;i<100000;i++) s+=i;\nprintf(\"sum %ld\\n\", s); return s != 4999950000L;}\n",
    )
    .unwrap();
    let bin = scratch().join("omp_sum");
    let built = Command::new("gcc")
        .args(["-fopenmp", "-O1"])
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    if !can_run(test, "gcc -fopenmp", built.status.success()) {
        return;
    }
    let keel = prefix.join("bin/keel");
    let out = run(
        &keel,
        &[
            "omp",
            "run",
            "--schedule",
            "gss",
            "--",
            bin.to_str().unwrap(),
        ],
        false,
    );
    check(out.clone(), "installed keel omp run");
    assert!(String::from_utf8_lossy(&out.stdout).contains("sum 4999950000"));
    let pages = prefix.join("share/man/man1");
    for page in ["keel.1", "keel-omp-run.1", "keel-map.1"] {
        assert!(
            pages.join(page).is_file(),
            "{page} missing in {}",
            pages.display()
        );
    }
    let manifest = std::fs::read_to_string(prefix.join("share/keel/install_manifest.txt")).unwrap();
    assert!(manifest.lines().all(|l| Path::new(l).starts_with(&prefix)));
    assert!(manifest.lines().any(|l| l.ends_with("lib/libkeel_omp.so")));
}

#[test]
fn the_module_file_puts_the_prefix_on_every_path_and_unloads_cleanly() {
    let test = "the_module_file_puts_the_prefix_on_every_path_and_unloads_cleanly";
    let Some(prefix) = prefix(test, &["gcc", "pkg-config"]) else {
        return;
    };
    let modulecmd = Command::new("modulecmd")
        .args(["sh", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !can_run(test, "modulecmd", modulecmd) {
        return;
    }
    // With the module loaded, a plain `gcc app.c -lkeel` finds the header
    // and the library and the program runs; unloaded, nothing is left.
    let app = scratch().join("module_app.c");
    std::fs::write(
        &app,
        "#include <keel.h>\n#include <stdio.h>\nint main(void){keel_status s = KEEL_OK;\nkeel_mapper *m = keel_mapper_new(\"greedy\", &s);\nif (!m || s != KEEL_OK) return 1;\nkeel_mapper_free(m); puts(\"mapper ok\"); return 0;}\n",
    )
    .unwrap();
    let script = r#"set -e
eval "$(modulecmd sh use "$1/share/modulefiles")"
eval "$(modulecmd sh load keel)"
echo "keel=$(command -v keel)"
echo "version=$(pkg-config --modversion keel)"
echo "root=$KEEL_ROOT"
gcc "$2" -lkeel -o "$3"
"$3"
eval "$(modulecmd sh unload keel)"
echo "after=$(command -v keel || echo none) pkg=${PKG_CONFIG_PATH:-none} ld=${LD_LIBRARY_PATH:-none}"
"#;
    let bin = scratch().join("module_app");
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(&prefix)
        .arg(&app)
        .arg(&bin)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", scratch())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    check(out, "module load keel, build and run");
    let version = env!("CARGO_PKG_VERSION");
    for line in [
        format!("keel={}", prefix.join("bin/keel").display()),
        format!("version={version}"),
        format!("root={}", prefix.display()),
        "mapper ok".to_string(),
        "after=none pkg=none ld=none".to_string(),
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{stdout}"
        );
    }
}
