//! One time step of the objects model: every PU runs its objects in id
//! order; an object's step is serial work, then a *potential task* over its
//! cells (a model of `keel::tasks`, `crates/keel/src/tasks/README.md`):
//!
//! - the task is cut into `n = clamp(CHUNKS_PER_WORKER × PUs per node, 1,
//!   min(cells, MAX_CHUNKS))` contiguous chunks;
//! - the PU's own [`ExposeState`] (the unchanged `keel_policy::expose`
//!   policy) decides from the node's idle count how many, `k`, to expose;
//!   the owner runs chunks `0..n−k` in one go, then pops its exposed ones in
//!   index order while thieves take them from the far end;
//! - a PU that finished its objects, or an owner waiting for thieves to
//!   finish its chunks, is *idle*: it steals one chunk at a time from a
//!   random PU **of its own node** that has exposed chunks, paying
//!   `steal_cost`, until every PU of the node has finished its objects;
//! - a finished task records `(stolen, n − stolen)` in the owner's history.
//!
//! The node's step ends when its last PU finishes its objects; the step
//! ends at the slowest node (the barrier).
//!
//! A potential task with no work (a cold Lassen domain's loop over cells
//! that cost nothing) is run inline and recorded as nothing stolen: its
//! chunks would be popped back by the owner before any thief reached them.
//! That keeps a run at one event per PU per step plus the hot tasks' chunks.

use std::collections::VecDeque;

use keel_policy::expose::{Expose, ExposeState};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::ObjectCosts;
use crate::engine::{EventQueue, SimTime};
use crate::worker::WorkerModel;

/// Chunks per worker of a potential task, as `keel::tasks`'
/// `DEFAULT_CHUNKS_PER_WORKER`.
pub const CHUNKS_PER_WORKER: usize = 4;

/// At most this many chunks per potential task, as `keel::tasks`' `MAX_CHUNKS`
/// (CkLoop's bound).
pub const MAX_CHUNKS: usize = 64;

/// The machine a step runs on.
pub(super) struct Machine<'m> {
    pub pus: &'m [WorkerModel],
    pub available: &'m [bool],
    pub pus_per_node: usize,
    pub steal_cost: f64,
    /// `None` when stealing is off (every task runs inline).
    pub expose: Option<Expose>,
}

/// Potential-task counters over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TaskStats {
    /// Potential tasks run.
    pub tasks: u64,
    /// Their chunks.
    pub chunks: u64,
    /// Chunks exposed to thieves.
    pub exposed: u64,
    /// Chunks thieves ran.
    pub stolen: u64,
    /// Chunks their owners ran (hidden and popped back).
    pub owned: u64,
}

/// What persists between steps.
pub(super) struct Persistent {
    pub history: Vec<ExposeState>,
    pub rng: ChaCha8Rng,
    pub stats: TaskStats,
}

/// What one step measured.
pub(super) struct StepResult {
    /// When the last node finished (absolute).
    pub end: SimTime,
    /// Each PU's busy seconds (own work plus stolen chunks and steal costs).
    pub pu_busy: Vec<f64>,
    pub events: u64,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    StartTask(usize),
    OwnDone(usize),
    StolenDone { thief: usize, victim: usize },
    ObjectsDone(usize),
}

struct Task {
    object: usize,
    chunks: usize,
    costs: Vec<f64>,
    /// Exposed chunks not taken yet: the owner pops the front, thieves the back.
    deque: VecDeque<usize>,
    /// Exposed chunks not finished yet.
    remaining: usize,
    stolen: usize,
}

#[derive(Default)]
struct PuRun {
    cursor: usize,
    object_start: SimTime,
    task: Option<Task>,
    busy: bool,
    waiting_own: bool,
    finished: bool,
}

struct Step<'a, 'm> {
    m: &'a Machine<'m>,
    costs: &'a dyn ObjectCosts,
    step: usize,
    lists: &'a [Vec<usize>],
    loads: &'a mut [f64],
    stepped: &'a mut [u32],
    st: &'a mut Persistent,
    q: EventQueue<Event>,
    runs: Vec<PuRun>,
    busy: Vec<f64>,
    idle: Vec<usize>,
    running: Vec<usize>,
    node_end: Vec<SimTime>,
}

/// Runs step `step` from time `t0`: adds each object's measured time to
/// `loads` and counts it in `stepped`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_step(
    m: &Machine<'_>,
    costs: &dyn ObjectCosts,
    step: usize,
    t0: SimTime,
    lists: &[Vec<usize>],
    loads: &mut [f64],
    stepped: &mut [u32],
    st: &mut Persistent,
) -> StepResult {
    let npus = m.pus.len();
    let nodes = npus / m.pus_per_node;
    let mut running = vec![0; nodes];
    for p in (0..npus).filter(|&p| m.available[p]) {
        running[p / m.pus_per_node] += 1;
    }
    let mut s = Step {
        m,
        costs,
        step,
        lists,
        loads,
        stepped,
        st,
        q: EventQueue::new(),
        runs: (0..npus).map(|_| PuRun::default()).collect(),
        busy: vec![0.0; npus],
        idle: vec![0; nodes],
        running,
        node_end: vec![t0; nodes],
    };
    for p in (0..npus).filter(|&p| m.available[p]) {
        s.advance(p, t0);
    }
    while let Some((now, event)) = s.q.pop() {
        match event {
            Event::StartTask(p) => s.start_task(p, now),
            Event::OwnDone(p) => {
                s.runs[p].busy = false;
                if let Some(t) = s.runs[p].task.as_mut() {
                    t.remaining -= 1;
                }
                s.owner_next(p, now);
            }
            Event::StolenDone { thief, victim } => {
                s.runs[thief].busy = false;
                let done = {
                    let t = s.runs[victim]
                        .task
                        .as_mut()
                        .expect("a stolen chunk's task lives until its chunks finish");
                    t.remaining -= 1;
                    t.remaining == 0
                };
                if done && s.runs[victim].waiting_own && !s.runs[victim].busy {
                    s.stop_waiting(victim);
                    s.complete_task(victim, now);
                }
                if s.runs[thief].waiting_own
                    && s.runs[thief]
                        .task
                        .as_ref()
                        .is_some_and(|t| t.remaining == 0)
                {
                    s.stop_waiting(thief);
                    s.complete_task(thief, now);
                } else {
                    s.try_steal(thief, now);
                }
            }
            Event::ObjectsDone(p) => {
                let node = p / m.pus_per_node;
                s.runs[p].finished = true;
                s.idle[node] += 1;
                s.running[node] -= 1;
                s.node_end[node] = s.node_end[node].max(now);
                if s.running[node] > 0 {
                    s.try_steal(p, now);
                }
            }
        }
    }
    StepResult {
        end: s.node_end.iter().copied().fold(t0, f64::max),
        pu_busy: s.busy,
        events: s.q.events_processed(),
    }
}

impl Step<'_, '_> {
    fn node_pus(&self, p: usize) -> std::ops::Range<usize> {
        let first = p / self.m.pus_per_node * self.m.pus_per_node;
        first..first + self.m.pus_per_node
    }

    fn work(&mut self, p: usize, from: SimTime, work: f64) -> SimTime {
        let end = self.m.pus[p].finish(from, work, &mut self.st.rng);
        self.busy[p] += end - from;
        end
    }

    fn chunks_for(&self, cells: usize) -> usize {
        (CHUNKS_PER_WORKER * self.m.pus_per_node).clamp(1, cells.min(MAX_CHUNKS))
    }

    fn finish_object(&mut self, p: usize, object: usize, at: SimTime) {
        self.loads[object] += at - self.runs[p].object_start;
        self.stepped[object] += 1;
        self.runs[p].cursor += 1;
    }

    /// PU `p` goes on with its objects from local time `t`. Objects nobody
    /// else can observe (serial work, inline tasks) run without events; an
    /// exposure decision or the end of the list is an event at its time.
    fn advance(&mut self, p: usize, mut t: SimTime) {
        loop {
            let Some(&o) = self.lists[p].get(self.runs[p].cursor) else {
                self.q.schedule(t, Event::ObjectsDone(p));
                return;
            };
            self.runs[p].object_start = t;
            let serial = self.costs.serial(o, self.step);
            t = self.work(p, t, serial);
            let cells = self.costs.cells(o);
            if cells == 0 {
                self.finish_object(p, o, t);
                continue;
            }
            let potential = self.costs.potential(o, self.step);
            if potential > 0.0 && self.m.expose.is_some() {
                self.q.schedule(t, Event::StartTask(p));
                return;
            }
            let n = self.chunks_for(cells);
            t = self.work(p, t, potential);
            self.record(p, n, 0, 0);
            self.finish_object(p, o, t);
        }
    }

    fn record(&mut self, p: usize, chunks: usize, exposed: usize, stolen: usize) {
        self.st.history[p].record(stolen, chunks - stolen);
        let s = &mut self.st.stats;
        s.tasks += 1;
        s.chunks += chunks as u64;
        s.exposed += exposed as u64;
        s.stolen += stolen as u64;
        s.owned += (chunks - stolen) as u64;
    }

    fn start_task(&mut self, p: usize, now: SimTime) {
        let o = self.lists[p][self.runs[p].cursor];
        let cells = self.costs.cells(o);
        let n = self.chunks_for(cells);
        let mut costs = Vec::with_capacity(n);
        self.costs.chunk_costs(o, self.step, n, &mut costs);
        let node = p / self.m.pus_per_node;
        let expose = self.m.expose.expect("tasks start only when stealing is on");
        let k = self.st.history[p].decide(&expose, n, self.idle[node], self.m.pus_per_node);
        if k == 0 {
            let t = self.work(p, now, costs.iter().sum());
            self.record(p, n, 0, 0);
            self.finish_object(p, o, t);
            self.advance(p, t);
            return;
        }
        let hidden: f64 = costs[..n - k].iter().sum();
        self.runs[p].task = Some(Task {
            object: o,
            chunks: n,
            costs,
            deque: (n - k..n).collect(),
            remaining: k,
            stolen: 0,
        });
        self.st.stats.exposed += k as u64;
        let t = self.work(p, now, hidden);
        self.runs[p].busy = true;
        self.q.schedule(t, Event::OwnDone(p));
        // `OwnDone` counts one exposed chunk finished; the hidden block is
        // not one, so count it back in advance.
        if let Some(task) = self.runs[p].task.as_mut() {
            task.remaining += 1;
        }
        for q in self.node_pus(p) {
            if q != p {
                self.try_steal(q, now);
            }
        }
    }

    /// The owner finished a piece of its task: pop the next exposed chunk,
    /// or wait for thieves, or finish.
    fn owner_next(&mut self, p: usize, now: SimTime) {
        let next = {
            let task = self.runs[p].task.as_mut().expect("owner has a task");
            task.deque.pop_front().map(|c| task.costs[c])
        };
        if let Some(cost) = next {
            let t = self.work(p, now, cost);
            self.runs[p].busy = true;
            self.q.schedule(t, Event::OwnDone(p));
        } else if self.runs[p].task.as_ref().is_some_and(|t| t.remaining > 0) {
            self.runs[p].waiting_own = true;
            self.idle[p / self.m.pus_per_node] += 1;
            self.try_steal(p, now);
        } else {
            self.complete_task(p, now);
        }
    }

    fn stop_waiting(&mut self, p: usize) {
        self.runs[p].waiting_own = false;
        self.idle[p / self.m.pus_per_node] -= 1;
    }

    fn complete_task(&mut self, p: usize, now: SimTime) {
        let task = self.runs[p].task.take().expect("owner has a task");
        // Exposed chunks were counted when exposed (in `start_task`).
        self.record(p, task.chunks, 0, task.stolen);
        self.finish_object(p, task.object, now);
        self.advance(p, now);
    }

    /// An idle PU looks for a chunk in its node.
    fn try_steal(&mut self, q: usize, now: SimTime) {
        let r = &self.runs[q];
        if r.busy || !(r.finished || r.waiting_own) || !self.m.available[q] {
            return;
        }
        let node = q / self.m.pus_per_node;
        if self.running[node] == 0 {
            return;
        }
        let victims: Vec<usize> = self
            .node_pus(q)
            .filter(|&v| {
                v != q
                    && self.runs[v]
                        .task
                        .as_ref()
                        .is_some_and(|t| !t.deque.is_empty())
            })
            .collect();
        if victims.is_empty() {
            return;
        }
        let victim = victims[self.st.rng.gen_range(0..victims.len())];
        let cost = {
            let task = self.runs[victim].task.as_mut().expect("victim has a task");
            let c = task.deque.pop_back().expect("victim's deque is not empty");
            task.stolen += 1;
            task.costs[c]
        };
        let start = self.m.pus[q].finish_exact(now, self.m.steal_cost);
        self.busy[q] += start - now;
        let end = self.work(q, start, cost);
        self.runs[q].busy = true;
        self.q.schedule(end, Event::StolenDone { thief: q, victim });
    }
}
