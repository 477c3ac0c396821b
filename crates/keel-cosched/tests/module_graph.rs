//! The gang scheduler's two trust boundaries read alone: `rundir` (the
//! files a root daemon creates) and `control` (the socket's requests)
//! import nothing of the crate but `sys`, its system-call wrappers and
//! plain types; and no module imports one that imports it back.

#[path = "../../../scripts/module_graph.rs"]
mod module_graph;

use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn the_trust_boundaries_import_only_the_system_layer_and_nothing_circles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph::graph(&src);
    assert!(
        graph["machine"].contains("node"),
        "the edges were found: {graph:?}"
    );
    let system: BTreeSet<String> = ["sys".to_string()].into();
    for boundary in ["rundir", "control"] {
        assert!(
            graph[boundary].is_subset(&system),
            "{boundary} imports {:?}",
            graph[boundary]
        );
    }
    if let Some(circle) = module_graph::circle(&graph) {
        panic!("an import circle: {} -> {}", circle.join(" -> "), circle[0]);
    }
}
