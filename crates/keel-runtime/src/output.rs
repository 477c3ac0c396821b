//! Files Keel writes where a user (or an environment variable) points it:
//! traces, reports (created afresh, or appended to by several processes). Keel may run as root in a directory others can write,
//! so such a file is never opened through a symbolic link and is never
//! anything but a regular file. Files Keel's tools read (reports, job
//! files) are read only when they are regular files, and only up to a
//! limit.

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
    open_regular(path, what, false)
}

/// Opens `path` to append `what` to it, creating it if needed, under the
/// same rules as [`create_regular_file`]: what several processes write to
/// one file, each with one `write` of a whole record (a regular file
/// opened with `O_APPEND` takes each such write at its end, unmixed).
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("lines.jsonl");
/// for line in [b"1\n", b"2\n"] {
///     keel::output::append_regular_file(&path, "the report")?.write_all(line)?;
/// }
/// assert_eq!(std::fs::read_to_string(&path)?, "1\n2\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn append_regular_file(path: &Path, what: &str) -> io::Result<File> {
    open_regular(path, what, true)
}

fn open_regular(path: &Path, what: &str, append: bool) -> io::Result<File> {
    let refused = |why: &str| io::Error::other(format!("{why}; refusing to write {what} there"));
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(refused("is a symbolic link")),
        Ok(meta) if !meta.is_file() => return Err(refused("is not a regular file")),
        _ => {}
    }
    let mut options = OpenOptions::new();
    if append {
        options.append(true).create(true);
    } else {
        options.write(true).create(true).truncate(true);
    }
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

/// Reads `path`, `what` it should be (`"the loop report"`, `"the job
/// file"`: it names the refusal), as text of at most `max_bytes`: only a
/// regular file (a FIFO, a device or a directory is refused at once; the
/// open does not wait for a FIFO's writer), never more than `max_bytes + 1`
/// bytes read.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("report.jsonl");
/// std::fs::write(&path, "{}\n")?;
/// assert_eq!(keel::output::read_regular_file(&path, "the report", 1024)?, "{}\n");
/// let big = keel::output::read_regular_file(&path, "the report", 2).unwrap_err();
/// assert!(big.to_string().contains("larger than 2 bytes"), "{big}");
/// let dev = keel::output::read_regular_file("/dev/zero".as_ref(), "the report", 2).unwrap_err();
/// assert!(dev.to_string().contains("not a regular file"), "{dev}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read_regular_file(path: &Path, what: &str, max_bytes: u64) -> io::Result<String> {
    use std::io::Read;
    let refused = |why: String| io::Error::other(format!("{why}; refusing to read {what} there"));
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO's open returns at once instead of waiting for a writer;
        // the fstat below refuses it. Reads of a regular file never return
        // `WouldBlock`.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(refused("is not a regular file".into()));
    }
    let mut text = String::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() as u64 > max_bytes {
        return Err(refused(format!("is larger than {max_bytes} bytes")));
    }
    Ok(text)
}
