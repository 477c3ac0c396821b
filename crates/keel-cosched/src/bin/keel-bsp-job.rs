//! `keel-bsp-job`: the synthetic BSP job of `keel-cosched` (see
//! `keel_cosched::bsp` for what it does and how it reports).

fn main() {
    std::process::exit(keel_cosched::bsp::main_with_args(std::env::args_os()));
}
