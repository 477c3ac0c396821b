//! Builds the libgomp side of the benchmark (`c/schedbench.c`) when the
//! `libgomp` feature is on; without it there is nothing to build.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c/schedbench.c");
    if std::env::var_os("CARGO_FEATURE_LIBGOMP").is_none() {
        return;
    }
    cc::Build::new()
        .file("c/schedbench.c")
        .flag("-fopenmp")
        .opt_level(2)
        .warnings(true)
        .compile("keel_schedbench");
    // `-fopenmp` at compile time only marks the objects; the runtime is
    // linked here (gcc's driver finds its own libgomp.so).
    println!("cargo:rustc-link-lib=gomp");
}
