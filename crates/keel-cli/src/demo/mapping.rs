//! The mapping sections: every built-in mapping policy on one workload each,
//! chosen so that each policy's strength and weakness shows somewhere.

use std::io::Write;

use keel_workloads::generate;

use super::Section;
use crate::error::CliError;
use crate::report;

/// The policies every mapping section compares.
pub const POLICIES: [&str; 8] = [
    "block",
    "round-robin",
    "greedy",
    "binlpt",
    "binlpt:cut=faithful",
    "refine",
    "greedy-refine",
    "hier:nodes=4,outer=(greedy),inner=refine",
];

const LB_TEST: &str = "lb-test:tasks=16000,pus=80";
const LB_TEST_DRIFT: &str = "lb-test:tasks=16000,pus=80,redraw-seed=2";
const LEANMD: &str = "leanmd:x=8,y=8,z=8,pus=64";
const HOTSPOT: &str = "hotspot:tasks=8192,pus=32";

/// The mapping sections, in demo order.
pub fn sections() -> Vec<Section> {
    vec![
        Section {
            name: "lb-test",
            title: "Charm++ lb_test, 16000 elements (10 µs–3 ms, U^4 skew) on 80 PUs, from a block mapping",
            look_for: "greedy near 100% of bound but moving almost every element; refine stops at its 5% tolerance with fewer migrations.",
            body: |out| compare_all(out, LB_TEST),
        },
        Section {
            name: "lb-test-drift",
            title: "lb_test's dynamic imbalance: loads re-drawn after a greedy balance",
            look_for: "the current mapping has drifted; refine and greedy-refine repair it with far fewer migrations than greedy.",
            body: |out| compare_all(out, LB_TEST_DRIFT),
        },
        Section {
            name: "leanmd",
            title: "LeanMD-like, 8x8x8 cells, 19456 pair computes on 64 PUs",
            look_for: "the heavy cells come last, so block overloads the last PUs; binlpt keeps each PU's computes contiguous and still nears greedy.",
            body: |out| compare_all(out, LEANMD),
        },
        Section {
            name: "hotspot",
            title: "a contiguous hot spot, 8192 tasks on 32 PUs",
            look_for: "block leaves the hot band on a few PUs; greedy balances but splits neighbours everywhere; binlpt balances with few splits.",
            body: |out| compare_all(out, HOTSPOT),
        },
    ]
}

fn compare_all(out: &mut dyn Write, workload: &str) -> Result<(), CliError> {
    let problem = generate(workload)?;
    let cmp = report::compare(&problem, &POLICIES)?;
    report::write_summary(out, workload, &problem)?;
    report::write_table(out, &cmp)?;
    cmp.check(&|_| None)
}
