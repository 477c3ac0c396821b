//! The import graph of a crate's top-level modules, read from its sources,
//! for the tests that keep it free of circles (`tests/module_graph.rs` of
//! `keel-policy` and `keel-cosched` include this file). A module depends on
//! another when its non-test code names it through `crate::` — in a `use`
//! (grouped ones included) or a path. Test code (files named `*test*`,
//! `#[cfg(test)] mod x { … }` at the end of a file) and comments are left
//! out: tests may look across the layers they check.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Module name → the crate's other top-level modules it names.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose `src/` is `src`.
pub fn graph(src: &Path) -> Graph {
    let mut modules = BTreeMap::new();
    for entry in fs::read_dir(src).expect("the crate's src/ is readable") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if name == "lib" || name == "main" {
            continue;
        }
        let is_module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
        if is_module {
            modules
                .entry(name.to_string())
                .or_insert_with(Vec::new)
                .push(path.clone());
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(name, paths)| {
            let mut deps = BTreeSet::new();
            for file in paths.iter().flat_map(|p| rust_files(p)) {
                let text = fs::read_to_string(&file).expect("a readable source file");
                for dep in named_modules(&code_of(&text)) {
                    if dep != *name && names.contains(&dep) {
                        deps.insert(dep);
                    }
                }
            }
            (name.clone(), deps)
        })
        .collect()
}

/// The `.rs` files at `path` (a file, or a directory's tree) that are not
/// test files.
fn rust_files(path: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if path.is_dir() {
        for entry in fs::read_dir(path).expect("a readable module directory") {
            files.extend(rust_files(&entry.expect("a directory entry").path()));
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.contains("test") {
            files.push(path.to_path_buf());
        }
    }
    files
}

/// `text` without comments and without its trailing inline test module.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        code.push_str(line);
        code.push('\n');
    }
    let mut cut = code.len();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let at = from + at;
        let rest = code[at + "#[cfg(test)]".len()..].trim_start();
        let rest = rest.strip_prefix("pub ").unwrap_or(rest);
        if let Some(after) = rest.strip_prefix("mod ") {
            let head: String = after
                .chars()
                .take_while(|c| *c != ';' && *c != '{')
                .collect();
            if after[head.len()..].starts_with('{') {
                cut = at;
                break;
            }
        }
        from = at + 1;
    }
    code.truncate(cut);
    code
}

/// The first segment of every `crate::` path in `code`, grouped `use
/// crate::{a::X, b}` included.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let first = item.trim().split("::").next().unwrap_or("");
                let first: String = first
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !first.is_empty() {
                    found.insert(first);
                }
            }
        } else {
            let first: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !first.is_empty() {
                found.insert(first);
            }
        }
    }
    found
}

/// A circle of modules, each naming the next and the last the first, if
/// the graph has one.
pub fn circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}
