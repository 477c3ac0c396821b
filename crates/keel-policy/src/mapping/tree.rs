//! A balancing step decided in a tree, the shape of Charm++'s TreeLB
//! (Galvez et al.; the Charm++ manual's "TreeLB and its Configuration"):
//! PUs (ranks) form fixed groups; each group's leader gathers only its
//! members' objects; the leaders exchange one summary per group and agree,
//! each on its own, on which groups lend work to which ([`lends`]); each
//! lending group picks the objects it lends ([`pick_lent`]); each group
//! then places its remaining and borrowed objects on its members with any
//! registry policy ([`place_group`]). No rank ever holds more than its
//! group's objects and one summary per group, where a one-level decision
//! gathers every object on every rank.
//!
//! The pieces are pure and deterministic, so a distributed context runs
//! each where its inputs are (`keel-mpi`), and the simulator runs all of
//! them in one process to measure what they cost at scale ([`decide`]
//! composes them).
//!
//! ```
//! use keel_policy::mapping::tree::{decide, TreeInput};
//!
//! // 4 ranks in groups of 2, four objects each: the first group's weigh 2,
//! // the second's 1.
//! let loads: Vec<f64> = (0..16).map(|o| if o < 8 { 2.0 } else { 1.0 }).collect();
//! let current: Vec<usize> = (0..16).map(|o| o / 4).collect();
//! let input = TreeInput::new(&loads, &current, 4, 2);
//! let plan = decide(&input, "greedy-refine").unwrap();
//! // The first group lends the second 4 (two objects of 2)...
//! assert_eq!(plan.lends.len(), 1);
//! assert_eq!((plan.lends[0].from, plan.lends[0].to, plan.lends[0].work), (0, 1, 4.0));
//! let mut rank_load = [0.0; 4];
//! for (o, &r) in plan.destinations.iter().enumerate() {
//!     rank_load[r] += loads[o];
//! }
//! // ...and every rank ends with 6 (24 over 4 ranks).
//! assert_eq!(rank_load, [6.0; 4]);
//! ```

use crate::concept::{Concept, Model, Origin, Subject};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::NO_PU;

/// Groups within this share of their fair work neither lend nor borrow:
/// TreeLB's token passing compares group loads with the mean ± 2 %.
pub const TREE_TOLERANCE: f64 = 0.02;

/// What a group's leader tells the others: its members' work and speed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupLoad {
    /// Σ over members of background time × speed + their objects' loads:
    /// work, in the loads' unit.
    pub work: f64,
    /// Σ of the members' speeds.
    pub speed: f64,
}

/// Work group `from` lends group `to`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lend {
    /// The lending group.
    pub from: usize,
    /// The borrowing group.
    pub to: usize,
    /// How much work, in the loads' unit.
    pub work: f64,
}

/// The top level: which groups lend how much work to which. Each group's
/// share of the total work is in proportion to its speed; a group above
/// its share by more than [`TREE_TOLERANCE`] of it lends, one below by
/// more borrows; the largest excess is paired with the largest deficit,
/// lending the smaller of the two, until either side is used up (TreeLB's
/// token passing). Deterministic: every leader computes the same from the
/// same summaries.
///
/// ```
/// use keel_policy::mapping::tree::{lends, GroupLoad, Lend};
/// let groups = [
///     GroupLoad { work: 30.0, speed: 2.0 },
///     GroupLoad { work: 10.0, speed: 2.0 },
/// ];
/// assert_eq!(lends(&groups), vec![Lend { from: 0, to: 1, work: 10.0 }]);
/// ```
pub fn lends(groups: &[GroupLoad]) -> Vec<Lend> {
    let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    let total: f64 = groups.iter().map(|g| clean(g.work)).sum();
    let speed: f64 = groups.iter().map(|g| clean(g.speed)).sum();
    if total <= 0.0 || speed <= 0.0 {
        return Vec::new();
    }
    let mut excess: Vec<(usize, f64)> = Vec::new();
    let mut deficit: Vec<(usize, f64)> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        let share = total * clean(group.speed) / speed;
        let diff = clean(group.work) - share;
        if diff > TREE_TOLERANCE * share.max(f64::MIN_POSITIVE) {
            excess.push((g, diff));
        } else if -diff > TREE_TOLERANCE * share {
            deficit.push((g, -diff));
        }
    }
    // Largest first; ties by group, so that the order is total.
    let order = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    excess.sort_by(order);
    deficit.sort_by(order);
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < excess.len() && j < deficit.len() {
        let work = excess[i].1.min(deficit[j].1);
        out.push(Lend {
            from: excess[i].0,
            to: deficit[j].0,
            work,
        });
        excess[i].1 -= work;
        deficit[j].1 -= work;
        if excess[i].1 <= 0.0 {
            i += 1;
        }
        if deficit[j].1 <= 0.0 {
            j += 1;
        }
    }
    out
}

/// One of a group's objects, as its leader sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupObject {
    /// Its load.
    pub load: f64,
    /// The member (index within the group) it is on.
    pub member: usize,
    /// Whether it may move.
    pub migratable: bool,
}

/// Which of a group's objects it lends, and to which of its `lends` (the
/// work each borrower takes): while work is left to lend, the most loaded
/// member (by `member_work`, each member's work: its background × speed
/// plus its objects' loads) that holds an object under twice the work
/// still to lend gives its largest such object (taking it overshoots by
/// less than leaving it undershoots) to the borrower with the most left to
/// take. A borrower may end above its share by less than one object, as
/// after any object-granular balance. Returns, per object, the index in
/// `lends` it goes to, or `None` where it stays.
///
/// ```
/// use keel_policy::mapping::tree::{pick_lent, GroupObject};
/// let objects = [
///     GroupObject { load: 4.0, member: 0, migratable: true },
///     GroupObject { load: 3.0, member: 0, migratable: true },
///     GroupObject { load: 1.0, member: 1, migratable: true },
/// ];
/// // Member 0 carries 7, member 1 carries 1; lend 3.5 to one group.
/// let picked = pick_lent(&objects, &[7.0, 1.0], &[3.5]);
/// assert_eq!(picked, vec![Some(0), None, None]);
/// ```
pub fn pick_lent(
    objects: &[GroupObject],
    member_work: &[f64],
    lends: &[f64],
) -> Vec<Option<usize>> {
    let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    let mut out = vec![None; objects.len()];
    let members = member_work.len();
    // Each member's migratable objects, ascending (the largest that fits
    // is found by a binary search).
    let mut on: Vec<Vec<usize>> = vec![Vec::new(); members];
    for (o, obj) in objects.iter().enumerate() {
        if obj.migratable && obj.member < members && clean(obj.load) > 0.0 {
            on[obj.member].push(o);
        }
    }
    for list in &mut on {
        list.sort_by(|&a, &b| {
            clean(objects[a].load)
                .total_cmp(&clean(objects[b].load))
                .then(b.cmp(&a))
        });
    }
    let mut work: Vec<f64> = member_work.iter().map(|&w| clean(w)).collect();
    let mut left: Vec<f64> = lends.iter().map(|&w| clean(w)).collect();
    let mut total: f64 = left.iter().sum();
    while total > 0.0 {
        // The most loaded member that still has an object that fits.
        let mut best: Option<(usize, usize)> = None;
        for (m, list) in on.iter().enumerate() {
            if best.is_some_and(|(b, _)| work[b] >= work[m]) {
                continue;
            }
            let fits = list.partition_point(|&o| clean(objects[o].load) < 2.0 * total);
            if fits > 0 {
                best = Some((m, fits - 1));
            }
        }
        let Some((m, at)) = best else { break };
        let o = on[m].remove(at);
        let load = clean(objects[o].load);
        // The borrower with the most left to take (the first on ties).
        let to = (0..left.len())
            .max_by(|&a, &b| left[a].total_cmp(&left[b]).then(b.cmp(&a)))
            .expect("work left means a borrower");
        out[o] = Some(to);
        work[m] -= load;
        left[to] -= load;
        total -= load;
    }
    out
}

/// One group's placement: its members' background times and speeds, the
/// objects that stay (with their member) and those it borrowed (with no
/// member yet), placed by `policy` (a registry spec). Returns each
/// object's member, stayers first then borrowed, in the order given.
///
/// ```
/// use keel_policy::mapping::tree::place_group;
/// // Two members; one object stays on member 0, two arrive.
/// let members = place_group("greedy", &[0.0, 0.0], &[1.0, 1.0], &[(2.0, 0, true)], &[1.0, 1.0]).unwrap();
/// assert_eq!(members, vec![0, 1, 1]);
/// ```
pub fn place_group(
    policy: &str,
    background: &[f64],
    speeds: &[f64],
    staying: &[(f64, usize, bool)],
    borrowed: &[f64],
) -> Result<Vec<usize>, PolicyError> {
    let policy = super::registry().build(policy)?;
    let loads: Vec<f64> = staying
        .iter()
        .map(|s| s.0)
        .chain(borrowed.iter().copied())
        .collect();
    let migratable: Vec<bool> = staying
        .iter()
        .map(|s| s.2)
        .chain(borrowed.iter().map(|_| true))
        .collect();
    let current: Vec<usize> = staying
        .iter()
        .map(|s| s.1)
        .chain(borrowed.iter().map(|_| NO_PU))
        .collect();
    let dynamic = |subject| Concept::Workload {
        subject,
        model: Model::Dynamic,
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &loads[..])
        .provide_values(dynamic(Subject::Pus), Origin::Runtime, background)
        .provide_values(Concept::PuSpeed, Origin::Runtime, speeds)
        .provide_flags(Concept::TaskMigratable, Origin::Runtime, &migratable[..])
        .provide_placement(Origin::Runtime, &current[..]);
    let mapping = policy.map(&ctx)?;
    if mapping.ntasks() != loads.len() || mapping.npus() != background.len() {
        return Err(PolicyError::MalformedComponent {
            policy: policy.spec().to_string(),
            component: "decision".into(),
            problem: format!(
                "decided for {} objects on {} members, asked {} on {}",
                mapping.ntasks(),
                mapping.npus(),
                loads.len(),
                background.len()
            ),
        });
    }
    Ok(mapping.into_vec())
}

/// A whole problem for [`decide`]: objects' loads and current ranks,
/// ranks in groups of `group` consecutive ranks.
#[derive(Clone, Debug)]
pub struct TreeInput<'a> {
    /// Each object's load.
    pub loads: &'a [f64],
    /// Each object's rank.
    pub current: &'a [usize],
    /// Ranks.
    pub ranks: usize,
    /// Ranks per group (the last group may be smaller).
    pub group: usize,
    /// Each rank's background time (none: 0).
    pub background: Option<&'a [f64]>,
    /// Each rank's speed (none: 1).
    pub speeds: Option<&'a [f64]>,
    /// Which objects may move (none: all).
    pub migratable: Option<&'a [bool]>,
}

impl<'a> TreeInput<'a> {
    /// `loads` on `current` ranks of `ranks`, in groups of `group`.
    pub fn new(loads: &'a [f64], current: &'a [usize], ranks: usize, group: usize) -> Self {
        TreeInput {
            loads,
            current,
            ranks,
            group,
            background: None,
            speeds: None,
            migratable: None,
        }
    }
}

/// What [`decide`] decided.
#[derive(Clone, Debug, PartialEq)]
pub struct TreePlan {
    /// Each object's rank after the plan.
    pub destinations: Vec<usize>,
    /// The top level's lends.
    pub lends: Vec<Lend>,
}

/// The rank range of group `g`.
pub fn group_ranks(g: usize, group: usize, ranks: usize) -> std::ops::Range<usize> {
    let first = (g * group).min(ranks);
    first..(first + group).min(ranks)
}

/// The tree's decision on a whole problem, every piece in turn: what a
/// distributed context computes piece by piece on the ranks that hold the
/// inputs. `policy` places each group's objects on its members.
pub fn decide(input: &TreeInput<'_>, policy: &str) -> Result<TreePlan, PolicyError> {
    let (ranks, group) = (input.ranks.max(1), input.group.max(1));
    let n = input.loads.len();
    if input.current.len() != n {
        return Err(PolicyError::LengthMismatch {
            concept: Concept::CurrentMapping,
            found: input.current.len(),
            expected: n,
            unit: "tasks",
        });
    }
    if let Some((task, &pu)) = input.current.iter().enumerate().find(|(_, &r)| r >= ranks) {
        return Err(PolicyError::PuOutOfRange {
            task,
            pu,
            npus: ranks,
        });
    }
    let groups = ranks.div_ceil(group);
    let background = |r: usize| input.background.map_or(0.0, |b| b[r]);
    let speed = |r: usize| input.speeds.map_or(1.0, |s| s[r]);
    let migratable = |o: usize| input.migratable.is_none_or(|m| m[o]);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for (o, &r) in input.current.iter().enumerate() {
        members[r / group].push(o);
    }
    let mut rank_work: Vec<f64> = (0..ranks).map(|r| background(r) * speed(r)).collect();
    for (o, &r) in input.current.iter().enumerate() {
        rank_work[r] += input.loads[o];
    }
    let summaries: Vec<GroupLoad> = (0..groups)
        .map(|g| {
            let rs = group_ranks(g, group, ranks);
            GroupLoad {
                work: rs.clone().map(|r| rank_work[r]).sum(),
                speed: rs.map(speed).sum(),
            }
        })
        .collect();
    let lent = lends(&summaries);
    let mut destinations = vec![NO_PU; n];
    let mut borrowed: Vec<Vec<usize>> = vec![Vec::new(); groups];
    let mut staying: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for g in 0..groups {
        let first = group_ranks(g, group, ranks).start;
        let mine: Vec<&Lend> = lent.iter().filter(|l| l.from == g).collect();
        let objects: Vec<GroupObject> = members[g]
            .iter()
            .map(|&o| GroupObject {
                load: input.loads[o],
                member: input.current[o] - first,
                migratable: migratable(o),
            })
            .collect();
        let work: Vec<f64> = group_ranks(g, group, ranks).map(|r| rank_work[r]).collect();
        let amounts: Vec<f64> = mine.iter().map(|l| l.work).collect();
        for (i, pick) in pick_lent(&objects, &work, &amounts).into_iter().enumerate() {
            match pick {
                Some(l) => borrowed[mine[l].to].push(members[g][i]),
                None => staying[g].push(members[g][i]),
            }
        }
    }
    for g in 0..groups {
        let rs = group_ranks(g, group, ranks);
        let first = rs.start;
        let stay: Vec<(f64, usize, bool)> = staying[g]
            .iter()
            .map(|&o| (input.loads[o], input.current[o] - first, migratable(o)))
            .collect();
        let came: Vec<f64> = borrowed[g].iter().map(|&o| input.loads[o]).collect();
        let bg: Vec<f64> = rs.clone().map(background).collect();
        let sp: Vec<f64> = rs.map(speed).collect();
        let placed = place_group(policy, &bg, &sp, &stay, &came)?;
        for (&o, &m) in staying[g].iter().chain(&borrowed[g]).zip(&placed) {
            destinations[o] = first + m;
        }
    }
    Ok(TreePlan {
        destinations,
        lends: lent,
    })
}

#[cfg(test)]
mod tests;
