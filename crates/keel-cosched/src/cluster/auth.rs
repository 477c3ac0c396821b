//! Message authentication for the cluster protocol.
//!
//! Every frame between the machine manager and a node manager is sealed
//! by an [`Authenticator`]:
//!
//! - [`Munge`]: MUNGE credentials, the credential service every Slurm
//!   cluster already runs. A credential carries the sender's uid and gid,
//!   vouched for by munged, and munged refuses one it has decoded before,
//!   so a captured frame cannot be replayed. libmunge is loaded at run
//!   time, so that Keel builds and runs (with a shared key) on machines
//!   without it.
//! - [`SharedKey`]: HMAC-SHA256 under a key every host holds in a file.
//!   It says that a holder of the key sent the message unchanged, not who;
//!   the wire protocol's session nonces and sequence numbers refuse
//!   replays.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

mod munge;
pub use munge::Munge;

/// A sealed message opened and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The payload as the sender sealed it.
    pub payload: Vec<u8>,
    /// The sender's uid as the credential service vouches for it (MUNGE);
    /// `None` where the authenticator cannot tell (a shared key).
    pub uid: Option<u32>,
    /// The sender's gid, likewise.
    pub gid: Option<u32>,
}

/// Why a message could not be sealed or opened.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// The service or key is not there (libmunge missing, munged down,
    /// key file unreadable or unsafe).
    #[error("authentication unavailable: {0}")]
    Unavailable(String),
    /// The credential is not valid (forged, corrupted, wrong key).
    #[error("invalid credential: {0}")]
    Invalid(String),
    /// The credential was seen before.
    #[error("replayed credential")]
    Replayed,
    /// The credential is too old (or from the future).
    #[error("expired credential")]
    Expired,
}

/// Seals payloads so that the receiver can tell who sent them and that
/// nobody changed them.
pub trait Authenticator: Send + Sync + std::fmt::Debug {
    /// Short name for messages: `munge`, `shared-key`.
    fn name(&self) -> &'static str;
    /// The sealed form of `payload`.
    fn seal(&self, payload: &[u8]) -> Result<Vec<u8>, AuthError>;
    /// Checks a sealed message and returns its payload.
    fn open(&self, sealed: &[u8]) -> Result<Opened, AuthError>;
}

/// Fills `buf` from the kernel's random source (`getrandom(2)`, which
/// blocks only until the pool is first seeded, early in boot).
pub(crate) fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: the pointer and length describe `rest`, a writable part
        // of `buf` that getrandom only writes into.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// A random `u64` from [`random_bytes`].
pub(crate) fn random_u64() -> io::Result<u64> {
    let mut b = [0u8; 8];
    random_bytes(&mut b)?;
    Ok(u64::from_ne_bytes(b))
}

/// Fewest bytes of a [`SharedKey`]: HMAC-SHA256 is as strong as its key up
/// to the hash's 32 bytes.
pub const MIN_KEY_BYTES: usize = 32;
/// Largest key file [`SharedKey::from_file`] reads, bytes: a key is tens
/// of bytes, and anything much larger is the wrong file.
pub const MAX_KEY_FILE_BYTES: u64 = 4096;
/// Bytes of the tag [`SharedKey`] appends to a payload.
pub const TAG_BYTES: usize = 32;

/// HMAC-SHA256 with a key shared by the MM and the NMs.
///
/// The sealed form is the payload followed by its 32-byte tag; opening
/// checks the tag in constant time. The key holder's identity is unknown
/// to the receiver, so [`Opened::uid`] and [`Opened::gid`] are `None`.
///
/// ```
/// use keel_cosched::cluster::auth::{AuthError, Authenticator, SharedKey};
///
/// let key = SharedKey::from_bytes(&[7u8; 32])?;
/// let mut sealed = key.seal(b"heartbeat")?;
/// assert_eq!(key.open(&sealed)?.payload, b"heartbeat");
///
/// // One changed bit anywhere is refused.
/// sealed[0] ^= 1;
/// assert!(matches!(key.open(&sealed), Err(AuthError::Invalid(_))));
///
/// // So is a message sealed under another key.
/// let other = SharedKey::from_bytes(&[8u8; 32])?;
/// assert!(other.open(&key.seal(b"heartbeat")?).is_err());
/// # Ok::<(), AuthError>(())
/// ```
pub struct SharedKey {
    /// The MAC keyed once; each seal and open works on a clone.
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for SharedKey {
    // Never the key, which could otherwise reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedKey").finish_non_exhaustive()
    }
}

impl SharedKey {
    /// The key in `path`.
    ///
    /// The file's bytes, less one trailing newline, are the key (at least
    /// [`MIN_KEY_BYTES`]; [`generate`](SharedKey::generate) writes 64 hex
    /// digits). Since the key is all that stands between the network and
    /// the schedulers, the file is refused ([`AuthError::Unavailable`],
    /// naming the path and why) unless it is a regular file (not followed
    /// through a symbolic link), owned by this process's effective uid,
    /// neither readable nor writable by group or others, and at most
    /// [`MAX_KEY_FILE_BYTES`] long.
    pub fn from_file(path: &Path) -> Result<SharedKey, AuthError> {
        let refuse =
            |why: String| AuthError::Unavailable(format!("key file {}: {why}", path.display()));
        // O_NONBLOCK: opening a FIFO put in the key's place must not hang
        // the daemon waiting for a writer (it is refused below).
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| {
                refuse(if e.raw_os_error() == Some(libc::ELOOP) {
                    "is a symbolic link (give the file it points to)".to_string()
                } else {
                    e.to_string()
                })
            })?;
        // Checked on the open file, not the path, so the file cannot be
        // swapped between the check and the read.
        let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
        if !meta.file_type().is_file() {
            return Err(refuse("is not a regular file".into()));
        }
        let euid = crate::sys::geteuid();
        if meta.uid() != euid {
            return Err(refuse(format!(
                "is owned by uid {}, not by this process's uid {euid}",
                meta.uid()
            )));
        }
        let mode = meta.mode();
        let open_to: Vec<&str> = [
            (0o040, "readable by its group"),
            (0o020, "writable by its group"),
            (0o004, "readable by others"),
            (0o002, "writable by others"),
        ]
        .into_iter()
        .filter(|(bit, _)| mode & bit != 0)
        .map(|(_, what)| what)
        .collect();
        if !open_to.is_empty() {
            return Err(refuse(format!(
                "is {} (mode {:03o}; chmod 600 it)",
                open_to.join(", "),
                mode & 0o777
            )));
        }
        let too_long = |n: u64| {
            refuse(format!(
                "is {n} bytes, more than a key file's {MAX_KEY_FILE_BYTES}"
            ))
        };
        if meta.len() > MAX_KEY_FILE_BYTES {
            return Err(too_long(meta.len()));
        }
        let mut bytes = Vec::new();
        // One byte more than allowed, to tell a file that grew since the
        // check from one that fits.
        (&mut file)
            .take(MAX_KEY_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| refuse(e.to_string()))?;
        if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
            return Err(too_long(bytes.len() as u64));
        }
        let mut key = bytes.as_slice();
        if let Some(k) = key.strip_suffix(b"\n") {
            key = k.strip_suffix(b"\r").unwrap_or(k);
        }
        SharedKey::from_bytes(key).map_err(|e| match e {
            AuthError::Unavailable(why) => refuse(why),
            other => other,
        })
    }

    /// A key from its bytes (at least 32).
    pub fn from_bytes(key: &[u8]) -> Result<SharedKey, AuthError> {
        if key.len() < MIN_KEY_BYTES {
            return Err(AuthError::Unavailable(format!(
                "a shared key has at least {MIN_KEY_BYTES} bytes, this one {}",
                key.len()
            )));
        }
        let mac = Hmac::<Sha256>::new_from_slice(key)
            .map_err(|e| AuthError::Unavailable(format!("shared key: {e}")))?;
        Ok(SharedKey { mac })
    }

    /// Writes a new key file at `path` and returns its key: 32 random
    /// bytes as 64 hex digits and a newline, in a file created with mode
    /// 0600 (less the umask) that did not exist before. An existing file
    /// or symbolic link at `path` is never overwritten or followed
    /// ([`AuthError::Unavailable`]).
    ///
    /// ```
    /// use keel_cosched::cluster::auth::{Authenticator, SharedKey};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("keel.key");
    /// let made = SharedKey::generate(&path)?;
    /// let read = SharedKey::from_file(&path)?; // the same key
    /// assert_eq!(read.open(&made.seal(b"m")?)?.payload, b"m");
    /// assert!(SharedKey::generate(&path).is_err()); // never overwrites
    /// # Ok::<(), keel_cosched::cluster::auth::AuthError>(())
    /// ```
    pub fn generate(path: &Path) -> Result<SharedKey, AuthError> {
        let refuse =
            |why: String| AuthError::Unavailable(format!("new key file {}: {why}", path.display()));
        let mut raw = [0u8; 32];
        random_bytes(&mut raw).map_err(|e| refuse(format!("no random bytes: {e}")))?;
        let mut text: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let key = SharedKey::from_bytes(text.as_bytes())?;
        text.push('\n');
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| {
                refuse(if e.kind() == io::ErrorKind::AlreadyExists {
                    "exists already (a key is never overwritten; remove it first)".to_string()
                } else {
                    e.to_string()
                })
            })?;
        if let Err(e) = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
        {
            // The file is ours and half written: leave nothing that a
            // later `from_file` would take for a key.
            let _ = std::fs::remove_file(path);
            return Err(refuse(e.to_string()));
        }
        Ok(key)
    }
}

impl Authenticator for SharedKey {
    fn name(&self) -> &'static str {
        "shared-key"
    }

    fn seal(&self, payload: &[u8]) -> Result<Vec<u8>, AuthError> {
        let mut mac = self.mac.clone();
        mac.update(payload);
        let mut sealed = Vec::with_capacity(payload.len() + TAG_BYTES);
        sealed.extend_from_slice(payload);
        sealed.extend_from_slice(&mac.finalize().into_bytes());
        Ok(sealed)
    }

    fn open(&self, sealed: &[u8]) -> Result<Opened, AuthError> {
        let Some(split) = sealed.len().checked_sub(TAG_BYTES) else {
            return Err(AuthError::Invalid(format!(
                "{} bytes, shorter than the {TAG_BYTES}-byte tag",
                sealed.len()
            )));
        };
        let (payload, tag) = sealed.split_at(split);
        let mut mac = self.mac.clone();
        mac.update(payload);
        mac.verify_slice(tag).map_err(|_| {
            AuthError::Invalid("tag mismatch: sealed under another key, or altered".into())
        })?;
        Ok(Opened {
            payload: payload.to_vec(),
            uid: None,
            gid: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn random_u64s_differ() {
        let a = random_u64().unwrap();
        let b = random_u64().unwrap();
        assert_ne!(a, b);
    }

    fn key_file(dir: &tempfile::TempDir, content: &[u8], mode: u32) -> std::path::PathBuf {
        let path = dir.path().join("key");
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[track_caller]
    fn unavailable(r: Result<SharedKey, AuthError>, piece: &str) {
        match r {
            Err(AuthError::Unavailable(text)) => {
                assert!(text.contains(piece), "`{piece}` not in {text}")
            }
            other => panic!("expected Unavailable with `{piece}`, got {other:?}"),
        }
    }

    #[test]
    fn a_key_file_is_its_bytes_less_one_newline() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = [b'k'; 32];
        let with = |end: &str| [&bytes[..], end.as_bytes()].concat();
        let reference = SharedKey::from_bytes(&bytes).unwrap();
        for content in [with("\n"), with(""), with("\r\n")] {
            let key = SharedKey::from_file(&key_file(&dir, &content, 0o600)).unwrap();
            assert_eq!(
                reference.open(&key.seal(b"m").unwrap()).unwrap().payload,
                b"m"
            );
        }
        let two_newlines = key_file(&dir, &with("\n\n"), 0o600);
        let other = SharedKey::from_file(&two_newlines).unwrap();
        assert!(reference.open(&other.seal(b"m").unwrap()).is_err());
        unavailable(
            SharedKey::from_file(&key_file(&dir, &[b'k'; 31], 0o600)),
            "31",
        );
        unavailable(SharedKey::from_bytes(&[]), "at least 32");
        let shown = format!("{reference:?}");
        assert!(!shown.contains("kkkk"), "the key in Debug: {shown}");
    }

    #[test]
    fn unsafe_key_files_are_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let key = [b'k'; 40];
        for (mode, piece) in [
            (0o640, "readable by its group"),
            (0o620, "writable by its group"),
            (0o604, "readable by others"),
            (0o602, "writable by others"),
        ] {
            let path = key_file(&dir, &key, mode);
            unavailable(SharedKey::from_file(&path), piece);
            unavailable(SharedKey::from_file(&path), &path.display().to_string());
        }
        unavailable(
            SharedKey::from_file(&key_file(&dir, &[b'k'; 4097], 0o600)),
            "4097 bytes",
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(key_file(&dir, &key, 0o600), &link).unwrap();
        unavailable(SharedKey::from_file(&link), "symbolic link");
        unavailable(SharedKey::from_file(dir.path()), "not a regular file");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        unavailable(SharedKey::from_file(&fifo), "not a regular file");
        unavailable(SharedKey::from_file(&dir.path().join("absent")), "absent");
        if crate::sys::geteuid() == 0 {
            let path = key_file(&dir, &key, 0o600);
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            unavailable(SharedKey::from_file(&path), "owned by uid 65534");
        }
    }

    #[test]
    fn generate_makes_a_private_new_file_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.key");
        let made = SharedKey::generate(&path).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), 65);
        assert!(text.trim_end().bytes().all(|b| b.is_ascii_hexdigit()));
        let read = SharedKey::from_file(&path).unwrap();
        assert_eq!(read.open(&made.seal(b"m").unwrap()).unwrap().payload, b"m");
        unavailable(SharedKey::generate(&path), "exists already");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("target"), &dangling).unwrap();
        assert!(SharedKey::generate(&dangling).is_err());
        assert!(
            !dir.path().join("target").exists(),
            "a link is never followed"
        );
    }
}
