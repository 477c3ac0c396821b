//! The policy library's modules form layers: no module imports one that
//! imports it back, so each reads from the bottom up (`concept`, `error`
//! and `spec` first, then `context`, the policy families, `select`).

#[path = "../../../scripts/module_graph.rs"]
mod module_graph;

use std::path::Path;

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph::graph(&src);
    assert!(graph.len() > 10, "the modules were found: {graph:?}");
    assert!(
        graph["select"].contains("dls"),
        "the edges were found: {graph:?}"
    );
    if let Some(circle) = module_graph::circle(&graph) {
        panic!("an import circle: {} -> {}", circle.join(" -> "), circle[0]);
    }
}
