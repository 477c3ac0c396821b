//! The cosched section: the FCS paper's load-imbalanced jobs (§3.2.2,
//! Fig. 3) at the half width `keel cosched run` runs them for real,
//! simulated now under GS, SB and FCS.

use super::Section;
use crate::sim::cosched;

/// The cosched sections, in demo order.
pub fn sections() -> Vec<Section> {
    vec![Section {
        name: "cosched",
        title: "coscheduling two load-imbalanced jobs on 2 simulated PEs: gang, spin-block and flexible (FCS paper, §3.2.2)",
        look_for: "GS gives each job whole slices, so every fast rank idles half its slot and Max is the two jobs back to back; SB and FCS let a fast rank fill its slow peer's wait (FCS classifies the slow ranks DC and the fast ones F), finishing near perfect packing.",
        body: cosched::demo,
    }]
}
