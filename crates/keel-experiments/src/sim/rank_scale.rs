//! `keel sim rank-scale`: a balancing step across ranks at scales this
//! machine cannot run, one-level (every rank gathers every object's record
//! and decides alike, as `keel_mpi::plan`) against the tree
//! (`keel_policy::mapping::tree`: groups of ranks, leaders gather only
//! their members' objects, one summary per group crosses the top).
//!
//! The decisions are computed, not modelled: each shape's policy runs on
//! this machine on the whole problem and its time is measured (the tree's
//! groups decide on different leaders at once, so its time is the top
//! level's plus the slowest group's). The messages are modelled with the
//! simulator's network link ([`DEFAULT_BANDWIDTH`] per node link,
//! [`DEFAULT_MIGRATION_LATENCY`] per message) and counted exactly:
//!
//! | phase | one level | tree (as `keel_mpi::plan_in_tree` sends them) |
//! |---|---|---|
//! | shape | — | every rank all-gathers every rank's 4-byte group size |
//! | ids | — | each id (8 bytes) to the rank its hash names |
//! | gather | every rank receives every record (25 bytes each) | a leader receives its members' records |
//! | top | — | every rank all-gathers one 64-byte summary per group |
//! | lend | — | lent records leader to leader, their destinations back |
//! | answer | — | a leader sends each member its objects' destinations and imports |
//! | outcome | — | every rank all-gathers one 40-byte outcome per group and every rank's 1-byte "answer read" |
//!
//! Besides the data, an MPI layer's variable-size collectives exchange
//! each rank's size first (`count_bytes`: 4 bytes per rank per operation,
//! one operation one level, eight the tree).
//!
//! The problem: `objects` per rank, loads `1 + U/2` (U uniform in [0, 1),
//! a fixed xorshift stream from `seed`), four times heavier on the first
//! quarter of the ranks (a heavy region that stays), every object on its
//! rank in blocks.
//!
//! ```
//! use keel_experiments::sim::rank_scale::{self, RankScaleConfig};
//! let config = RankScaleConfig { ranks: vec![16], objects_per_rank: vec![8], ..RankScaleConfig::default() };
//! let report = rank_scale::run(&config, &mut |_| {}).unwrap();
//! assert_eq!(report.rows.len(), 2);
//! let (one, tree) = (&report.rows[0], &report.rows[1]);
//! assert_eq!(one.shape, "one level");
//! assert!(tree.bytes_non_leader < one.bytes_non_leader);
//! assert!(tree.makespan_over_ideal < 1.2);
//! ```

use std::time::Instant;

use keel_policy::mapping::tree;
use keel_policy::mapping::{self, Mapping};
use keel_policy::Origin;
use keel_sim::objects::{DEFAULT_BANDWIDTH, DEFAULT_MIGRATION_LATENCY};
use serde::Serialize;

use crate::error::{ExperimentError, Result};

/// Bytes of one object's record on the wire (`keel-mpi`'s: id, weight,
/// size, flags).
pub const RECORD_BYTES: u64 = 25;

/// Bytes of one group's summary (work, speed, times, objects, spec,
/// error flag), about what `keel-mpi` encodes.
pub const SUMMARY_BYTES: u64 = 64;

/// Bytes of one group's outcome (times, migrations, bytes moved, error
/// flag).
pub const OUTCOME_BYTES: u64 = 40;

/// Bytes of a rank's shape announcement.
pub const SHAPE_BYTES: u64 = 4;

/// Bytes of a rank's word, in the last all-gather, that it read its
/// answer.
pub const ANSWERED_BYTES: u64 = 1;

/// Bytes of an id on its way to the rank that checks it for duplicates.
pub const ID_BYTES: u64 = 8;

/// The tree's variable-size collective operations (`keel_mpi::plan_in_tree`).
pub const TREE_OPERATIONS: u64 = 8;

/// Bytes of one rank's size in a variable-size collective (`keel_mpi`'s
/// MPI layer exchanges them as 32-bit counts).
pub const COUNT_BYTES: u64 = 4;

/// Bytes of one destination a leader sends back (id and rank).
pub const DESTINATION_BYTES: u64 = 16;

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct RankScaleConfig {
    /// Rank counts.
    pub ranks: Vec<usize>,
    /// Objects per rank.
    pub objects_per_rank: Vec<usize>,
    /// Ranks per group (`None`: ⌈√ranks⌉).
    pub group: Option<usize>,
    /// The policy of the one-level decision and of each group's placement.
    pub policy: String,
    /// Seed of the loads.
    pub seed: u64,
    /// Problems with more objects than this skip the one-level row (its
    /// gathered database alone would not fit one rank's memory).
    pub one_level_max_objects: usize,
}

impl Default for RankScaleConfig {
    /// 64, 1,024 and 16,384 ranks × 64 and 1,024 objects, `greedy-refine`,
    /// seed 1, one level up to 2²⁴ objects.
    fn default() -> Self {
        RankScaleConfig {
            ranks: vec![64, 1024, 16_384],
            objects_per_rank: vec![64, 1024],
            group: None,
            policy: "greedy-refine".into(),
            seed: 1,
            one_level_max_objects: 1 << 24,
        }
    }
}

/// One shape on one problem.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleRow {
    /// Ranks.
    pub ranks: usize,
    /// Objects per rank.
    pub objects_per_rank: usize,
    /// `one level` or `tree, groups of G`.
    pub shape: String,
    /// Ranks per group (the whole job for one level).
    pub group: usize,
    /// Seconds deciding, measured here (tree: top level + slowest group).
    pub decide_s: f64,
    /// Seconds of messages, modelled.
    pub messages_s: f64,
    /// `decide_s + messages_s`: the balancing step before migration.
    pub step_s: f64,
    /// Bytes a rank that leads no group receives.
    pub bytes_non_leader: u64,
    /// Bytes the busiest leader receives (one level: every rank's).
    pub bytes_leader: u64,
    /// Bytes of sizes every rank receives besides the data (4 per rank per
    /// variable-size operation).
    pub count_bytes: u64,
    /// The slowest rank's load after the plan ÷ (total ÷ ranks).
    pub makespan_over_ideal: f64,
    /// The slowest rank's load before ÷ ideal.
    pub before_over_ideal: f64,
    /// Objects that change rank.
    pub migrations: usize,
}

/// The whole study.
#[derive(Debug, Clone, Serialize)]
pub struct RankScaleReport {
    /// Bytes per second of a node's link.
    pub bandwidth: f64,
    /// Seconds per message.
    pub latency: f64,
    /// Rows, per problem: one level (unless skipped), then the tree.
    pub rows: Vec<ScaleRow>,
}

/// The problem's loads for `ranks` × `per_rank` objects (see the module).
pub fn loads(ranks: usize, per_rank: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let hot = ranks / 4;
    (0..ranks * per_rank)
        .map(|o| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let base = 1.0 + u / 2.0;
            if o / per_rank < hot {
                4.0 * base
            } else {
                base
            }
        })
        .collect()
}

fn ceil_log2(n: usize) -> f64 {
    (usize::BITS - n.max(1).saturating_sub(1).leading_zeros()) as f64
}

fn message(bytes: u64) -> f64 {
    DEFAULT_MIGRATION_LATENCY + bytes as f64 / DEFAULT_BANDWIDTH
}

fn max_load(loads: &[f64], at: &[usize], ranks: usize) -> f64 {
    let mut per = vec![0.0; ranks];
    for (o, &r) in at.iter().enumerate() {
        per[r] += loads[o];
    }
    per.into_iter().fold(0.0, f64::max)
}

/// The one-level row.
fn one_level(
    policy: &str,
    loads: &[f64],
    current: &[usize],
    ranks: usize,
    per_rank: usize,
) -> Result<ScaleRow> {
    let policy = mapping::registry().build(policy)?;
    let background = vec![0.0; ranks];
    let began = Instant::now();
    let mut ctx = mapping::runtime_context(loads, &background);
    ctx.provide_placement(Origin::Runtime, current);
    let decided: Mapping = policy.map(&ctx)?;
    let decide_s = began.elapsed().as_secs_f64();
    let n = loads.len() as u64;
    // An all-gather: recursive doubling's latency, every byte received once.
    let bytes = n * RECORD_BYTES;
    let messages_s = ceil_log2(ranks) * DEFAULT_MIGRATION_LATENCY
        + bytes as f64 * (ranks - 1) as f64 / ranks as f64 / DEFAULT_BANDWIDTH;
    let ideal = loads.iter().sum::<f64>() / ranks as f64;
    Ok(ScaleRow {
        ranks,
        objects_per_rank: per_rank,
        shape: "one level".into(),
        group: ranks,
        decide_s,
        messages_s,
        step_s: decide_s + messages_s,
        bytes_non_leader: bytes,
        bytes_leader: bytes,
        count_bytes: COUNT_BYTES * ranks as u64,
        makespan_over_ideal: max_load(loads, decided.as_slice(), ranks) / ideal,
        before_over_ideal: max_load(loads, current, ranks) / ideal,
        migrations: keel_policy::metrics::migrations(current, decided.as_slice()),
    })
}

/// The tree's row: each piece timed where it would run.
fn tree_row(
    policy: &str,
    loads: &[f64],
    current: &[usize],
    ranks: usize,
    per_rank: usize,
    group: usize,
) -> Result<ScaleRow> {
    let groups = ranks.div_ceil(group);
    // The top level: summaries in, lends out (every leader computes it).
    let mut work = vec![0.0; groups];
    for (o, &r) in current.iter().enumerate() {
        work[r / group] += loads[o];
    }
    let summaries: Vec<tree::GroupLoad> = (0..groups)
        .map(|g| tree::GroupLoad {
            work: work[g],
            speed: tree::group_ranks(g, group, ranks).len() as f64,
        })
        .collect();
    let began = Instant::now();
    let lends = tree::lends(&summaries);
    let top_s = began.elapsed().as_secs_f64();
    // Each group: pick what it lends, then place what it holds; timed
    // apart, since leaders decide at once.
    let mut staying: Vec<Vec<usize>> = vec![Vec::new(); groups];
    let mut borrowed: Vec<Vec<usize>> = vec![Vec::new(); groups];
    let mut group_s = vec![0.0; groups];
    let mut lent_in_bytes = vec![0u64; groups];
    let mut lent_out_bytes = vec![0u64; groups];
    for g in 0..groups {
        let rs = tree::group_ranks(g, group, ranks);
        let first = rs.start;
        let members: Vec<usize> = (rs.start * per_rank..rs.end * per_rank).collect();
        let began = Instant::now();
        let mine: Vec<&tree::Lend> = lends.iter().filter(|l| l.from == g).collect();
        let objects: Vec<tree::GroupObject> = members
            .iter()
            .map(|&o| tree::GroupObject {
                load: loads[o],
                member: current[o] - first,
                migratable: true,
            })
            .collect();
        let mut member_work = vec![0.0; rs.len()];
        for &o in &members {
            member_work[current[o] - first] += loads[o];
        }
        let amounts: Vec<f64> = mine.iter().map(|l| l.work).collect();
        for (i, pick) in tree::pick_lent(&objects, &member_work, &amounts)
            .into_iter()
            .enumerate()
        {
            match pick {
                Some(l) => {
                    borrowed[mine[l].to].push(members[i]);
                    lent_out_bytes[g] += RECORD_BYTES;
                    lent_in_bytes[mine[l].to] += RECORD_BYTES;
                }
                None => staying[g].push(members[i]),
            }
        }
        group_s[g] += began.elapsed().as_secs_f64();
    }
    let mut destinations = vec![usize::MAX; loads.len()];
    for g in 0..groups {
        let rs = tree::group_ranks(g, group, ranks);
        let first = rs.start;
        let began = Instant::now();
        let stay: Vec<(f64, usize, bool)> = staying[g]
            .iter()
            .map(|&o| (loads[o], current[o] - first, true))
            .collect();
        let came: Vec<f64> = borrowed[g].iter().map(|&o| loads[o]).collect();
        let placed = tree::place_group(
            policy,
            &vec![0.0; rs.len()],
            &vec![1.0; rs.len()],
            &stay,
            &came,
        )?;
        for (&o, &m) in staying[g].iter().chain(&borrowed[g]).zip(&placed) {
            destinations[o] = first + m;
        }
        group_s[g] += began.elapsed().as_secs_f64();
    }
    let slowest_group = group_s.iter().copied().fold(0.0, f64::max);
    let decide_s = top_s + slowest_group;
    // Messages, phase by phase, at the busiest endpoint.
    let gather = (group as u64 - 1) * per_rank as u64 * RECORD_BYTES;
    // Shapes, summaries and outcomes: all-gathers over every rank
    // (recursive doubling's latency; the summaries' and shapes' bytes).
    let top = 3.0 * ceil_log2(ranks) * DEFAULT_MIGRATION_LATENCY
        + ((groups as u64 * (SUMMARY_BYTES + OUTCOME_BYTES))
            + (SHAPE_BYTES + ANSWERED_BYTES) * ranks as u64) as f64
            / DEFAULT_BANDWIDTH
        + message(ID_BYTES * per_rank as u64);
    let lend_busiest = lent_in_bytes
        .iter()
        .zip(&lent_out_bytes)
        .map(|(&i, &o)| i.max(o))
        .max()
        .unwrap_or(0);
    let lend = if lends.is_empty() {
        0.0
    } else {
        // Records there, destinations back.
        message(lend_busiest) + message(lend_busiest / RECORD_BYTES * DESTINATION_BYTES)
    };
    let answer = (group as u64 - 1) * per_rank as u64 * DESTINATION_BYTES;
    let messages_s = message(gather) + top + lend + message(answer);
    // Every rank: the shapes, the ids hashed to it (about its own count),
    // every summary and outcome, its answer (its objects' destinations,
    // its imports).
    let mut imports = vec![0u64; ranks];
    for (o, &r) in destinations.iter().enumerate() {
        if r != current[o] {
            imports[r] += 1;
        }
    }
    let everyone = (SHAPE_BYTES + ANSWERED_BYTES) * ranks as u64
        + ID_BYTES * per_rank as u64
        + (SUMMARY_BYTES + OUTCOME_BYTES) * groups as u64;
    let answer_of = |r: usize| per_rank as u64 * DESTINATION_BYTES + imports[r] * DESTINATION_BYTES;
    let non_leader = (0..ranks)
        .filter(|r| r % group != 0)
        .map(|r| everyone + answer_of(r))
        .max()
        .unwrap_or(0);
    let leader = (0..ranks)
        .step_by(group)
        .map(|r| everyone + answer_of(r))
        .max()
        .unwrap_or(0)
        + gather
        + lent_in_bytes.iter().copied().max().unwrap_or(0);
    let ideal = loads.iter().sum::<f64>() / ranks as f64;
    Ok(ScaleRow {
        ranks,
        objects_per_rank: per_rank,
        shape: format!("tree, groups of {group}"),
        group,
        decide_s,
        messages_s,
        step_s: decide_s + messages_s,
        bytes_non_leader: non_leader,
        bytes_leader: leader,
        count_bytes: TREE_OPERATIONS * COUNT_BYTES * ranks as u64,
        makespan_over_ideal: max_load(loads, &destinations, ranks) / ideal,
        before_over_ideal: max_load(loads, current, ranks) / ideal,
        migrations: keel_policy::metrics::migrations(current, &destinations),
    })
}

/// Runs the study; `progress` hears each problem as it starts.
pub fn run(config: &RankScaleConfig, progress: &mut dyn FnMut(&str)) -> Result<RankScaleReport> {
    if config.ranks.is_empty()
        || config.ranks.iter().any(|&r| !(2..=1 << 20).contains(&r))
        || config.objects_per_rank.is_empty()
        || config
            .objects_per_rank
            .iter()
            .any(|&k| !(1..=1 << 16).contains(&k))
        || config.group.is_some_and(|g| g < 2)
    {
        return Err(ExperimentError::Invalid(
            "rank-scale: ranks from 2 to 2^20, objects per rank from 1 to 65,536, groups of at least 2 ranks".into(),
        ));
    }
    let mut rows = Vec::new();
    for &ranks in &config.ranks {
        for &per_rank in &config.objects_per_rank {
            progress(&format!("{ranks} ranks × {per_rank} objects"));
            let loads = loads(ranks, per_rank, config.seed);
            let current: Vec<usize> = (0..loads.len()).map(|o| o / per_rank).collect();
            if loads.len() <= config.one_level_max_objects {
                rows.push(one_level(
                    &config.policy,
                    &loads,
                    &current,
                    ranks,
                    per_rank,
                )?);
            }
            let group = config
                .group
                .unwrap_or_else(|| (ranks as f64).sqrt().ceil() as usize)
                .clamp(2, ranks);
            rows.push(tree_row(
                &config.policy,
                &loads,
                &current,
                ranks,
                per_rank,
                group,
            )?);
        }
    }
    Ok(RankScaleReport {
        bandwidth: DEFAULT_BANDWIDTH,
        latency: DEFAULT_MIGRATION_LATENCY,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_loads() {
        let l = loads(8, 4, 1);
        assert_eq!(l.len(), 32);
        // The first quarter of the ranks (2 of 8) is four times heavier.
        assert!(l[..8].iter().all(|&x| (4.0..6.0).contains(&x)));
        assert!(l[8..].iter().all(|&x| (1.0..1.5).contains(&x)));
        let sum: f64 = loads(64, 64, 1).iter().sum();
        // About 1,024 × 5 + 3,072 × 1.25 = 8,960.
        assert!((sum - 8_962.035_018_947_372).abs() < 1e-6, "{sum}");
    }

    #[test]
    fn bad_configurations_are_refused() {
        for bad in [
            RankScaleConfig {
                ranks: vec![1],
                ..RankScaleConfig::default()
            },
            RankScaleConfig {
                objects_per_rank: vec![0],
                ..RankScaleConfig::default()
            },
            RankScaleConfig {
                group: Some(1),
                ..RankScaleConfig::default()
            },
            RankScaleConfig {
                ranks: vec![],
                ..RankScaleConfig::default()
            },
        ] {
            assert!(run(&bad, &mut |_| {}).is_err());
        }
    }
}
