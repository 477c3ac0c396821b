//! The bytes one rank contributes to a plan: a header (format, the rank's
//! own verdict on its input, the policy spec, its background load and
//! speed) and one fixed-size record per local object, little-endian.
//!
//! Every rank decodes every other rank's bytes, so decoding trusts
//! nothing: lengths are checked against what is there before anything is
//! allocated, and a payload that does not decode is a typed error naming
//! the rank (two builds of different versions, or memory corruption).

/// The payload's first bytes.
const MAGIC: &[u8; 4] = b"KLMP";
/// The layout's version.
const VERSION: u16 = 1;
/// Bytes per object record: id, weight, size, flags.
const RECORD: usize = 8 + 8 + 8 + 1;
/// A message or spec longer than this is cut (a message) or refused (a
/// spec) before it is sent.
pub(crate) const MAX_TEXT: usize = 4096;

/// One object as it travels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Record {
    pub(crate) id: u64,
    pub(crate) weight: f64,
    pub(crate) size: u64,
    pub(crate) migratable: bool,
}

/// One rank's contribution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Contribution {
    /// `None` when the rank accepted its own input, else why not.
    pub(crate) refusal: Option<String>,
    pub(crate) spec: String,
    pub(crate) background: f64,
    pub(crate) speed: f64,
    pub(crate) records: Vec<Record>,
}

impl Contribution {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.spec.len() + RECORD * self.records.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        let refusal = self.refusal.as_deref().map(|r| cut(r, MAX_TEXT));
        out.push(u8::from(refusal.is_some()));
        text(&mut out, refusal.unwrap_or(""));
        text(&mut out, cut(&self.spec, MAX_TEXT));
        out.extend_from_slice(&self.background.to_le_bytes());
        out.extend_from_slice(&self.speed.to_le_bytes());
        out.extend_from_slice(&(self.records.len() as u64).to_le_bytes());
        for r in &self.records {
            out.extend_from_slice(&r.id.to_le_bytes());
            out.extend_from_slice(&r.weight.to_le_bytes());
            out.extend_from_slice(&r.size.to_le_bytes());
            out.push(u8::from(r.migratable));
        }
        out
    }

    /// Decodes a rank's bytes; the error says what is wrong with them.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Contribution, String> {
        let mut r = Reader { rest: bytes };
        if r.take(4)? != MAGIC {
            return Err("not a keel-mpi plan payload".into());
        }
        let version = u16::from_le_bytes(r.array()?);
        if version != VERSION {
            return Err(format!(
                "payload version {version}, this build reads version {VERSION} (ranks run different keel-mpi builds?)"
            ));
        }
        let refused = match r.take(1)?[0] {
            0 => false,
            1 => true,
            other => return Err(format!("a refusal flag of {other}")),
        };
        let refusal = r.text()?;
        let spec = r.text()?;
        let background = f64::from_le_bytes(r.array()?);
        let speed = f64::from_le_bytes(r.array()?);
        let n = u64::from_le_bytes(r.array()?);
        let fits = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(RECORD))
            .is_some_and(|bytes| bytes == r.rest.len());
        if !fits {
            return Err(format!(
                "{n} objects announced, {} bytes of records sent",
                r.rest.len()
            ));
        }
        let records = r
            .rest
            .chunks_exact(RECORD)
            .map(|c| {
                let word = |i: usize| <[u8; 8]>::try_from(&c[i..i + 8]).expect("8 bytes");
                Ok(Record {
                    id: u64::from_le_bytes(word(0)),
                    weight: f64::from_le_bytes(word(8)),
                    size: u64::from_le_bytes(word(16)),
                    migratable: match c[24] {
                        0 => false,
                        1 => true,
                        other => return Err(format!("a migratable flag of {other}")),
                    },
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Contribution {
            refusal: refused.then_some(refusal),
            spec,
            background,
            speed,
            records,
        })
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn text(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.rest.len() < n {
            return Err("the payload ends early".into());
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn text(&mut self) -> Result<String, String> {
        let len = u32::from_le_bytes(self.array()?) as usize;
        if len > MAX_TEXT {
            return Err(format!("a text of {len} bytes"));
        }
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| "a text that is not UTF-8".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Contribution {
        Contribution {
            refusal: None,
            spec: "greedy".into(),
            background: 0.5,
            speed: 1.0,
            records: vec![
                Record {
                    id: 7,
                    weight: 2.5,
                    size: 100,
                    migratable: true,
                },
                Record {
                    id: u64::MAX,
                    weight: 0.0,
                    size: 0,
                    migratable: false,
                },
            ],
        }
    }

    #[test]
    fn round_trip_and_refusals() {
        let c = sample();
        assert_eq!(Contribution::decode(&c.encode()), Ok(c.clone()));
        let refused = Contribution {
            refusal: Some("é".repeat(MAX_TEXT)),
            ..c
        };
        let back = Contribution::decode(&refused.encode()).unwrap();
        let message = back.refusal.unwrap();
        assert!(message.len() <= MAX_TEXT && message.chars().all(|ch| ch == 'é'));
    }

    #[test]
    fn malformed_payloads_are_errors() {
        let good = sample().encode();
        assert!(Contribution::decode(&[]).is_err());
        assert!(Contribution::decode(b"XXXX").is_err());
        let mut other_version = good.clone();
        other_version[4] = 9;
        assert!(Contribution::decode(&other_version)
            .unwrap_err()
            .contains("version 9"));
        assert!(Contribution::decode(&good[..good.len() - 1]).is_err());
        let mut extra = good.clone();
        extra.push(0);
        assert!(Contribution::decode(&extra).is_err());
        let mut flag = good.clone();
        *flag.last_mut().unwrap() = 2;
        assert!(Contribution::decode(&flag).unwrap_err().contains("flag"));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Contribution::decode(&bytes);
        }

        #[test]
        fn a_huge_announced_count_allocates_nothing(n in any::<u64>()) {
            let mut bytes = sample().encode();
            let at = bytes.len() - 2 * RECORD - 8;
            bytes[at..at + 8].copy_from_slice(&n.to_le_bytes());
            prop_assert_eq!(Contribution::decode(&bytes).is_ok(), n == 2);
        }
    }
}
