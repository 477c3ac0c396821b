//! The run directory: where a manager keeps its jobs' stderr files and
//! rendezvous directories.
//!
//! A root manager creates files for other users' jobs, so nothing here may
//! be something another user prepared. The layout:
//!
//! ```text
//! <tmp>/keel-cosched-<pid>-XXXXXX/     the manager's user, 0711, mkdtemp
//!     job-<id>/                        the manager's user, 0711
//!         rank-<n>.err                 created O_EXCL|O_NOFOLLOW, then
//!                                      handed to the job's user by fd
//!         rendezvous/                  the job's user, 0700: the only
//!                                      directory a job may write in
//! ```
//!
//! The run directory is created by `mkdtemp` (a fresh random name, created
//! with `O_EXCL` semantics), so a directory someone else made in advance is
//! never used. The job directory stays the manager's: a job's user can
//! reach (0711) but not change it, so the manager's files there cannot be
//! replaced by symlinks. Only `rendezvous/`, where the job's processes make
//! their sockets, belongs to the job's user; the manager never creates a
//! file in it. Ownership is always changed on a descriptor opened with
//! `O_NOFOLLOW`, never on a path.
//!
//! A run directory under the system's temporary directory, removed when dropped:
//!
//! ```
//! use keel_cosched::sys::Owner;
//! use keel_cosched::rundir::RunDir;
//! use keel_cosched::sys::{getgid, getuid};
//! let run = RunDir::create(&std::env::temp_dir()).unwrap();
//! let job = run.job_dir(1, Owner { uid: getuid(), gid: getgid() }).unwrap();
//! assert!(job.stderr(0).ends_with("job-1/rank-0.err"));
//! let path = run.path().to_path_buf();
//! drop(run);
//! assert!(!path.exists());
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::sys;
use crate::sys::Owner;

/// Mode of the run and job directories: other users may pass through to
/// their own job's rendezvous directory, but not list or change them.
pub const SHARED_DIR_MODE: u32 = 0o711;
/// Mode of a rendezvous directory (owned by the job's user).
pub const RENDEZVOUS_MODE: u32 = 0o700;
/// Name of a job's rendezvous directory inside its job directory.
pub const RENDEZVOUS_NAME: &str = "rendezvous";

/// A run directory this process created.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
}

/// One job's directories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobDir {
    /// `job-<id>`: the manager's; holds the ranks' stderr files.
    pub dir: PathBuf,
    /// `job-<id>/rendezvous`: the job's user's.
    pub rendezvous: PathBuf,
}

impl RunDir {
    /// Creates a fresh run directory `keel-cosched-<pid>-XXXXXX` in
    /// `parent` (random suffix, created atomically, so never one that
    /// existed before), mode [`SHARED_DIR_MODE`].
    pub fn create(parent: &Path) -> io::Result<RunDir> {
        let template = parent.join(format!("keel-cosched-{}-XXXXXX", sys::getpid()));
        let mut bytes = sys::cpath(&template)?.into_bytes_with_nul();
        // SAFETY: `bytes` is a writable NUL-terminated template ending in
        // six X's, which mkdtemp overwrites in place.
        let ret = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if ret.is_null() {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot create a run directory in {}: {e}", parent.display()),
            ));
        }
        bytes.pop(); // the NUL
        let path = PathBuf::from(OsString::from_vec(bytes));
        let dir = RunDir { path };
        // mkdtemp made it 0700; open it without following links and widen
        // it on the descriptor.
        let fd = open_dir_nofollow(&dir.path)?;
        fd.set_permissions(std::fs::Permissions::from_mode(SHARED_DIR_MODE))?;
        Ok(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates job `id`'s directories in this run directory
    /// ([`JobDir::create`]).
    pub fn job_dir(&self, id: u64, owner: Owner) -> io::Result<JobDir> {
        JobDir::create(&self.path, id, owner)
    }
}

impl JobDir {
    /// Creates job `id`'s directories in run directory `run` for `owner`:
    /// `job-<id>` (this process's, [`SHARED_DIR_MODE`]) and its
    /// `rendezvous` directory, handed to `owner` when that is another
    /// user. Either existing already is an error: they are only ever made
    /// here.
    pub fn create(run: &Path, id: u64, owner: Owner) -> io::Result<JobDir> {
        let dir = run.join(format!("job-{id}"));
        let rendezvous = dir.join(RENDEZVOUS_NAME);
        let named = |what: &Path, e: io::Error| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", what.display()))
        };
        mkdir_exclusive(&dir, SHARED_DIR_MODE).map_err(|e| named(&dir, e))?;
        mkdir_exclusive(&rendezvous, RENDEZVOUS_MODE).map_err(|e| named(&rendezvous, e))?;
        if owner.uid != sys::geteuid() {
            let fd = open_dir_nofollow(&rendezvous).map_err(|e| named(&rendezvous, e))?;
            sys::fchown(&fd, owner.uid, owner.gid).map_err(|e| named(&rendezvous, e))?;
        }
        Ok(JobDir { dir, rendezvous })
    }

    /// Where rank `rank`'s stderr goes.
    pub fn stderr(&self, rank: usize) -> PathBuf {
        self.dir.join(format!("rank-{rank}.err"))
    }
}

impl Drop for RunDir {
    /// Removes the directory and everything in it (`remove_dir_all` does
    /// not follow symlinks a job may have left in its rendezvous
    /// directory).
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `mkdir(path, mode)` that fails if anything (a directory, a symlink) is
/// already there, then sets the exact mode (the umask may have narrowed
/// it) on a descriptor opened without following links.
fn mkdir_exclusive(path: &Path, mode: u32) -> io::Result<()> {
    let c = sys::cpath(path)?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    if unsafe { libc::mkdir(c.as_ptr(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = open_dir_nofollow(path)?;
    fd.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// Opens a directory, refusing a symlink in its last component, and
/// checks that it belongs to this process's user.
fn open_dir_nofollow(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let uid = f.metadata()?.uid();
    if uid != sys::geteuid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {uid}, not to this manager (uid {})",
                path.display(),
                sys::geteuid()
            ),
        ));
    }
    Ok(f)
}

/// Creates a new file at `path` for writing, mode 0600: `O_CREAT | O_EXCL
/// | O_NOFOLLOW`, so neither an existing file nor a planted symlink is
/// ever opened. With `owner` the file is handed to that user through the
/// descriptor.
pub fn create_private_file(path: &Path, owner: Option<Owner>) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    if let Some(o) = owner {
        sys::fchown(&f, o.uid, o.gid)?;
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Owner {
        Owner {
            uid: sys::geteuid(),
            gid: sys::getgid(),
        }
    }

    #[test]
    fn run_dirs_are_fresh_random_and_0711() {
        let parent = tempfile::tempdir().unwrap();
        let a = RunDir::create(parent.path()).unwrap();
        let b = RunDir::create(parent.path()).unwrap();
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_string_lossy().to_string();
        assert!(name.starts_with(&format!("keel-cosched-{}-", sys::getpid())));
        let md = std::fs::symlink_metadata(a.path()).unwrap();
        assert!(md.is_dir());
        assert_eq!(md.mode() & 0o7777, SHARED_DIR_MODE);
        assert_eq!(md.uid(), sys::geteuid());
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists(), "dropping the run directory removes it");
    }

    #[test]
    fn job_dirs_are_exclusive() {
        let parent = tempfile::tempdir().unwrap();
        let run = RunDir::create(parent.path()).unwrap();
        let j = run.job_dir(7, me()).unwrap();
        assert_eq!(
            std::fs::metadata(&j.dir).unwrap().mode() & 0o7777,
            SHARED_DIR_MODE
        );
        assert_eq!(
            std::fs::metadata(&j.rendezvous).unwrap().mode() & 0o7777,
            RENDEZVOUS_MODE
        );
        let e = run.job_dir(7, me()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert!(e.to_string().contains("job-7"), "{e}");
    }

    #[test]
    fn private_files_never_follow_or_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("rank-0.err");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_private_file(&link, None).is_err());
        assert!(create_private_file(&target, None).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let fresh = dir.path().join("fresh");
        create_private_file(&fresh, None).unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o600);
    }
}
