//! Why an `auto,keel` search ended on its winner.

/// Why a search ended on its winner.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum SettledBy {
    /// Round 1 met a schedule within [`TIE_MARGIN`](super::TIE_MARGIN) of a balanced run's
    /// time: no other schedule could gain more than the margin.
    #[default]
    ImbalanceBound,
    /// Every other schedule was eliminated as slower beyond the noise.
    LastSurvivor,
    /// The noise was small enough that the survivors tie: the cheapest won.
    Resolved,
    /// Every survivor had [`ROUNDS`](super::ROUNDS) samples: the best median won.
    Rounds,
    /// The cost model let no other schedule run: their claims alone would
    /// cost more than a small share of the loop (loops of microseconds).
    Overhead,
}

impl SettledBy {
    /// A short lower-case label for reports.
    pub fn label(self) -> &'static str {
        match self {
            SettledBy::ImbalanceBound => "imbalance bound",
            SettledBy::LastSurvivor => "last survivor",
            SettledBy::Resolved => "tie within noise",
            SettledBy::Rounds => "best of all rounds",
            SettledBy::Overhead => "others cost too much",
        }
    }
}
