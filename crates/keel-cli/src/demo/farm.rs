//! The farm section: the ARRS paper's heterogeneous-worker experiment in
//! miniature (two workers, one 6.5× faster), every dispatch policy once,
//! run now on Keel's farm.

use super::Section;
use crate::bench_farm;

/// The farm sections, in demo order.
pub fn sections() -> Vec<Section> {
    vec![Section {
        name: "farm",
        title: "a task farm with one fast and one slow worker, every dispatch policy (FastFlow ARRS paper, Fig. 7)",
        look_for: "rr splits the items evenly and waits for the slow worker; arrs-adaptive and on-demand send most items to the fast one (arrs needs more than one 300-item block to level); shortest-queue sees equal queues because the emitter outpaces the workers.",
        body: bench_farm::demo,
    }]
}
