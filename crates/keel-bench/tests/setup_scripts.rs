//! The system-package setup scripts — `crates/keel-bench/install-libgomp.sh`,
//! `scripts/install-openmp-compilers.sh`, `scripts/install-mpich.sh` — in
//! their `--check` mode, which probes by compiling and running and never
//! installs (so neither root nor apt is needed). Against this machine, each
//! must find what is installed and say so; against environments made
//! incomplete on purpose (a PATH without mpicc, stub compilers that fail,
//! `LIBCLANG_PATH` at a directory holding only libclang-cpp), each must exit
//! 1 naming what is missing and the Debian package that brings it.
//!
//! A test whose tools this machine lacks prints `SKIPPED:` on stderr, unless
//! `KEEL_TESTS_REQUIRE` names them (CI as root), in which case it fails.

use std::ffi::OsString;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use keel_testkit::can_run;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const LIBGOMP: &str = "crates/keel-bench/install-libgomp.sh";
const OPENMP_COMPILERS: &str = "scripts/install-openmp-compilers.sh";
const MPICH: &str = "scripts/install-mpich.sh";

/// `tool` on this process's PATH.
fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|file| {
            file.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A folder under the system's temporary one, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("keel-setup-scripts-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Writes an executable shell script `name` here.
    fn stub(&self, name: &str, body: &str) {
        let file = self.0.join(name);
        std::fs::write(&file, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Links each of `tools` found on PATH here, under its own name.
    fn link_tools(&self, tools: &[&str]) {
        for tool in tools {
            if let Some(file) = which(tool) {
                symlink(file, self.0.join(tool)).unwrap();
            }
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `bash SCRIPT --check` from the repository root, with `LIBCLANG_PATH`
/// removed and then `env` set on top of this process's environment.
fn check(script: &str, env: &[(&str, OsString)]) -> Output {
    // By absolute path: a PATH under test may hold no bash.
    let bash = which("bash").expect("bash on PATH");
    let mut command = Command::new(bash);
    command
        .arg(repo_root().join(script))
        .arg("--check")
        .current_dir(repo_root())
        .env_remove("LIBCLANG_PATH");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

/// The exit code, stdout and stderr of `out`, for assertions and their
/// messages.
fn parts(out: &Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `--check` that must fail (status 1) without reporting `found` as
/// found, its stderr holding every one of `says`; its stderr.
fn fails_saying(out: &Output, found: &str, says: &[&str]) -> String {
    let (code, stdout, stderr) = parts(out);
    assert_eq!(code, Some(1), "stdout: {stdout}\nstderr: {stderr}");
    assert!(!stdout.contains(&format!("found {found}")), "{stdout}");
    for text in says {
        assert!(stderr.contains(text), "no `{text}` in:\n{stderr}");
    }
    stderr
}

/// PATH with `dir` first.
fn path_with_first(dir: &Path) -> OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// What the scripts call besides the compilers they probe; gcc finds its
/// assembler and linker on PATH too.
const BASIC_TOOLS: &[&str] = &[
    "mktemp", "cat", "rm", "grep", "head", "timeout", "id", "gcc", "cc", "as", "ld",
];

/// Whether `compiler -print-file-name=libgomp.so` finds libgomp, which it
/// links `-fopenmp` programs with.
fn finds_libgomp(compiler: &str) -> bool {
    which(compiler).is_some()
        && Command::new(compiler)
            .arg("-print-file-name=libgomp.so")
            .output()
            .is_ok_and(|out| {
                let file = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                out.status.success() && Path::new(&file).is_absolute() && Path::new(&file).exists()
            })
}

/// The library folders that Debian's libclang and libomp packages use.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("llvm-"))
        .map(|entry| entry.path().join("lib"))
        .collect();
    dirs.sort();
    for dir in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/lib",
    ] {
        dirs.push(PathBuf::from(dir));
    }
    dirs
}

/// Files in the library folders whose names pass `keep`.
fn libraries(keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    library_dirs()
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .flatten()
        .filter(|entry| keep(&entry.file_name().to_string_lossy()))
        .map(|entry| entry.path())
        .filter(|file| file.is_file())
        .collect()
}

/// The names bindgen (clang-sys) takes as libclang: libclang.so,
/// libclang-*.so, libclang.so.*, libclang-*.so.*, but no libclang-cpp.
fn is_libclang_name(name: &str) -> bool {
    !name.contains("-cpp.")
        && (name == "libclang.so"
            || name.starts_with("libclang.so.")
            || (name.starts_with("libclang-") && (name.ends_with(".so") || name.contains(".so."))))
}

fn real_libclang() -> Option<PathBuf> {
    libraries(is_libclang_name).into_iter().next()
}

fn have_mpich() -> bool {
    which("mpicc").is_some() && which("mpiexec").is_some()
}

#[test]
fn libgomp_check_finds_gcc_openmp() {
    let test = "libgomp_check_finds_gcc_openmp";
    if !can_run(test, "gcc -fopenmp", finds_libgomp("gcc")) {
        return;
    }
    let (code, stdout, stderr) = parts(&check(LIBGOMP, &[]));
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("install-libgomp: found gcc -fopenmp (libgomp)"),
        "{stdout}"
    );
}

#[test]
fn openmp_compilers_check_finds_each_compiler() {
    let test = "openmp_compilers_check_finds_each_compiler";
    let have_libomp = !libraries(|name| name.starts_with("libomp.so")).is_empty();
    let needs = [
        ("g++ -fopenmp", finds_libgomp("g++")),
        ("gfortran", finds_libgomp("gfortran")),
        ("clang -fopenmp", which("clang").is_some() && have_libomp),
    ];
    // Every one asked, so that each missing tool is reported.
    let runnable: Vec<bool> = needs
        .iter()
        .map(|&(what, have)| can_run(test, what, have))
        .collect();
    if !runnable.iter().all(|&one| one) {
        return;
    }
    let (code, stdout, stderr) = parts(&check(OPENMP_COMPILERS, &[]));
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    for what in [
        "g++ -fopenmp",
        "gfortran -fopenmp",
        "clang -fopenmp (LLVM's libomp)",
    ] {
        assert!(
            stdout.contains(&format!("install-openmp-compilers: found {what}:")),
            "{what} not found: {stdout}"
        );
    }
}

#[test]
fn mpich_check_finds_mpich_and_libclang() {
    let test = "mpich_check_finds_mpich_and_libclang";
    let mpich = can_run(test, "mpich", have_mpich());
    let libclang = can_run(test, "libclang", real_libclang().is_some());
    if !(mpich && libclang) {
        return;
    }
    let (code, stdout, stderr) = parts(&check(MPICH, &[]));
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("install-mpich: found MPICH:"), "{stdout}");
    assert!(
        stdout.contains("install-mpich: found libclang: "),
        "{stdout}"
    );
}

/// bindgen never takes libclang-cpp (the C++ library, without the C API)
/// for libclang, and looks only in `LIBCLANG_PATH` when that is set: a
/// folder holding libclang-cpp alone must read as libclang missing.
#[test]
fn mpich_check_rejects_libclang_cpp_alone() {
    let dir = TempDir::new("libclang-cpp");
    let real = libraries(|name| name.starts_with("libclang-cpp.so"))
        .into_iter()
        .next();
    match real {
        Some(file) => symlink(&file, dir.path().join(file.file_name().unwrap())).unwrap(),
        // Its name is what a careless probe would take it by.
        None => std::fs::write(dir.path().join("libclang-cpp.so.14"), b"").unwrap(),
    }
    fails_saying(
        &check(MPICH, &[("LIBCLANG_PATH", dir.path().into())]),
        "libclang",
        &[
            "install-mpich: libclang is missing: ",
            "LIBCLANG_PATH=",
            "apt-get install -y libclang-dev",
        ],
    );
}

/// A file with libclang's name is not enough: it must load and have
/// clang_createIndex, as bindgen needs.
#[test]
fn mpich_check_rejects_a_library_without_clang_create_index() {
    let test = "mpich_check_rejects_a_library_without_clang_create_index";
    // Any shared library but libclang: libclang-cpp where installed.
    let decoy = libraries(|name| name.starts_with("libclang-cpp.so"))
        .into_iter()
        .next()
        .or_else(|| {
            let out = Command::new("gcc")
                .arg("-print-file-name=libm.so.6")
                .output()
                .ok()?;
            let file = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            file.is_absolute().then_some(file)
        });
    if !can_run(test, "gcc", which("gcc").is_some() && decoy.is_some()) {
        return;
    }
    let dir = TempDir::new("decoy");
    symlink(decoy.unwrap(), dir.path().join("libclang.so.1")).unwrap();
    fails_saying(
        &check(MPICH, &[("LIBCLANG_PATH", dir.path().into())]),
        "libclang",
        &[
            "install-mpich: libclang is missing: ",
            "clang_createIndex",
            "apt-get install -y libclang-dev",
        ],
    );
}

/// `LIBCLANG_PATH` at a folder with a real libclang, or at the file itself,
/// is where the probe finds it.
#[test]
fn mpich_check_takes_libclang_from_libclang_path() {
    let test = "mpich_check_takes_libclang_from_libclang_path";
    let real = real_libclang();
    if !can_run(test, "libclang", real.is_some()) || !can_run(test, "gcc", which("gcc").is_some()) {
        return;
    }
    let real = real.unwrap();
    let dir = TempDir::new("libclang");
    let link = dir.path().join(real.file_name().unwrap());
    symlink(&real, &link).unwrap();
    for libclang_path in [dir.path(), link.as_path()] {
        let (code, stdout, stderr) =
            parts(&check(MPICH, &[("LIBCLANG_PATH", libclang_path.into())]));
        assert!(
            stdout.contains(&format!(
                "install-mpich: found libclang: {}",
                link.display()
            )),
            "LIBCLANG_PATH={}\nstdout: {stdout}\nstderr: {stderr}",
            libclang_path.display()
        );
        assert!(!stderr.contains("libclang is missing"), "{stderr}");
        // The exit status depends on MPICH, which this test does not need.
        let expected = if have_mpich() { 0 } else { 1 };
        assert_eq!(code, Some(expected), "stdout: {stdout}\nstderr: {stderr}");
    }
}

/// A PATH with the basic tools but no mpicc or mpiexec.
#[test]
fn mpich_check_without_mpicc_names_mpich() {
    let dir = TempDir::new("no-mpicc");
    dir.link_tools(BASIC_TOOLS);
    dir.link_tools(&["llvm-config"]);
    let stderr = fails_saying(
        &check(MPICH, &[("PATH", dir.path().into())]),
        "MPICH",
        &[
            "install-mpich: MPICH's mpicc and mpiexec are missing: ",
            "no mpicc on PATH",
            "apt-get install -y mpich libmpich-dev",
        ],
    );
    assert!(!stderr.contains("command not found"), "{stderr}");
}

/// A `gfortran` that fails whatever it is asked.
#[test]
fn openmp_compilers_check_names_a_failing_gfortran() {
    let dir = TempDir::new("failing-gfortran");
    dir.stub("gfortran", "exit 1");
    let stderr = fails_saying(
        &check(OPENMP_COMPILERS, &[("PATH", path_with_first(dir.path()))]),
        "gfortran",
        &[
            "install-openmp-compilers: gfortran -fopenmp is missing: ",
            "apt-get install -y gfortran)",
        ],
    );
    assert!(!stderr.contains("command not found"), "{stderr}");
}

/// A `gcc` that works but rejects `-fopenmp`, as one without libgomp's
/// files fails it.
#[test]
fn libgomp_check_names_libgomp_when_gcc_cannot_openmp() {
    let test = "libgomp_check_names_libgomp_when_gcc_cannot_openmp";
    let Some(gcc) = which("gcc") else {
        can_run(test, "gcc", false);
        return;
    };
    can_run(test, "gcc", true);
    let dir = TempDir::new("gcc-without-openmp");
    dir.stub(
        "gcc",
        &format!(
            "for a in \"$@\"; do\n  if [ \"$a\" = -fopenmp ]; then\n    \
             echo \"gcc: error: omp.h: No such file or directory\" >&2\n    exit 1\n  fi\n\
             done\nexec '{}' \"$@\"",
            gcc.display()
        ),
    );
    fails_saying(
        &check(LIBGOMP, &[("PATH", path_with_first(dir.path()))]),
        "gcc -fopenmp",
        &[
            "install-libgomp: gcc -fopenmp (libgomp) is missing: ",
            "libgomp1",
            "apt-get install -y libgcc-",
            "omp.h: No such file",
        ],
    );
}

/// A PATH with no gcc at all.
#[test]
fn libgomp_check_without_gcc_names_gcc() {
    let dir = TempDir::new("no-gcc");
    let tools: Vec<&str> = BASIC_TOOLS
        .iter()
        .copied()
        .filter(|tool| !matches!(*tool, "gcc" | "cc"))
        .collect();
    dir.link_tools(&tools);
    let stderr = fails_saying(
        &check(LIBGOMP, &[("PATH", dir.path().into())]),
        "gcc -fopenmp",
        &[
            "install-libgomp: gcc is missing: ",
            "apt-get install -y gcc)",
        ],
    );
    assert!(!stderr.contains("command not found"), "{stderr}");
}

#[test]
fn scripts_reject_unknown_arguments() {
    let bash = which("bash").expect("bash on PATH");
    for script in [LIBGOMP, OPENMP_COMPILERS, MPICH] {
        let out = Command::new(&bash)
            .arg(repo_root().join(script))
            .arg("--install-everything")
            .output()
            .unwrap();
        let (code, _, stderr) = parts(&out);
        assert_eq!(code, Some(2), "{script}: {stderr}");
        assert!(
            stderr.contains("usage: ") && stderr.contains("[--check]"),
            "{stderr}"
        );
    }
}
