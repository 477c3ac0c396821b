//! How studies judge runs: the evaluation yardsticks of the Auto4OMP paper
//! (ManualBest, Oracle, % degradation; [`oracle`]) and the statistics of
//! repeated measurements ([`stats`]). Policies never use them: they live
//! with the studies, not in the policy library.

pub mod oracle;
pub mod stats;
