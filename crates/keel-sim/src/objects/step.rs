//! One time step of the objects model: every PU runs its objects in the
//! order its list holds them (id order; with stealing, lightest first by
//! their last step's work, as `keel::objects` runs them — [`super`] keeps
//! the lists); an object's step is serial work, then a *potential task*
//! over its cells (a model of `keel::tasks`,
//! `crates/keel-runtime/src/tasks/README.md`):
//!
//! - the task is cut into `n = clamp(CHUNKS_PER_WORKER × PUs per node, 1,
//!   min(cells, MAX_CHUNKS))` contiguous chunks;
//! - the PU's own [`ExposeState`] (the unchanged `keel_policy::expose`
//!   policy) decides from the node's idle count how many, `k`, to expose:
//!   chunks `n−k..n` go on the owner's deque, `0..n−k` stay hidden;
//! - the owner runs its hidden chunks in index order. With *late
//!   exposure* (a policy with an idle term and `late=on`, more than one PU
//!   per node) it looks again after each hidden chunk but the last: if a
//!   PU of its node is idle and thieves have emptied its deque,
//!   [`ExposeState::late`] says how many of the hidden chunks still to run
//!   to expose, taken from the top of the hidden range. A PU that runs dry
//!   just after a task started would otherwise find nothing while the
//!   owner works through its private part. Without late exposure nothing
//!   can be observed between two hidden chunks, so they run in one go;
//! - then the owner pops its exposed chunks in index order while thieves
//!   take them from the far end;
//! - a PU that finished its objects, or an owner waiting for thieves to
//!   finish its chunks, is *idle*: it steals one chunk at a time from a
//!   random PU **of its own node** that has exposed chunks, paying
//!   `steal_cost`, until every PU of the node has finished its objects;
//! - a finished task records `(stolen, n − stolen)` in the owner's history;
//! - an object's measured load is its *work*: the owner's time on it, less
//!   its wait for thieves (stealing other tasks' chunks meanwhile
//!   included), plus the thieves' time on its chunks (their steal costs
//!   not). `keel::objects` measures it so because the owner's wall time
//!   would hide a hot object's stolen work from the next remap, and charge
//!   it with other objects' chunks it helped with.
//!
//! The node's step ends when its last PU finishes its objects; the step
//! ends at the slowest node (the barrier).
//!
//! A potential task with no work (a cold Lassen domain's loop over cells
//! that cost nothing) is run inline and recorded as nothing stolen, though
//! the runtime may expose some of it late: thieves of chunks that cost
//! nothing would change no time but their own steal costs, and the
//! shortcut keeps a run at one event per PU per step plus the hot tasks'
//! chunks. A task the policy exposes nothing of, with late exposure off,
//! runs inline too, as in the runtime.

use std::collections::VecDeque;

use keel_policy::expose::{Expose, ExposeState};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::ObjectCosts;
use crate::engine::{EventQueue, SimTime};
use crate::worker::WorkerModel;

/// Chunks per worker of a potential task, as `keel::tasks`'
/// `DEFAULT_CHUNKS_PER_WORKER`.
pub const CHUNKS_PER_WORKER: usize = 8;

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
    /// Each object's work in its latest step: the key of the run order
    /// with stealing.
    pub last_work: Vec<f64>,
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
    /// The owner finished a stretch of hidden chunks.
    HiddenDone(usize),
    /// The owner finished an exposed chunk it popped back.
    OwnDone(usize),
    StolenDone {
        thief: usize,
        victim: usize,
    },
    ObjectsDone(usize),
}

struct Task {
    object: usize,
    chunks: usize,
    costs: Vec<f64>,
    /// The owner's hidden chunks still to run are `next..hidden`; late
    /// exposure lowers `hidden`.
    next: usize,
    hidden: usize,
    /// Exposed chunks not taken yet: the owner pops the front, thieves the back.
    deque: VecDeque<usize>,
    /// Exposed chunks not finished yet.
    remaining: usize,
    exposed: usize,
    stolen: usize,
    /// Seconds thieves spent running its chunks.
    lent: f64,
    /// When the owner began waiting for its thieves.
    waiting_since: Option<SimTime>,
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
    /// Whether owners look for idle PUs between their hidden chunks.
    late: bool,
    q: EventQueue<Event>,
    runs: Vec<PuRun>,
    busy: Vec<f64>,
    idle: Vec<usize>,
    running: Vec<usize>,
    node_end: Vec<SimTime>,
}

/// Runs step `step` from time `t0`: adds each object's measured work to
/// `loads`, keeps it in `st.last_work`, and counts the step in `stepped`.
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
    let late = m.pus_per_node > 1 && m.expose.is_some_and(|e| e.late && e.scheme.has_idle_term());
    let mut s = Step {
        m,
        costs,
        step,
        lists,
        loads,
        stepped,
        st,
        late,
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
            Event::HiddenDone(p) => {
                s.runs[p].busy = false;
                s.expose_late(p, now);
                s.run_hidden(p, now);
            }
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

    /// The object on `p` ended at `at`, having waited `waited` seconds for
    /// thieves who spent `lent` seconds on its chunks.
    fn finish_object(&mut self, p: usize, object: usize, at: SimTime, waited: f64, lent: f64) {
        let work = (at - self.runs[p].object_start - waited).max(0.0) + lent;
        self.loads[object] += work;
        self.st.last_work[object] = work;
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
                self.finish_object(p, o, t, 0.0, 0.0);
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
            self.finish_object(p, o, t, 0.0, 0.0);
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
        if k == 0 && !self.late {
            let t = self.work(p, now, costs.iter().sum());
            self.record(p, n, 0, 0);
            self.finish_object(p, o, t, 0.0, 0.0);
            self.advance(p, t);
            return;
        }
        self.runs[p].task = Some(Task {
            object: o,
            chunks: n,
            costs,
            next: 0,
            hidden: n - k,
            deque: (n - k..n).collect(),
            remaining: k,
            exposed: k,
            stolen: 0,
            lent: 0.0,
            waiting_since: None,
        });
        // Thieves first: an owner with nothing hidden pops at this very
        // time, and a thief already idle would have seen the push first.
        if k > 0 {
            self.wake_thieves(p, now);
        }
        self.run_hidden(p, now);
    }

    fn wake_thieves(&mut self, p: usize, now: SimTime) {
        for q in self.node_pus(p) {
            if q != p {
                self.try_steal(q, now);
            }
        }
    }

    /// The owner runs its next hidden chunk — all of them at once when
    /// nothing can happen between two — or goes on to its exposed ones.
    fn run_hidden(&mut self, p: usize, now: SimTime) {
        let late = self.late;
        let cost = {
            let task = self.runs[p].task.as_mut().expect("owner has a task");
            (task.next < task.hidden).then(|| {
                let to = if late { task.next + 1 } else { task.hidden };
                let cost: f64 = task.costs[task.next..to].iter().sum();
                task.next = to;
                cost
            })
        };
        match cost {
            Some(cost) => {
                let t = self.work(p, now, cost);
                self.runs[p].busy = true;
                self.q.schedule(t, Event::HiddenDone(p));
            }
            None => self.owner_next(p, now),
        }
    }

    /// Late exposure, between two hidden chunks: only while a PU of the
    /// node is idle and thieves have taken everything exposed so far
    /// (anything still on the deque is theirs to take first).
    fn expose_late(&mut self, p: usize, now: SimTime) {
        let idle = self.idle[p / self.m.pus_per_node];
        if !self.late || idle == 0 {
            return;
        }
        let expose = self.m.expose.expect("late exposure needs stealing on");
        let workers = self.m.pus_per_node;
        let history = &self.st.history[p];
        let Some(task) = self.runs[p].task.as_mut() else {
            return;
        };
        if task.next == task.hidden || !task.deque.is_empty() {
            return;
        }
        let more = history.late(&expose, task.hidden - task.next, idle, workers);
        if more == 0 {
            return;
        }
        task.deque.extend(task.hidden - more..task.hidden);
        task.hidden -= more;
        task.remaining += more;
        task.exposed += more;
        self.wake_thieves(p, now);
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
        } else if let Some(task) = self.runs[p].task.as_mut().filter(|t| t.remaining > 0) {
            task.waiting_since = Some(now);
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
        self.record(p, task.chunks, task.exposed, task.stolen);
        let waited = task.waiting_since.map_or(0.0, |since| now - since);
        self.finish_object(p, task.object, now, waited, task.lent);
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
        // The runtime times the chunk's body only, not the steal.
        if let Some(task) = self.runs[victim].task.as_mut() {
            task.lent += end - start;
        }
        self.runs[q].busy = true;
        self.q.schedule(end, Event::StolenDone { thief: q, victim });
    }
}
