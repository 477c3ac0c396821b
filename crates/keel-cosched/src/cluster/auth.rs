//! Message authentication for the cluster protocol (CONTRACT STUB: the
//! helper implementing this file keeps every public signature below).

use std::path::Path;

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

/// MUNGE credentials through libmunge (loaded at run time).
#[derive(Debug)]
pub struct Munge {
    _private: (),
}

impl Munge {
    /// Connects to munged at `socket` (default: libmunge's default).
    pub fn new(_socket: Option<&Path>) -> Result<Munge, AuthError> {
        todo!()
    }
}

/// HMAC-SHA256 with a key shared by the MM and the NMs.
#[derive(Debug)]
pub struct SharedKey {
    _private: (),
}

impl SharedKey {
    /// The key in `path`.
    pub fn from_file(_path: &Path) -> Result<SharedKey, AuthError> {
        todo!()
    }
    /// A key from its bytes (at least 32).
    pub fn from_bytes(_key: &[u8]) -> Result<SharedKey, AuthError> {
        todo!()
    }
}
