//! The workspace as crates.io and docs.rs see it: which crates are
//! published, whether their manifests carry what a registry page and a
//! docs.rs build need, and (ignored by default, run by CI) whether each one
//! documents the way docs.rs documents it. `cargo publish --workspace
//! --dry-run`, in CI, packages each published crate and builds it from its
//! package in dependency order; `docs/publishing.md` is the guide.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Names on crates.io that belong to other projects (checked against the
/// registry's index; `docs/publishing.md` says when).
const TAKEN_ON_CRATES_IO: [&str; 2] = ["keel", "keel-cli"];

/// The only Linux target docs.rs builds: Keel uses Linux interfaces
/// (pidfds, cgroups, `sched_setaffinity`) throughout.
const DOCS_RS_TARGET: &str = "x86_64-unknown-linux-gnu";

/// The workspace's packages, from `cargo metadata`.
fn packages() -> Vec<Value> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(repo_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    metadata["packages"].as_array().expect("packages").clone()
}

fn name(package: &Value) -> &str {
    package["name"].as_str().expect("package name")
}

/// `publish` is `null` when any registry may have the crate, `[]` for
/// `publish = false`.
fn is_published(package: &Value) -> bool {
    package["publish"]
        .as_array()
        .is_none_or(|registries| !registries.is_empty())
}

fn has_library(package: &Value) -> bool {
    package["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .any(|target| {
            target["kind"]
                .as_array()
                .expect("kind")
                .iter()
                .any(|kind| matches!(kind.as_str(), Some("lib" | "rlib" | "cdylib" | "staticlib")))
        })
}

fn manifest_dir(package: &Value) -> PathBuf {
    Path::new(package["manifest_path"].as_str().expect("manifest_path"))
        .parent()
        .expect("manifest folder")
        .to_path_buf()
}

/// The strings of a `[package.metadata.docs.rs]` array.
fn docs_rs_strings(package: &Value, key: &str) -> Vec<String> {
    package["metadata"]["docs"]["rs"][key]
        .as_array()
        .map(|args| {
            args.iter()
                .filter_map(|a| a.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The optional `mpi` dependency (rsmpi), where a crate has one.
fn optional_mpi_dependency(package: &Value) -> Option<&Value> {
    package["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .find(|dep| dep["name"] == "mpi" && dep["optional"] == true)
}

#[test]
fn every_library_crate_is_published_under_a_free_name_or_the_guide_says_why_not() {
    let packages = packages();
    let guide = std::fs::read_to_string(repo_root().join("docs/publishing.md"))
        .expect("docs/publishing.md");
    let published: BTreeSet<&str> = packages
        .iter()
        .filter(|p| is_published(p))
        .map(name)
        .collect();
    assert!(published.contains("keel-runtime") && published.contains("keel-policy"));

    for package in &packages {
        let crate_name = name(package);
        if !is_published(package) {
            if has_library(package) {
                assert!(
                    guide.contains(&format!("`{crate_name}`")),
                    "{crate_name} has a library but is not published; docs/publishing.md must say why"
                );
            }
            continue;
        }
        assert!(
            !TAKEN_ON_CRATES_IO.contains(&crate_name),
            "{crate_name} is taken on crates.io"
        );
        assert!(
            guide.contains(&format!("`{crate_name}`")),
            "docs/publishing.md lists every published crate; {crate_name} is missing"
        );
        // Every crate it needs at run or build time is published too.
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("dependency name");
            let is_member = packages.iter().any(|p| name(p) == dep_name);
            if is_member && dep["kind"] != "dev" {
                assert!(
                    published.contains(dep_name),
                    "{crate_name} depends on {dep_name}, which is not published"
                );
            }
        }
    }
}

#[test]
fn published_manifests_carry_what_crates_io_and_docs_rs_need() {
    for package in packages().iter().filter(|p| is_published(p)) {
        let crate_name = name(package);
        let dir = manifest_dir(package);
        for field in ["description", "license"] {
            assert!(
                package[field]
                    .as_str()
                    .is_some_and(|v| !v.trim().is_empty()),
                "{crate_name}: {field} is missing"
            );
        }
        assert_eq!(
            package["documentation"].as_str(),
            Some(format!("https://docs.rs/{crate_name}").as_str()),
            "{crate_name}: documentation link"
        );
        let readme = package["readme"].as_str().expect("a readme");
        assert!(
            dir.join(readme).is_file(),
            "{crate_name}: readme {readme} is not a file"
        );
        for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
            assert!(
                dir.join(license).is_file(),
                "{crate_name}: {license} is missing"
            );
        }
        let keywords = package["keywords"].as_array().expect("keywords");
        assert!(
            (1..=5).contains(&keywords.len()),
            "{crate_name}: crates.io takes 1 to 5 keywords"
        );
        assert!(
            keywords
                .iter()
                .all(|k| k.as_str().is_some_and(|k| k.len() <= 20)),
            "{crate_name}: a keyword is longer than 20 characters"
        );
        assert!(
            !package["categories"]
                .as_array()
                .expect("categories")
                .is_empty(),
            "{crate_name}: no category"
        );

        let docs_rs = &package["metadata"]["docs"]["rs"];
        assert_eq!(
            docs_rs["all-features"], true,
            "{crate_name}: docs.rs all-features"
        );
        assert_eq!(
            docs_rs_strings(package, "targets"),
            [DOCS_RS_TARGET],
            "{crate_name}: docs.rs targets"
        );
        let rustdoc_args = docs_rs_strings(package, "rustdoc-args").join(" ");
        assert!(
            rustdoc_args.contains("--cfg docsrs"),
            "{crate_name}: rustdoc-args lack --cfg docsrs"
        );
        if let Some(mpi) = optional_mpi_dependency(package) {
            // docs.rs has no MPI library: the feature must build there
            // without rsmpi.
            assert_eq!(
                mpi["target"].as_str(),
                Some("cfg(not(keel_docs_rs))"),
                "{crate_name}: rsmpi must be left out where keel_docs_rs is set"
            );
            assert!(
                docs_rs_strings(package, "rustc-args").join(" ") == "--cfg keel_docs_rs"
                    && rustdoc_args.contains("--cfg keel_docs_rs"),
                "{crate_name}: docs.rs must set keel_docs_rs for rustc and rustdoc"
            );
        }
    }
}

/// `cargo`, as docs.rs runs it for `package`, in a target folder of its
/// own (other flags would rebuild the workspace's).
fn cargo_as_docs_rs(package: &Value, subcommand: &[&str]) -> Command {
    let toml_list = |args: Vec<String>| {
        let quoted: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
        format!("[{}]", quoted.join(", "))
    };
    let mut rustdoc_args = docs_rs_strings(package, "rustdoc-args");
    rustdoc_args.extend(["-D".into(), "warnings".into()]);
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(subcommand)
        .args([
            "-p",
            name(package),
            "--all-features",
            "--target",
            DOCS_RS_TARGET,
        ])
        .arg("--config")
        .arg(format!(
            "build.rustflags={}",
            toml_list(docs_rs_strings(package, "rustc-args"))
        ))
        .arg("--config")
        .arg(format!("build.rustdocflags={}", toml_list(rustdoc_args)))
        .current_dir(repo_root())
        .env("CARGO_TARGET_DIR", repo_root().join("target/docsrs"))
        // docs.rs runs a nightly toolchain; `feature(doc_cfg)` under
        // `--cfg docsrs` needs one.
        .env("RUSTC_BOOTSTRAP", "1")
        .env("DOCS_RS", "1")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS");
    cargo
}

#[test]
#[ignore = "builds every published crate's docs with docs.rs's flags (minutes); CI runs it"]
fn every_published_crate_documents_as_docs_rs_documents_it() {
    for package in packages().iter().filter(|p| is_published(p)) {
        let crate_name = name(package);
        let out = cargo_as_docs_rs(package, &["rustdoc", "--lib"])
            .output()
            .expect("cargo rustdoc runs");
        assert!(
            out.status.success(),
            "{crate_name}: the docs.rs build failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if optional_mpi_dependency(package).is_some() {
            let tree = cargo_as_docs_rs(package, &["tree", "-e", "normal", "--prefix", "none"])
                .output()
                .expect("cargo tree runs");
            let tree = String::from_utf8_lossy(&tree.stdout);
            assert!(
                tree.contains("keel-policy") && !tree.contains("mpi-sys"),
                "{crate_name}: the docs.rs build still links MPI:\n{tree}"
            );
        }
    }
}
