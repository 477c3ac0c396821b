//! The committed seed corpus: `corpus/<target>/*`, small valid and
//! near-valid inputs for each format.

use std::path::{Path, PathBuf};

/// The corpus folder of this crate.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// The seeds of `target`, in file-name order (empty when it has none).
pub fn seeds(target: &str) -> std::io::Result<Vec<Vec<u8>>> {
    let dir = root().join(target);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.retain(|p| p.is_file());
    paths.sort();
    paths.iter().map(std::fs::read).collect()
}
