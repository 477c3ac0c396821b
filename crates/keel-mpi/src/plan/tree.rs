//! The plan decided in a tree ([`PlanShape::Tree`]): ranks in groups of
//! consecutive ranks, each group's first rank its leader. No rank gathers
//! every object: a leader holds its members' records, every rank one
//! summary per group (`keel_policy::mapping::tree` decides; see
//! `docs/mpi.md`). Seven collective steps, every rank taking part in each
//! whatever happened before, so that an error anywhere becomes the same
//! error everywhere at the next all-gather:
//!
//! 0. ids to their hash's rank (`all_to_all`): a duplicate is found there;
//! 1. contributions to the leader (`all_to_all`);
//! 2. one summary per group to every rank (`all_gather`): the first error
//!    of any group so far ends the plan on every rank; otherwise every rank
//!    computes the same lends between groups;
//! 3. lent records, leader to leader (`all_to_all`);
//! 4. their destinations back (`all_to_all`);
//! 5. each member's answer from its leader (`all_to_all`);
//! 6. each group's outcome, and whether each rank could read its answer,
//!    to every rank (`all_gather`): a group whose placement failed, or an
//!    answer that does not match its rank's objects, fails the plan
//!    everywhere; otherwise the metrics.

use std::collections::HashMap;

use keel_policy::mapping::tree::{self as policy_tree, GroupLoad, GroupObject, Lend};
use serde::{Deserialize, Serialize};

use super::{PlanError, PlanMetrics, PlanRequest, Transfer};
use crate::comm::Collective;
use crate::wire::{Contribution, Record};

/// A duplicate id, as the rank its hash names found it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Duplicate {
    id: u64,
    first: u32,
    second: u32,
}

/// Step 1: what a member tells its leader.
#[derive(Serialize, Deserialize)]
struct ToLeader {
    /// `keel-mpi`'s wire encoding of the member's contribution.
    contribution: Vec<u8>,
    duplicate: Option<Duplicate>,
}

/// Why a group cannot go on, as every rank reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum GroupError {
    Malformed { rank: u32, reason: String },
    BadInput { rank: u32, reason: String },
    SpecMismatch { rank: u32, spec: String },
}

/// Step 2: a leader's summary of its group.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Summary {
    error: Option<GroupError>,
    duplicate: Option<Duplicate>,
    spec: String,
    /// Σ background × speed + Σ weights.
    work: f64,
    speed: f64,
    /// The slowest member's time and Σ members' times, before.
    time_max: f64,
    time_sum: f64,
    objects: u64,
}

/// Step 3: an object lent to another group.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Lent {
    id: u64,
    weight: f64,
    size: u64,
    from: u32,
}

/// Step 5: a member's answer.
#[derive(Serialize, Deserialize, Default)]
struct Answer {
    destinations: Vec<u32>,
    imports: Vec<(u64, u32, u64)>,
}

/// Step 6: a group's outcome.
#[derive(Serialize, Deserialize)]
struct Outcome {
    error: Option<String>,
    time_max: f64,
    time_sum: f64,
    migrations: u64,
    bytes_moved: u64,
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).expect("plain data serialises")
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8], rank: usize) -> Result<T, PlanError> {
    postcard::from_bytes(bytes).map_err(|e| PlanError::Malformed {
        rank,
        reason: format!("a tree-plan message that does not decode: {e}"),
    })
}

/// The rank an id's duplicate check lands on (splitmix64's mix, so that
/// ids in blocks spread over the ranks).
fn home(id: u64, ranks: usize) -> usize {
    let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) % ranks as u64) as usize
}

/// The tree plan on this rank: a collective call.
pub(super) fn plan<C: Collective + ?Sized>(
    comm: &C,
    request: Result<&PlanRequest<'_>, String>,
    group: usize,
) -> Result<super::Plan, PlanError> {
    let (me, ranks) = (comm.rank(), comm.size());
    let group = group.clamp(1, ranks.max(1));
    let leader = |r: usize| r - r % group;
    let leads = me % group == 0;
    let mine = super::contribution(request);

    // 0: each id to its home rank, which finds duplicates.
    let mut ids = vec![Vec::new(); ranks];
    for r in &mine.records {
        ids[home(r.id, ranks)].extend_from_slice(&r.id.to_le_bytes());
    }
    let arrived = comm.all_to_all(&ids)?;
    drop(ids);
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let mut duplicate: Option<Duplicate> = None;
    for (from, bytes) in arrived.iter().enumerate() {
        for id in bytes.chunks_exact(8) {
            let id = u64::from_le_bytes(id.try_into().expect("8 bytes"));
            if let Some(&first) = seen.get(&id) {
                let d = Duplicate {
                    id,
                    first,
                    second: from as u32,
                };
                if duplicate.is_none_or(|old| d.id < old.id) {
                    duplicate = Some(d);
                }
            } else {
                seen.insert(id, from as u32);
            }
        }
    }
    drop((arrived, seen));

    // 1: contributions to the leader.
    let mut out = vec![Vec::new(); ranks];
    out[leader(me)] = encode(&ToLeader {
        contribution: mine.encode(),
        duplicate,
    });
    let received = comm.all_to_all(&out)?;
    drop(out);
    let members: Vec<usize> = policy_tree::group_ranks(me / group, group, ranks).collect();
    let mut held: Vec<Contribution> = Vec::new();
    let mut summary = Summary {
        error: None,
        duplicate: None,
        spec: mine.spec.clone(),
        work: 0.0,
        speed: 0.0,
        time_max: 0.0,
        time_sum: 0.0,
        objects: 0,
    };
    if leads {
        for &m in &members {
            let decoded = decode::<ToLeader>(&received[m], m).and_then(|t| {
                Contribution::decode(&t.contribution)
                    .map(|c| (c, t.duplicate))
                    .map_err(|reason| PlanError::Malformed { rank: m, reason })
            });
            match decoded {
                Ok((c, d)) => {
                    if let Some(d) = d {
                        if summary.duplicate.is_none_or(|old| d.id < old.id) {
                            summary.duplicate = Some(d);
                        }
                    }
                    held.push(c);
                }
                Err(PlanError::Malformed { rank, reason }) => {
                    summary.error.get_or_insert(GroupError::Malformed {
                        rank: rank as u32,
                        reason,
                    });
                    held.push(super::contribution(Err(String::new())));
                }
                Err(_) => unreachable!("decoding fails only as Malformed"),
            }
        }
        summarise(&mut summary, &members, &held);
    }
    drop(received);

    // 2: summaries to every rank; the first error ends the plan everywhere.
    let gathered = comm.all_gather(&if leads { encode(&summary) } else { Vec::new() })?;
    let groups = ranks.div_ceil(group);
    let summaries: Vec<Summary> = (0..groups)
        .map(|g| decode::<Summary>(&gathered[g * group], g * group))
        .collect::<Result<_, _>>()?;
    drop(gathered);
    first_error(&summaries, group)?;
    let spec = summaries[0].spec.clone();
    let loads: Vec<GroupLoad> = summaries
        .iter()
        .map(|s| GroupLoad {
            work: s.work,
            speed: s.speed,
        })
        .collect();
    let lends = policy_tree::lends(&loads);

    // 3: a leader lends; the borrowers' leaders receive.
    let mut out = vec![Vec::new(); ranks];
    let mut staying: Vec<(usize, usize)> = Vec::new(); // (member index, object index)
    let mut lent_to: Vec<Vec<(usize, usize)>> = vec![Vec::new(); groups];
    if leads {
        let g = me / group;
        let mine: Vec<&Lend> = lends.iter().filter(|l| l.from == g).collect();
        let mut objects = Vec::new();
        let mut where_: Vec<(usize, usize)> = Vec::new();
        let mut member_work = vec![0.0; members.len()];
        for (m, c) in held.iter().enumerate() {
            member_work[m] = c.background * c.speed;
            for (i, r) in c.records.iter().enumerate() {
                member_work[m] += r.weight;
                objects.push(GroupObject {
                    load: r.weight,
                    member: m,
                    migratable: r.migratable,
                });
                where_.push((m, i));
            }
        }
        let amounts: Vec<f64> = mine.iter().map(|l| l.work).collect();
        let mut lent: Vec<Vec<Lent>> = vec![Vec::new(); groups];
        for (k, pick) in policy_tree::pick_lent(&objects, &member_work, &amounts)
            .into_iter()
            .enumerate()
        {
            let (m, i) = where_[k];
            match pick {
                Some(l) => {
                    let to = mine[l].to;
                    let r = held[m].records[i];
                    lent[to].push(Lent {
                        id: r.id,
                        weight: r.weight,
                        size: r.size,
                        from: members[m] as u32,
                    });
                    lent_to[to].push((m, i));
                }
                None => staying.push((m, i)),
            }
        }
        for (to, records) in lent.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
            out[to * group] = encode(records);
        }
    }
    let received = comm.all_to_all(&out)?;
    drop(out);

    // 4: the borrowers place everything they hold and answer the lenders.
    let mut borrowed: Vec<Lent> = Vec::new();
    let mut group_error: Option<String> = None;
    if leads {
        for g in 0..groups {
            let bytes = &received[g * group];
            if !bytes.is_empty() {
                match decode::<Vec<Lent>>(bytes, g * group) {
                    Ok(v) => borrowed.extend(v),
                    Err(e) => {
                        group_error.get_or_insert(e.to_string());
                    }
                }
            }
        }
    }
    drop(received);
    let mut placed_member: Vec<usize> = Vec::new();
    if leads && group_error.is_none() {
        let stay: Vec<(f64, usize, bool)> = staying
            .iter()
            .map(|&(m, i)| (held[m].records[i].weight, m, held[m].records[i].migratable))
            .collect();
        let came: Vec<f64> = borrowed.iter().map(|l| l.weight).collect();
        let background: Vec<f64> = held.iter().map(|c| c.background).collect();
        let speeds: Vec<f64> = held.iter().map(|c| c.speed).collect();
        match policy_tree::place_group(&spec, &background, &speeds, &stay, &came) {
            Ok(p) => placed_member = p,
            Err(e) => group_error = Some(format!("policy {spec:?}: {e}")),
        }
    }
    let first = members.first().copied().unwrap_or(0);
    let mut out = vec![Vec::new(); ranks];
    if leads && group_error.is_none() {
        let mut replies: HashMap<usize, Vec<(u64, u32)>> = HashMap::new();
        for (k, l) in borrowed.iter().enumerate() {
            let to = first + placed_member[staying.len() + k];
            replies
                .entry(leader(l.from as usize))
                .or_default()
                .push((l.id, to as u32));
        }
        for (lender, r) in replies {
            out[lender] = encode(&r);
        }
    }
    let received = comm.all_to_all(&out)?;
    drop(out);

    // 5: each member's answer; the leader's figures for step 6.
    let mut outcome = Outcome {
        error: group_error,
        time_max: 0.0,
        time_sum: 0.0,
        migrations: 0,
        bytes_moved: 0,
    };
    let mut out = vec![Vec::new(); ranks];
    if leads && outcome.error.is_none() {
        let mut lent_dest: HashMap<u64, u32> = HashMap::new();
        for g in 0..groups {
            let bytes = &received[g * group];
            if !bytes.is_empty() {
                match decode::<Vec<(u64, u32)>>(bytes, g * group) {
                    Ok(v) => lent_dest.extend(v),
                    Err(e) => {
                        outcome.error.get_or_insert(e.to_string());
                    }
                }
            }
        }
        let mut answers: Vec<Answer> = held
            .iter()
            .map(|c| Answer {
                destinations: vec![u32::MAX; c.records.len()],
                imports: Vec::new(),
            })
            .collect();
        let mut time: Vec<f64> = held.iter().map(|c| c.background).collect();
        for (k, &(m, i)) in staying.iter().enumerate() {
            let to = placed_member[k];
            let r = held[m].records[i];
            answers[m].destinations[i] = (first + to) as u32;
            time[to] += r.weight / held[to].speed;
            if to != m {
                answers[to].imports.push((r.id, (first + m) as u32, r.size));
                outcome.migrations += 1;
                outcome.bytes_moved = outcome.bytes_moved.saturating_add(r.size);
            }
        }
        for (k, l) in borrowed.iter().enumerate() {
            let to = placed_member[staying.len() + k];
            time[to] += l.weight / held[to].speed;
            answers[to].imports.push((l.id, l.from, l.size));
        }
        for to_group in &lent_to {
            for &(m, i) in to_group {
                let r = held[m].records[i];
                match lent_dest.get(&r.id) {
                    Some(&dest) => answers[m].destinations[i] = dest,
                    None => {
                        outcome
                            .error
                            .get_or_insert(format!("no destination came back for object {}", r.id));
                    }
                }
                outcome.migrations += 1;
                outcome.bytes_moved = outcome.bytes_moved.saturating_add(r.size);
            }
        }
        outcome.time_max = time.iter().copied().fold(0.0, f64::max);
        outcome.time_sum = time.iter().sum();
        for (m, a) in answers.iter_mut().enumerate() {
            a.imports.sort_by_key(|&(id, from, _)| (from, id));
            out[members[m]] = encode(a);
        }
    }
    drop(received);
    let received = comm.all_to_all(&out)?;
    drop(out);
    let answer = decode::<Answer>(&received[leader(me)], leader(me)).unwrap_or_default();
    drop(received);
    let records = &mine.records;
    let answered = answer.destinations.len() == records.len()
        && answer.destinations.iter().all(|&d| (d as usize) < ranks);

    // 6: every rank says whether it read its answer, a leader adds its
    // group's outcome; every rank receives all of it.
    let mut mine6 = vec![u8::from(answered)];
    if leads {
        mine6.extend_from_slice(&encode(&outcome));
    }
    let gathered = comm.all_gather(&mine6)?;
    let outcomes: Vec<Outcome> = (0..groups)
        .map(|g| {
            let bytes = gathered[g * group].get(1..).unwrap_or_default();
            decode::<Outcome>(bytes, g * group)
        })
        .collect::<Result<_, _>>()?;
    if let Some(reason) = outcomes.iter().find_map(|o| o.error.clone()) {
        return Err(PlanError::BadDecision {
            spec,
            problem: format!("in a group of the tree: {reason}"),
        });
    }
    if let Some(rank) = gathered.iter().position(|b| b.first() != Some(&1)) {
        return Err(PlanError::BadDecision {
            spec,
            problem: format!(
                "an answer rank {rank} received from its leader does not match its objects"
            ),
        });
    }
    let n = ranks as f64;
    let lambda = |max: f64, sum: f64| if sum > 0.0 { max * n / sum - 1.0 } else { 0.0 };
    let (before_max, before_sum) = summaries.iter().fold((0.0f64, 0.0), |(m, s), x| {
        (m.max(x.time_max), s + x.time_sum)
    });
    let (after_max, after_sum) = outcomes.iter().fold((0.0f64, 0.0), |(m, s), x| {
        (m.max(x.time_max), s + x.time_sum)
    });
    let metrics = PlanMetrics {
        lambda_before: lambda(before_max, before_sum),
        lambda_after: lambda(after_max, after_sum),
        lib_percent: if after_max > 0.0 {
            (1.0 - after_sum / n / after_max) * 100.0
        } else {
            0.0
        },
        makespan: after_max,
        migrations: outcomes.iter().map(|o| o.migrations as usize).sum(),
        bytes_moved: outcomes
            .iter()
            .fold(0u64, |b, o| b.saturating_add(o.bytes_moved)),
        objects: summaries.iter().map(|s| s.objects as usize).sum(),
    };
    let destinations: Vec<usize> = answer.destinations.iter().map(|&d| d as usize).collect();
    let exports = records
        .iter()
        .zip(&destinations)
        .filter(|(_, &to)| to != me)
        .map(|(r, &to)| Transfer {
            id: r.id,
            rank: to,
            size: r.size,
        })
        .collect();
    let imports = answer
        .imports
        .iter()
        .map(|&(id, from, size)| Transfer {
            id,
            rank: from as usize,
            size,
        })
        .collect();
    Ok(super::Plan {
        destinations,
        exports,
        imports,
        metrics,
    })
}

/// A leader's summary of its members' contributions (in rank order).
fn summarise(summary: &mut Summary, members: &[usize], held: &[Contribution]) {
    let leader_spec = held.first().map(|c| c.spec.clone()).unwrap_or_default();
    summary.spec = leader_spec.clone();
    for (&rank, c) in members.iter().zip(held) {
        if summary.error.is_none() {
            if let Some(reason) = &c.refusal {
                summary.error = Some(GroupError::BadInput {
                    rank: rank as u32,
                    reason: reason.clone(),
                });
            } else if c.spec != leader_spec {
                summary.error = Some(GroupError::SpecMismatch {
                    rank: rank as u32,
                    spec: c.spec.clone(),
                });
            }
        }
        let objects: f64 = c.records.iter().map(|r: &Record| r.weight).sum();
        let time = c.background + objects / c.speed;
        summary.work += c.background * c.speed + objects;
        summary.speed += c.speed;
        summary.time_max = summary.time_max.max(time);
        summary.time_sum += time;
        summary.objects += c.records.len() as u64;
    }
}

/// The first error of any group, in the order the one-level plan checks:
/// payloads that do not decode, refused inputs, specs unlike rank 0's,
/// then duplicate ids (the smallest duplicated id).
fn first_error(summaries: &[Summary], group: usize) -> Result<(), PlanError> {
    let expected = summaries[0].spec.clone();
    for s in summaries {
        if let Some(GroupError::Malformed { rank, reason }) = &s.error {
            return Err(PlanError::Malformed {
                rank: *rank as usize,
                reason: reason.clone(),
            });
        }
    }
    for s in summaries {
        if let Some(GroupError::BadInput { rank, reason }) = &s.error {
            return Err(PlanError::BadInput {
                rank: *rank as usize,
                reason: reason.clone(),
            });
        }
    }
    for (g, s) in summaries.iter().enumerate() {
        // A leader's spec is checked before its members': it is the
        // group's first rank.
        if s.spec != expected {
            return Err(PlanError::SpecMismatch {
                rank: g * group,
                spec: s.spec.clone(),
                expected,
            });
        }
        if let Some(GroupError::SpecMismatch { rank, spec }) = &s.error {
            return Err(PlanError::SpecMismatch {
                rank: *rank as usize,
                spec: spec.clone(),
                expected,
            });
        }
    }
    if let Some(d) = summaries
        .iter()
        .filter_map(|s| s.duplicate)
        .min_by_key(|d| d.id)
    {
        return Err(PlanError::DuplicateId {
            id: d.id,
            first: d.first as usize,
            second: d.second as usize,
        });
    }
    Ok(())
}
