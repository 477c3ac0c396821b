//! How many chunks of a potential task to expose for stealing
//! (Charm++ + OpenMP paper, §4.3.2–4.3.3; the released code's heuristic is
//! Charm++'s OpenMP integration, `src/libs/conv-libs/openmp_llvm`: a team of
//! `min(requested, max(idle PEs + 1, mean stolen ratio))` threads, the ratio
//! `⌈team / tasks the master ran⌉` averaged over a window of 16 joins).
//!
//! An object running a parallel loop over its own work cuts it into chunks.
//! Pushing every chunk on a stealable deque costs queue traffic the owner
//! pays even when nobody steals, so only some chunks are *exposed*; the
//! owner runs the rest privately. The paper's best scheme, "history + when
//! idle", exposes work for the larger of
//!
//! - the number of idle workers right now (an atomic counter the runtime
//!   keeps), and
//! - the moving average, over a short history, of how much of this worker's
//!   earlier potential tasks thieves took: the stolen-to-local ratio, in
//!   helpers (1 = thieves ran as many chunks as the owner).
//!
//! Both terms count *helpers*, so the owner keeps its own share `1/(1+h)` of
//! the chunks and exposes the rest: `exposed = ⌈n·h/(1+h)⌉`, at most `n`.
//! With `h = 0` nothing is exposed and the loop costs no queue operation.
//! The idle term restores stealing whenever a worker runs dry; the history
//! term keeps exposing while workers keep stealing, so that a worker that
//! becomes idle *during* a long task still finds something to take (the
//! paper's reason for not using the counter alone).
//!
//! The policy is pure: the context passes the idle count and reports what
//! was stolen; no clock, no thread, no atomic.
//!
//! ```
//! use keel_policy::expose::{Expose, ExposeState};
//! let policy = Expose::parse("history-idle").unwrap();
//! let mut state = ExposeState::new(&policy);
//! // No history of steals yet (the initial ratio is one helper) and nobody idle:
//! assert_eq!(state.decide(&policy, 8, 0, 2), 4);
//! // Thieves took nothing for a whole window: only idle workers count.
//! for _ in 0..16 { state.record(0, 8); }
//! assert_eq!(state.decide(&policy, 8, 0, 2), 0);
//! assert_eq!(state.decide(&policy, 8, 1, 2), 4);
//! ```

mod history;

pub use history::ExposeState;

use crate::error::PolicyError;
use crate::spec::Spec;

/// The longest history a spec may ask for: every worker allocates a ring of
/// this many ratios, so `history=10000000000` must be an error, not an
/// allocation failure.
pub const MAX_HISTORY: usize = 1 << 16;

/// Length of the stolen-to-local history: the released Charm++ integration
/// keeps a ring of 16 ratios (`windowSize`).
pub const DEFAULT_HISTORY: usize = 16;

/// The ratio the history starts from, in helpers. Charm++'s `INITIAL_RATIO`
/// is a team of 2 (the owner and one helper), i.e. one helper.
pub const DEFAULT_INITIAL: f64 = 1.0;

/// Which terms decide the exposure (the paper's §4.3 schemes plus the two
/// extremes used as baselines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Expose nothing: the owner runs every chunk (no stealing).
    None,
    /// Expose every chunk (plain work stealing, §4.3.1's dynamic case).
    All,
    /// Only the idle-worker counter (§4.3.3 alone).
    Idle,
    /// Only the stolen-to-local history (§4.3.2 alone).
    History,
    /// The larger of both: the scheme the paper's Lassen runs use (§5).
    HistoryIdle,
}

impl Scheme {
    /// Every scheme's spec name, in declaration order.
    pub const NAMES: [&'static str; 5] = ["none", "all", "idle", "history", "history-idle"];

    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::None => "none",
            Scheme::All => "all",
            Scheme::Idle => "idle",
            Scheme::History => "history",
            Scheme::HistoryIdle => "history-idle",
        }
    }

    /// Whether the idle-worker counter is one of its terms.
    pub fn has_idle_term(self) -> bool {
        matches!(self, Scheme::Idle | Scheme::HistoryIdle)
    }
}

/// An exposure policy: a scheme and its history parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expose {
    /// Which terms count.
    pub scheme: Scheme,
    /// Ratios the moving average covers (≥ 1).
    pub history: usize,
    /// Helpers the history starts from (≥ 0).
    pub initial: f64,
    /// Whether the idle term is also consulted while the owner runs its
    /// own chunks, not only when the task starts (see
    /// [`ExposeState::late`]). Only the schemes with an idle term have it.
    pub late: bool,
}

impl Default for Expose {
    fn default() -> Self {
        Expose {
            scheme: Scheme::HistoryIdle,
            history: DEFAULT_HISTORY,
            initial: DEFAULT_INITIAL,
            late: true,
        }
    }
}

impl Expose {
    /// Parses `none | all | idle | history | history-idle`, the last three
    /// with `[:history=N,initial=R]`, and the two with an idle term also with
    /// `late=on|off` (default on). Typed errors list the valid names.
    pub fn parse(spec: &str) -> Result<Self, PolicyError> {
        Self::from_spec(&Spec::parse(spec)?)
    }

    /// Builds from a parsed spec.
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        let scheme = match spec.name.as_str() {
            "none" => Scheme::None,
            "all" => Scheme::All,
            "idle" => Scheme::Idle,
            "history" => Scheme::History,
            "history-idle" => Scheme::HistoryIdle,
            other => {
                return Err(PolicyError::UnknownPolicy {
                    family: "expose",
                    name: other.to_string(),
                    valid: Scheme::NAMES.iter().map(|s| s.to_string()).collect(),
                })
            }
        };
        let keys: &[&str] = match scheme {
            Scheme::None | Scheme::All => &[],
            Scheme::History => &["history", "initial"],
            Scheme::Idle | Scheme::HistoryIdle => &["history", "initial", "late"],
        };
        spec.check_keys(keys)?;
        let d = Expose::default();
        Ok(Expose {
            scheme,
            history: spec
                .count_in("history", 1, MAX_HISTORY)?
                .unwrap_or(d.history),
            initial: spec.number_at_least("initial", 0.0)?.unwrap_or(d.initial),
            late: scheme.has_idle_term()
                && spec.choice("late", &["on", "off"])?.unwrap_or("on") == "on",
        })
    }

    /// The canonical spec string.
    pub fn spec(&self) -> String {
        let mut params = Vec::new();
        if matches!(self.scheme, Scheme::None | Scheme::All) {
            return self.scheme.name().to_string();
        }
        if self.history != DEFAULT_HISTORY || self.initial != DEFAULT_INITIAL {
            params.push(format!("history={}", self.history));
            params.push(format!("initial={}", self.initial));
        }
        if self.scheme.has_idle_term() && !self.late {
            params.push("late=off".to_string());
        }
        if params.is_empty() {
            self.scheme.name().to_string()
        } else {
            format!("{}:{}", self.scheme.name(), params.join(","))
        }
    }

    /// Whether this policy ever exposes anything.
    pub fn steals(&self) -> bool {
        self.scheme != Scheme::None
    }
}

/// Chunks to expose out of `chunks` for `helpers` expected helpers:
/// `⌈chunks·h/(1+h)⌉`, the owner keeping its share `1/(1+h)`.
pub fn chunks_for_helpers(chunks: usize, helpers: f64) -> usize {
    if helpers.is_nan() || helpers <= 0.0 || chunks == 0 {
        return 0;
    }
    let share = helpers / (1.0 + helpers);
    // The small epsilon keeps an exact product (4.0 for 8 chunks and one
    // helper) from rounding up through floating-point noise.
    let exposed = (chunks as f64 * share - 1e-9).ceil().max(1.0);
    (exposed as usize).min(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme_and_round_trips() {
        for name in Scheme::NAMES {
            let p = Expose::parse(name).unwrap();
            assert_eq!(p.scheme.name(), name);
            assert_eq!(Expose::parse(&p.spec()).unwrap(), p);
        }
        let p = Expose::parse("history-idle:history=4,initial=0.5").unwrap();
        assert_eq!((p.history, p.initial), (4, 0.5));
        assert_eq!(p.spec(), "history-idle:history=4,initial=0.5");
        assert_eq!(Expose::parse(&p.spec()).unwrap(), p);
        let p = Expose::parse("idle:late=off").unwrap();
        assert!(!p.late);
        assert_eq!(p.spec(), "idle:late=off");
        assert_eq!(Expose::parse(&p.spec()).unwrap(), p);
        assert!(Expose::parse("history-idle:late=on").unwrap().late);
        assert!(matches!(
            Expose::parse("history:late=on"),
            Err(PolicyError::UnknownParameter { .. })
        ));
        assert!(matches!(
            Expose::parse("idle:late=sometimes"),
            Err(PolicyError::InvalidParameter { .. })
        ));
        assert!(!Expose::parse("none").unwrap().steals());
    }

    #[test]
    fn bad_specs_are_typed_errors_listing_what_is_valid() {
        let e = Expose::parse("sometimes").unwrap_err();
        assert!(e.to_string().contains("history-idle"), "{e}");
        assert!(matches!(
            Expose::parse("all:history=3"),
            Err(PolicyError::UnknownParameter { .. })
        ));
        assert!(matches!(
            Expose::parse("idle:history=0"),
            Err(PolicyError::InvalidParameter { .. })
        ));
        assert!(matches!(
            Expose::parse("history:initial=-1"),
            Err(PolicyError::InvalidParameter { .. })
        ));
        for huge in [
            "history:history=65537",
            "history:history=18446744073709551615",
        ] {
            let e = Expose::parse(huge).unwrap_err();
            assert!(e.to_string().contains("1..=65536"), "{huge}: {e}");
        }
        assert_eq!(
            Expose::parse("history:history=65536").unwrap().history,
            MAX_HISTORY
        );
    }

    #[test]
    fn chunks_for_helpers_keeps_the_owners_share() {
        assert_eq!(chunks_for_helpers(8, 0.0), 0);
        assert_eq!(chunks_for_helpers(8, 1.0), 4);
        assert_eq!(chunks_for_helpers(8, 3.0), 6);
        assert_eq!(chunks_for_helpers(8, 0.1), 1);
        assert_eq!(chunks_for_helpers(8, 1e9), 8);
        assert_eq!(chunks_for_helpers(0, 5.0), 0);
        assert_eq!(chunks_for_helpers(1, 1.0), 1);
        assert_eq!(chunks_for_helpers(8, f64::NAN), 0);
    }
}
