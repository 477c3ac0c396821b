//! Moving objects between ranks, and agreeing on an outcome.
//!
//! A migration message carries records `[id u64][load f64][len u64][state]`,
//! the state in postcard (serde). Decoding checks each length against the
//! bytes received before reading, and postcard's own decoding is bounded
//! by the slice it is given.
//!
//! [`agree`] is how a step that may fail on some ranks ends the same way
//! on every rank: each rank contributes its verdict, every rank reads
//! every verdict, the first failure (by rank) is everyone's.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::comm::{Collective, CommError};
use crate::wire::{cut, MAX_TEXT};

/// One object on the wire.
#[derive(Debug)]
pub(crate) struct Migrant<T> {
    pub(crate) id: u64,
    pub(crate) load: f64,
    pub(crate) object: T,
}

/// Appends one object's record to `out`.
pub(crate) fn encode<T: Serialize>(
    out: &mut Vec<u8>,
    id: u64,
    load: f64,
    object: &T,
) -> Result<(), String> {
    let state = postcard::to_allocvec(object)
        .map_err(|e| format!("object {id} could not be serialised: {e}"))?;
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&load.to_le_bytes());
    out.extend_from_slice(&(state.len() as u64).to_le_bytes());
    out.extend_from_slice(&state);
    Ok(())
}

/// Every object in a message from rank `from`.
pub(crate) fn decode<T: DeserializeOwned>(
    mut bytes: &[u8],
    from: usize,
) -> Result<Vec<Migrant<T>>, String> {
    let mut objects = Vec::new();
    while !bytes.is_empty() {
        let word = |b: &[u8], at: usize| -> Result<[u8; 8], String> {
            b.get(at..at + 8)
                .and_then(|w| w.try_into().ok())
                .ok_or_else(|| format!("a message from rank {from} ends inside a record"))
        };
        let id = u64::from_le_bytes(word(bytes, 0)?);
        let load = f64::from_le_bytes(word(bytes, 8)?);
        let len = u64::from_le_bytes(word(bytes, 16)?);
        let state = usize::try_from(len)
            .ok()
            .and_then(|len| bytes.get(24..24usize.checked_add(len)?))
            .ok_or_else(|| {
                format!("object {id} from rank {from} announces {len} bytes of state that were not sent")
            })?;
        let object = postcard::from_bytes(state)
            .map_err(|e| format!("object {id} from rank {from} could not be deserialised: {e}"))?;
        objects.push(Migrant { id, load, object });
        bytes = &bytes[24 + state.len()..];
    }
    Ok(objects)
}

/// Every rank's `verdict` (plus a `value` from each rank that succeeded);
/// the first failed rank and its reason when any failed, else every
/// rank's value in rank order. A collective call.
pub(crate) fn agree<C: Collective + ?Sized>(
    comm: &C,
    verdict: Result<f64, String>,
) -> Result<Result<Vec<f64>, (usize, String)>, CommError> {
    let mine = match &verdict {
        Ok(value) => {
            let mut out = vec![0u8];
            out.extend_from_slice(&value.to_le_bytes());
            out
        }
        Err(reason) => {
            let mut out = vec![1u8];
            out.extend_from_slice(cut(reason, MAX_TEXT).as_bytes());
            out
        }
    };
    let all = comm.all_gather(&mine)?;
    let mut values = Vec::with_capacity(all.len());
    for (rank, bytes) in all.iter().enumerate() {
        match bytes.split_first() {
            Some((0, value)) if value.len() == 8 => {
                values.push(f64::from_le_bytes(value.try_into().expect("8 bytes")))
            }
            Some((1, reason)) => {
                return Ok(Err((rank, String::from_utf8_lossy(reason).into_owned())))
            }
            _ => return Ok(Err((rank, "an unreadable verdict".to_string()))),
        }
    }
    Ok(Ok(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::LocalRanks;

    #[test]
    fn records_round_trip_and_truncations_are_errors() {
        let mut bytes = Vec::new();
        encode(&mut bytes, 7, 1.5, &(3u32, "seven".to_string())).unwrap();
        encode(&mut bytes, 9, 0.0, &(4u32, String::new())).unwrap();
        let back: Vec<Migrant<(u32, String)>> = decode(&bytes, 0).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[0].id, back[0].load, &back[0].object.1[..]),
            (7, 1.5, "seven")
        );
        assert_eq!((back[1].id, back[1].object.0), (9, 4));
        let first = 24 + 7; // (3, "seven"): a varint and a 1-byte length + 5
        for cut_at in (1..bytes.len()).filter(|&c| c != first) {
            assert!(
                decode::<(u32, String)>(&bytes[..cut_at], 0).is_err(),
                "{cut_at}"
            );
        }
        assert_eq!(
            decode::<(u32, String)>(&bytes[..first], 0).unwrap().len(),
            1
        );
        let mut huge = bytes.clone();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode::<(u32, String)>(&huge, 3)
            .unwrap_err()
            .contains("rank 3"));
    }

    #[test]
    fn agreement_names_the_first_failed_rank_everywhere() {
        let results = LocalRanks::run(4, |comm| {
            let verdict = match comm.rank() {
                1 | 3 => Err(format!("rank {} broke", comm.rank())),
                r => Ok(r as f64),
            };
            agree(comm, verdict).unwrap()
        });
        for r in results {
            assert_eq!(r.unwrap(), Err((1, "rank 1 broke".to_string())));
        }
        let results = LocalRanks::run(3, |comm| agree(comm, Ok(comm.rank() as f64 * 0.5)).unwrap());
        for r in results {
            assert_eq!(r.unwrap(), Ok(vec![0.0, 0.5, 1.0]));
        }
    }
}
