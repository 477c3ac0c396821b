//! The objects section: the Charm++ + OpenMP paper's Table 1 in miniature
//! (a Lassen-like front on 2 PUs), run now on Keel's objects context.

use super::Section;
use crate::bench_objects;

/// The objects sections, in demo order.
pub fn sections() -> Vec<Section> {
    vec![Section {
        name: "objects",
        title: "over-decomposed objects with a moving hot spot: Greedy when it pays and every 10 steps, stealing of potential tasks, both (Charm++ + OpenMP paper, Table 1)",
        look_for: "No LB has the largest λ; Greedy lags the moving front between remaps (the adaptive row remaps when the loss since its last remap repays the remap, and stops once stealing leaves nothing to repay); stealing spreads each step's excess to the idle PU, so Greedy + stealing has the lowest λ and time ÷ ideal nearest 1.",
        body: bench_objects::demo,
    }]
}
