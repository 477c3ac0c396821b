//! Byte-level mutation of seed inputs.

use rand::Rng;

use crate::grammar::EXTREME_NUMBERS;
use crate::MAX_INPUT;

/// Bytes that mean something to one of the parsers.
const INTERESTING: &[u8] = b"()=,:;#\"'\\-.e\n\r\t %\x00\xff\x80";

/// One of `seeds` (or nothing, when there are none) after one to eight
/// random mutations, at most [`MAX_INPUT`] bytes.
pub fn mutate<R: Rng>(rng: &mut R, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = pick(rng, seeds).to_vec();
    let rounds = 1 + rng.gen_range(0..8);
    for _ in 0..rounds {
        mutate_once(rng, &mut data, seeds);
        data.truncate(MAX_INPUT);
    }
    data
}

fn pick<'a, R: Rng>(rng: &mut R, seeds: &'a [Vec<u8>]) -> &'a [u8] {
    if seeds.is_empty() {
        &[]
    } else {
        &seeds[rng.gen_range(0..seeds.len())]
    }
}

/// A random range of `data` (possibly empty).
fn range<R: Rng>(rng: &mut R, len: usize) -> (usize, usize) {
    let start = rng.gen_range(0..=len);
    let max = (len - start).min(64);
    (start, start + rng.gen_range(0..=max))
}

fn mutate_once<R: Rng>(rng: &mut R, data: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = data.len();
    match rng.gen_range(0..10) {
        0 if len > 0 => {
            let i = rng.gen_range(0..len);
            data[i] ^= 1 << rng.gen_range(0..8);
        }
        1 if len > 0 => {
            let i = rng.gen_range(0..len);
            data[i] = INTERESTING[rng.gen_range(0..INTERESTING.len())];
        }
        2 => {
            let at = rng.gen_range(0..=len);
            let n = rng.gen_range(1..8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            data.splice(at..at, bytes);
        }
        3 => {
            let (a, b) = range(rng, len);
            data.drain(a..b);
        }
        4 => {
            // Duplicate a range in place a few times: repeated fields, rows
            // and nesting.
            let (a, b) = range(rng, len);
            let piece = data[a..b].to_vec();
            let times = rng.gen_range(1..4);
            for _ in 0..times {
                data.splice(b..b, piece.iter().copied());
            }
        }
        5 => {
            let other = pick(rng, seeds);
            let (a, b) = range(rng, other.len());
            let at = rng.gen_range(0..=len);
            data.splice(at..at, other[a..b].iter().copied());
        }
        6 => replace_number(rng, data),
        7 => {
            let at = rng.gen_range(0..=len);
            let n = EXTREME_NUMBERS[rng.gen_range(0..EXTREME_NUMBERS.len())];
            data.splice(at..at, n.bytes());
        }
        8 => {
            // Repeat a short range many times: deep nesting, long lines.
            let (a, b) = range(rng, len);
            let piece = data[a..b.min(a + 16)].to_vec();
            if !piece.is_empty() {
                let times = rng.gen_range(2..(MAX_INPUT / piece.len()).clamp(3, 4000));
                let mut grown = Vec::with_capacity(piece.len() * times);
                for _ in 0..times {
                    grown.extend_from_slice(&piece);
                }
                data.splice(a..a, grown);
            }
        }
        _ => {
            let cut = rng.gen_range(0..=len);
            data.truncate(cut);
        }
    }
}

/// Replaces one run of digits (with its sign, point and exponent) by an
/// extreme number.
fn replace_number<R: Rng>(rng: &mut R, data: &mut Vec<u8>) {
    let starts: Vec<usize> = (0..data.len())
        .filter(|&i| data[i].is_ascii_digit() && (i == 0 || !data[i - 1].is_ascii_digit()))
        .collect();
    if starts.is_empty() {
        return;
    }
    let start = starts[rng.gen_range(0..starts.len())];
    let mut end = start;
    while end < data.len() && (data[end].is_ascii_alphanumeric() || b".+-".contains(&data[end])) {
        end += 1;
    }
    let n = EXTREME_NUMBERS[rng.gen_range(0..EXTREME_NUMBERS.len())];
    data.splice(start..end, n.bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn mutation_is_bounded_deterministic_and_changes_inputs() {
        let seeds = vec![b"binlpt:chunks=4".to_vec(), b"1 0 5 100 2".to_vec()];
        let mut changed = 0;
        for s in 0..200 {
            let a = mutate(&mut ChaCha8Rng::seed_from_u64(s), &seeds);
            let b = mutate(&mut ChaCha8Rng::seed_from_u64(s), &seeds);
            assert_eq!(a, b);
            assert!(a.len() <= MAX_INPUT);
            changed += usize::from(!seeds.contains(&a));
        }
        assert!(
            changed > 150,
            "only {changed} of 200 mutants differ from their seed"
        );
    }

    #[test]
    fn numbers_are_replaced_whole() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut data = b"chunks=12.5e3,x".to_vec();
        replace_number(&mut rng, &mut data);
        let text = String::from_utf8(data).unwrap();
        assert!(
            text.starts_with("chunks=") && text.ends_with(",x"),
            "{text}"
        );
        assert!(!text.contains("12.5e3"), "{text}");
    }
}
