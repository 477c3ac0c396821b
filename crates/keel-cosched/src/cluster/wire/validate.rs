//! The bounds a [`Msg`] must keep beyond what its types say: every message
//! is checked when it arrives (and before it is sent, so that a sender
//! finds its own mistake rather than losing the connection to it).

use super::{Msg, WireError, MAX_CELLS, MAX_TEXT_BYTES};

impl Msg {
    /// The message's `type` tag, as on the wire: `hello`, `heartbeat`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "hello",
            Msg::Welcome { .. } => "welcome",
            Msg::Refused { .. } => "refused",
            Msg::Ping { .. } => "ping",
            Msg::Pong { .. } => "pong",
            Msg::Heartbeat { .. } => "heartbeat",
            Msg::TaskUp { .. } => "task-up",
            Msg::TaskDown { .. } => "task-down",
            Msg::Classified { .. } => "classified",
            Msg::Enacted { .. } => "enacted",
            Msg::Notice { .. } => "notice",
        }
    }

    /// Checks the message's bounds ([`WireError::Protocol`] naming the
    /// message, the field and the bound):
    ///
    /// - every text field has at most [`MAX_TEXT_BYTES`] bytes;
    /// - `hello`: the node name is not empty and has no control
    ///   characters (it is printed in logs and used as a key); `pes` is
    ///   `1..=MAX_CELLS`;
    /// - `welcome`: the slot length is positive;
    /// - `heartbeat`: at most [`MAX_CELLS`] cells;
    /// - `task-up`: the step has a task (`size >= 1`), the rank is one of
    ///   its tasks (`rank < size`), and the PE is below [`MAX_CELLS`].
    ///
    /// ```
    /// use keel_cosched::cluster::wire::Msg;
    ///
    /// let hello = |node: &str, pes| Msg::Hello { node: node.into(), pes, boot_id: "b".into() };
    /// assert!(hello("n1", 4).validate().is_ok());
    /// assert!(hello("", 4).validate().is_err());
    /// assert!(hello("n1\n", 4).validate().is_err());
    /// assert!(hello("n1", 0).validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), WireError> {
        let kind = self.kind();
        let bad = |why: String| Err(WireError::Protocol(format!("{kind} message: {why}")));
        let text = |field: &str, s: &str| {
            if s.len() > MAX_TEXT_BYTES {
                bad(format!(
                    "{field} of {} bytes, more than {MAX_TEXT_BYTES}",
                    s.len()
                ))
            } else {
                Ok(())
            }
        };
        match self {
            Msg::Hello { node, pes, boot_id } => {
                text("node", node)?;
                text("boot_id", boot_id)?;
                if node.is_empty() {
                    return bad("empty node name".into());
                }
                if node.chars().any(char::is_control) {
                    return bad(format!("node name {node:?} holds a control character"));
                }
                if *pes == 0 || *pes as usize > MAX_CELLS {
                    return bad(format!("{pes} PEs, not 1 to {MAX_CELLS}"));
                }
                Ok(())
            }
            Msg::Welcome {
                policy, slot_ns, ..
            } => {
                text("policy", policy)?;
                if *slot_ns == 0 {
                    return bad("slot length 0".into());
                }
                Ok(())
            }
            Msg::Refused { reason } => text("reason", reason),
            Msg::Heartbeat { cells, .. } if cells.len() > MAX_CELLS => {
                bad(format!("{} cells, more than {MAX_CELLS}", cells.len()))
            }
            Msg::TaskUp { rank, size, pe, .. } => {
                if *size == 0 {
                    return bad("a step of 0 tasks".into());
                }
                if rank >= size {
                    return bad(format!("rank {rank} of a step of {size} tasks"));
                }
                if *pe as usize >= MAX_CELLS {
                    return bad(format!("PE {pe}, not below {MAX_CELLS}"));
                }
                Ok(())
            }
            Msg::Classified { class, .. } => text("class", class),
            Msg::Notice { text: t } => text("text", t),
            Msg::Heartbeat { .. }
            | Msg::Ping { .. }
            | Msg::Pong { .. }
            | Msg::TaskDown { .. }
            | Msg::Enacted { .. } => Ok(()),
        }
    }
}
