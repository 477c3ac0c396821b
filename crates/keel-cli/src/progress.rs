//! Progress bars on stderr for long experiments, and the machine's
//! background load beside a bench's results: one helper for every command.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use keel_experiments::bench::{BackgroundLoad, HIGH_LOAD};
use keel_experiments::sim::Progress;

use crate::error::CliError;

/// A progress bar on stderr for long runs; hidden with `quiet` or when
/// stderr is not a terminal (a log file gets no redraws).
pub(crate) fn bar(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template = format!("{what} {{bar:40}} {{pos}}/{{len}} {{msg}}");
    bar.set_style(
        ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Runs `experiment` with a progress bar labelled `what` on stderr (see
/// [`bar`]): its length from [`Progress::Total`], one step and the step's
/// label per [`Progress::Step`]; cleared before the result returns.
pub(crate) fn with_progress<T>(
    what: &str,
    quiet: bool,
    experiment: impl FnOnce(
        &mut dyn FnMut(Progress<'_>),
    ) -> Result<T, keel_experiments::ExperimentError>,
) -> Result<T, CliError> {
    let mut shown = None;
    let result = experiment(&mut |p| match p {
        Progress::Total(n) => shown = Some(bar(n, what, quiet)),
        Progress::Step(msg) => {
            if let Some(bar) = &shown {
                bar.set_message(msg.to_string());
                bar.inc(1);
            }
        }
    });
    if let Some(bar) = shown {
        bar.finish_and_clear();
    }
    Ok(result?)
}

/// The header's words for a bench's background load: `background load
/// 0.12 CPU` (other processes' share of the machine while it ran), or why
/// there is none (`keel_experiments::bench::MIN_LOAD_WINDOW_S`).
pub(crate) fn load_words(load: Option<BackgroundLoad>) -> String {
    match load {
        Some(l) if l.steal_cpus > 0.005 => format!(
            "background load {:.2} CPU (+{:.2} stolen)",
            l.others_cpus, l.steal_cpus
        ),
        Some(l) => format!("background load {:.2} CPU", l.others_cpus),
        None => "background load not measured (a run under 0.5 s, or no /proc)".into(),
    }
}

/// Warns on stderr when the background load exceeds [`HIGH_LOAD`].
pub(crate) fn warn_if_loaded(command: &str, load: Option<BackgroundLoad>) {
    if let Some(l) = load.filter(BackgroundLoad::is_high) {
        eprintln!(
            "warning: {command}: other processes used {:.2} CPU while it ran (above {HIGH_LOAD}); its times are suspect, rerun on a quieter machine",
            l.others_cpus + l.steal_cpus
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_words_name_the_unit() {
        let l = BackgroundLoad {
            others_cpus: 0.123,
            steal_cpus: 0.0,
        };
        assert_eq!(load_words(Some(l)), "background load 0.12 CPU");
        assert!(load_words(None).starts_with("background load not measured"));
        let stolen = BackgroundLoad {
            steal_cpus: 0.5,
            ..l
        };
        assert!(load_words(Some(stolen)).contains("0.50 stolen"));
    }
}
