//! `keel install-docs --man DIR --completions DIR`: the man pages (one
//! per command, `keel.1`, `keel-map.1`, `keel-omp-run.1`, ...) and the
//! bash, zsh and fish completions of this CLI, generated from its clap
//! definition so that they never disagree with `--help`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Cli;
use crate::error::CliError;

/// `keel install-docs`.
#[derive(Debug, Args)]
pub struct InstallDocsArgs {
    /// Write the man pages (section 1) into this folder.
    #[arg(long, value_name = "DIR")]
    pub man: Option<PathBuf>,
    /// Write `keel.bash`, `_keel` (zsh) and `keel.fish` into this folder.
    #[arg(long, value_name = "DIR")]
    pub completions: Option<PathBuf>,
}

fn io_err(path: &Path, e: std::io::Error) -> CliError {
    CliError::Runtime(format!("install-docs: {}: {e}", path.display()))
}

/// Writes one man page per command, recursively; the files written.
fn man_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<(), CliError> {
    // The page's NAME is the full command (`keel-omp-run`); clap wants a
    // 'static name, and this one-shot command writes a few dozen.
    let full: &'static str = Box::leak(name.to_string().into_boxed_str());
    let cmd = cmd.clone().name(full);
    let path = dir.join(format!("{name}.1"));
    let mut bytes = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut bytes)
        .map_err(|e| io_err(&path, e))?;
    std::fs::write(&path, bytes).map_err(|e| io_err(&path, e))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// `keel install-docs ...`: prints each file written.
pub fn run(args: &InstallDocsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut written = Vec::new();
    let cmd = Cli::command();
    if let Some(dir) = &args.man {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        man_pages(&cmd, "keel", dir, &mut written)?;
    }
    if let Some(dir) = &args.completions {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut c = cmd.clone();
            let path = clap_complete::generate_to(shell, &mut c, "keel", dir)
                .map_err(|e| io_err(dir, e))?;
            written.push(path);
        }
    }
    for p in written {
        writeln!(out, "{}", p.display())?;
    }
    Ok(())
}
