//! The C, C++ and Fortran examples of `examples-c/`, built against
//! `include/keel.h` (or `include/keel.f90`) and the libkeel.so cargo built
//! beside this test, run, and compared with the Rust API on the same input:
//! the same destination for every task. The C examples run under valgrind
//! (no invalid access, no leak) where it is installed.
//!
//! A test whose compiler (or valgrind) is missing prints `SKIPPED:` on
//! stderr, unless `KEEL_TESTS_REQUIRE` names it (CI as root), in which case
//! it fails.

mod support;

use std::path::PathBuf;
use std::process::Command;

use support::{
    can_run, compare_with_rust, crate_dir, destinations, has, load_file, run, scratch, stdout_ok,
};

/// The folder of the libkeel.so cargo built beside this test.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps, deps.parent().unwrap()]
        .iter()
        .find(|dir| dir.join("libkeel.so").exists())
        .unwrap_or_else(|| panic!("libkeel.so not found beside {}", exe.display()))
        .to_path_buf()
}

/// Builds `sources` (relative to the crate) with `compiler` into
/// `scratch/out`, against libkeel.so; panics with the compiler's output when
/// it fails (the compiler itself is known to work).
fn build(compiler: &str, flags: &[&str], sources: &[&str], out: &str) -> PathBuf {
    let bin = scratch().join(out);
    let lib = lib_dir();
    let built = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .args(sources.iter().map(|s| crate_dir().join(s)))
        .arg("-o")
        .arg(&bin)
        .arg(format!("-L{}", lib.display()))
        .arg("-lkeel")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .current_dir(scratch())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{compiler} {sources:?}:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    bin
}

#[test]
fn c_mapping_example_decides_as_the_rust_api() {
    if !can_run(
        "c_mapping_example_decides_as_the_rust_api",
        "gcc",
        has("gcc"),
    ) {
        return;
    }
    let bin = build(
        "gcc",
        &["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"],
        &["examples-c/map_loads.c"],
        "map_loads",
    );
    let valgrind = can_run(
        "C mapping example under valgrind",
        "valgrind",
        has("valgrind"),
    );
    compare_with_rust(&bin, valgrind, "map_loads.c");
    // Errors are statuses and messages, under valgrind too.
    let (path, _) = load_file(20, 2);
    let out = run(
        &bin,
        &[path.to_str().unwrap(), "2", "greedy", "bogus=1"],
        valgrind,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEEL_ERR_SPEC"));
    let out = run(&bin, &[path.to_str().unwrap(), "0", "greedy"], valgrind);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = scratch().join("nan.txt");
    std::fs::write(&bad, "1 0\nnan 1\n").unwrap();
    let out = run(&bin, &[bad.to_str().unwrap(), "2", "greedy"], valgrind);
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEEL_ERR_INVALID_INPUT"));
    // The static library links with what Rust's standard library needs
    // and decides alike.
    let lib = lib_dir().join("libkeel.a");
    let bin = scratch().join("map_loads_static");
    let built = Command::new("gcc")
        .args(["-std=c11", "-O1", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("examples-c/map_loads.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let (big, problem) = load_file(300, 8);
    let out = run(&bin, &[big.to_str().unwrap(), "8", "greedy"], false);
    let rust = keel_policy::mapping::registry()
        .build("greedy")
        .unwrap()
        .map(&problem.context())
        .unwrap();
    assert_eq!(
        destinations(&stdout_ok(&out, "static map_loads")),
        rust.as_slice()
    );
    // The leak check can fail: a result never freed is an error.
    if valgrind {
        let leaky = build(
            "gcc",
            &["-std=c11", "-O1", "-g", "-DKEEL_EXAMPLE_LEAK"],
            &["examples-c/map_loads.c"],
            "map_loads_leak",
        );
        let out = run(&leaky, &[path.to_str().unwrap(), "2", "greedy"], true);
        assert_eq!(
            out.status.code(),
            Some(99),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn c_loop_example_runs_every_iteration_once() {
    if !can_run(
        "c_loop_example_runs_every_iteration_once",
        "gcc",
        has("gcc"),
    ) {
        return;
    }
    let bin = build(
        "gcc",
        &["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"],
        &["examples-c/parallel_loop.c"],
        "parallel_loop",
    );
    stdout_ok(&run(&bin, &["3", "20000"], false), "parallel_loop.c");
    if can_run("C loop example under valgrind", "valgrind", has("valgrind")) {
        stdout_ok(
            &run(&bin, &["2", "2000"], true),
            "parallel_loop.c under valgrind",
        );
    }
}

#[test]
fn cpp_raii_example_decides_as_the_rust_api() {
    if !can_run(
        "cpp_raii_example_decides_as_the_rust_api",
        "g++",
        has("g++"),
    ) {
        return;
    }
    let bin = build(
        "g++",
        &["-std=c++17", "-Wall", "-Wextra", "-Werror", "-O1"],
        &["examples-c/raii.cpp"],
        "raii",
    );
    compare_with_rust(&bin, false, "raii.cpp");
}

#[test]
fn fortran_example_decides_as_the_rust_api() {
    if !can_run(
        "fortran_example_decides_as_the_rust_api",
        "gfortran",
        has("gfortran"),
    ) {
        return;
    }
    let module_dir = scratch().join("fortran-modules");
    std::fs::create_dir_all(&module_dir).unwrap();
    let j = format!("-J{}", module_dir.display());
    let bin = build(
        "gfortran",
        &["-Wall", "-Werror", "-O1", &j],
        &["include/keel.f90", "examples-c/loop_map.f90"],
        "loop_map",
    );
    compare_with_rust(&bin, false, "loop_map.f90");
}

#[test]
fn the_fortran_module_has_the_headers_constants() {
    let header = std::fs::read_to_string(crate_dir().join("include/keel.h")).unwrap();
    let module = std::fs::read_to_string(crate_dir().join("include/keel.f90")).unwrap();
    let mut checked = 0;
    for line in header.lines() {
        let line = line.trim().trim_end_matches(',');
        let (name, value) = if let Some(rest) = line.strip_prefix("#define ") {
            match rest.split_once(' ') {
                Some(pair) => pair,
                None => continue,
            }
        } else if let Some((name, value)) = line.split_once(" = ") {
            (name, value)
        } else {
            continue;
        };
        if !name.starts_with("KEEL_") {
            continue;
        }
        let found = module.lines().any(|l| {
            l.contains(&format!(":: {name} = ")) && {
                let v = l.rsplit(" = ").next().unwrap().trim();
                v.split('_').next() == Some(value)
            }
        });
        assert!(found, "keel.f90 lacks {name} = {value}");
        checked += 1;
    }
    assert!(checked >= 14, "{checked}");
    // Every function of the header has its interface.
    for line in header.lines() {
        if let Some(open) = line.find('(') {
            let name = line[..open].rsplit([' ', '*']).next().unwrap();
            if name.starts_with("keel_") && !line.starts_with(' ') && !line.starts_with("typedef") {
                assert!(
                    module.contains(&format!("name='{name}'")),
                    "keel.f90 lacks {name}"
                );
            }
        }
    }
}
