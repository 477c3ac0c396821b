//! Golden decisions of the schedules that adapt within an instance (`af`,
//! `maf`, `awf-b` … `awf-e`): every chunk they hand out, for fixed
//! synthetic measurements, pinned as a fingerprint of the whole claim
//! sequence. The per-chunk path of these schedules is tuned for
//! instructions; the fingerprints say that no tuning changed a single
//! decision.
//!
//! A single-threaded simulation of the context: `P` virtual threads ask in
//! a fixed pseudo-random order, claim from a remaining counter, and time
//! each chunk with a deterministic per-thread speed and noise (some samples
//! exactly 0 s, which leaves a thread without data for AWF). Each chunk's
//! measurement goes through [`Plan::measured`], as the runtime feeds it,
//! and separately through the full [`ThreadLocal::record`] and
//! [`ThreadLocal::timing`], which must lead to the same claims.

use keel_policy::dls::{
    registry, Claim, LoopShape, Plan, Request, ThreadLocal, ThreadTiming, Timing,
};
use keel_policy::{Concept, ContextHandler, Origin};

/// A small deterministic generator (xorshift64*), so the fixture needs no
/// crate and never changes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How a simulated chunk's measurement reaches the board.
#[derive(Clone, Copy, PartialEq)]
enum Feed {
    /// [`Plan::measured`]: the plan's own record and what it publishes.
    Plan,
    /// [`ThreadLocal::record`], then [`ThreadLocal::timing`] when the
    /// chunk is spent: every sum, every field.
    Full,
}

/// FNV-1a over the claim sequence `(thread, start, end)`, and the number of
/// claims.
fn fingerprint(spec: &str, n: u64, p: usize, k: Option<u64>, seed: u64, feed: Feed) -> (u64, u64) {
    let shape = LoopShape::new(n, p, k).unwrap();
    let weights: Vec<f64> = (0..p).map(|t| 1.0 + (t % 3) as f64).collect();
    let mut ctx = ContextHandler::new();
    if seed % 2 == 1 {
        ctx.provide_values(Concept::ThreadWeights, Origin::User, &weights[..]);
    }
    let plan: Plan<'_> = registry().build(spec).unwrap().plan(&shape, &ctx).unwrap();
    assert_eq!(plan.claim(), Claim::Remaining, "{spec}");
    let mut rng = Rng(seed | 1);
    // Per-thread seconds per iteration, 0.5 µs to 8 µs.
    let speed: Vec<f64> = (0..p).map(|_| 0.5e-6 * (1.0 + 15.0 * rng.unit())).collect();
    let mut locals = vec![ThreadLocal::default(); p];
    let mut board = vec![ThreadTiming::default(); p];
    let (mut next, mut number) = (0u64, 0u64);
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut mix = |v: u64| {
        for byte in v.to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut claims = 0u64;
    while next < n {
        let t = (rng.next() % p as u64) as usize;
        let remaining = n - next;
        let request = Request { thread: t, number };
        if plan.numbers_requests() {
            number += 1;
        }
        let size = plan
            .next_size(remaining, request, &mut locals[t], &board)
            .clamp(1, remaining);
        locals[t].claimed(size);
        mix(t as u64);
        mix(next);
        mix(next + size);
        next += size;
        claims += 1;
        let noise = 0.5 + rng.unit();
        let overhead = if plan.timing() == Timing::Request {
            2e-7
        } else {
            0.0
        };
        let seconds = if rng.next().is_multiple_of(11) {
            0.0
        } else {
            size as f64 * speed[t] * noise + overhead
        };
        match feed {
            Feed::Plan => {
                if let Some(timing) = plan.measured(&mut locals[t], size, seconds) {
                    board[t] = timing;
                }
            }
            Feed::Full => {
                locals[t].record(size, seconds);
                if locals[t].chunk_spent() {
                    board[t] = locals[t].timing();
                }
            }
        }
    }
    (hash, claims)
}

const SPECS: [&str; 8] = [
    "af",
    "maf",
    "af:divider=3",
    "maf:divider=1",
    "awf-b",
    "awf-c",
    "awf-d",
    "awf-e",
];

/// `(n, p, k, seed)` of each case.
const CASES: [(u64, usize, Option<u64>, u64); 6] = [
    (4096, 1, None, 1),
    (4096, 2, None, 2),
    (100_000, 4, None, 3),
    (100_000, 7, Some(5), 4),
    (1_000_000, 16, None, 5),
    (37, 3, Some(2), 6),
];

/// Recorded before the per-chunk path was tuned: `[spec][case]`.
const GOLDEN: [[(u64, u64); 6]; 8] = [
    // af
    [
        (0x3b07c343c9f3210d, 35),
        (0x80020b686c7ac3e4, 79),
        (0xce7096b071c8a21e, 98),
        (0x3a8cdd0e19ccb61c, 193),
        (0x53ce1c593ca79522, 375),
        (0xa334cd6bd0fcd360, 4),
    ],
    // maf
    [
        (0x3b07c343c9f3210d, 35),
        (0xec6f90048729da31, 76),
        (0x34583df0df65397b, 97),
        (0x232a714fb19c7bf8, 193),
        (0x3c030e0c3b10694a, 375),
        (0xa334cd6bd0fcd360, 4),
    ],
    // af:divider=3
    [
        (0x051fdd3dd1375c25, 10),
        (0x07b4b3ae78368801, 18),
        (0x1b2e196dbc9f1e2a, 56),
        (0x3b0dfced614d9962, 80),
        (0xf2b1fdff7b399071, 169),
        (0xb0b1a3d532e34ce2, 2),
    ],
    // maf:divider=1
    [
        (0x910597bb411bcfb5, 2),
        (0x33b62db867e59d59, 10),
        (0xa9473da155188183, 48),
        (0xac1d1f9bbf5b014c, 74),
        (0x7538dbc4ee90b2a5, 275),
        (0x07937b886ba66c40, 1),
    ],
    // awf-b
    [
        (0xc9ad47cd5c6b61ad, 13),
        (0x6973ef46ac51fd61, 6),
        (0xbb91cd8a94d03dba, 42),
        (0x6751e74c548eea2b, 22),
        (0xdf18cbb824dd6c82, 117622),
        (0x0293dc9b988d1fa3, 8),
    ],
    // awf-c
    [
        (0xc9ad47cd5c6b61ad, 13),
        (0x3afc7c0a04bdd124, 17),
        (0x3d0cda5883adc727, 63),
        (0xe8657d21d1bd852b, 106),
        (0xf0600078c7fef06b, 337),
        (0xcabd9a32d34248e3, 11),
    ],
    // awf-d
    [
        (0xc9ad47cd5c6b61ad, 13),
        (0x6973ef46ac51fd61, 6),
        (0xbb91cd8a94d03dba, 42),
        (0x6751e74c548eea2b, 22),
        (0xbbe06741061fc634, 117541),
        (0x0293dc9b988d1fa3, 8),
    ],
    // awf-e
    [
        (0xc9ad47cd5c6b61ad, 13),
        (0x26984911e01cbd71, 18),
        (0x3d0cda5883adc727, 63),
        (0xe8657d21d1bd852b, 106),
        (0x5cf317fd911dc45b, 337),
        (0xcabd9a32d34248e3, 11),
    ],
];

#[test]
fn adaptive_decisions_match_the_golden_fingerprints() {
    let mut got = Vec::new();
    for spec in SPECS {
        let row: Vec<(u64, u64)> = CASES
            .iter()
            .map(|&(n, p, k, seed)| fingerprint(spec, n, p, k, seed, Feed::Full))
            .collect();
        got.push(row);
    }
    for (s, spec) in SPECS.iter().enumerate() {
        for (c, &(n, p, k, seed)) in CASES.iter().enumerate() {
            assert_eq!(got[s][c], GOLDEN[s][c], "{spec} n={n} p={p} k={k:?}");
            assert_eq!(
                fingerprint(spec, n, p, k, seed, Feed::Plan),
                GOLDEN[s][c],
                "{spec} n={n} p={p} k={k:?}, fed through Plan::measured"
            );
        }
    }
}
