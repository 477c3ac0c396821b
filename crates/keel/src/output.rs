//! Files Keel writes where a user (or an environment variable) points it:
//! traces, reports. Keel may run as root in a directory others can write,
//! so such a file is never opened through a symbolic link and is never
//! anything but a regular file.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Creates (or truncates) `path` for writing `what` (`"the trace"`, `"the
/// report"`: it names the refusal): never through a symbolic link, never
/// anything but a regular file (a FIFO is opened non-blocking, so that the
/// check is reached instead of a hang).
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("out.json");
/// keel::output::create_regular_file(&path, "the report")?;
/// assert!(path.is_file());
///
/// let link = dir.path().join("link.json");
/// std::os::unix::fs::symlink(&path, &link)?;
/// let refused = keel::output::create_regular_file(&link, "the report").unwrap_err();
/// assert!(refused.to_string().contains("symbolic link"), "{refused}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn create_regular_file(path: &Path, what: &str) -> io::Result<File> {
    let refused = |why: &str| io::Error::other(format!("{why}; refusing to write {what} there"));
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(refused("is a symbolic link")),
        Ok(meta) if !meta.is_file() => return Err(refused("is not a regular file")),
        _ => {}
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o644)
            // O_NONBLOCK only matters for a FIFO put there after the check
            // above: its open fails or returns at once instead of waiting
            // for a reader, and the fstat below refuses it. Writes to a
            // regular file never return `WouldBlock`.
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return refused("is a symbolic link");
        }
        e
    })?;
    if !file.metadata()?.is_file() {
        return Err(refused("is not a regular file"));
    }
    Ok(file)
}
