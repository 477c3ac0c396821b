//! [`LoopSelector`]: one loop's selection state — a method's state machine,
//! the expert chunk, the cost model it consults and the record of its
//! decisions.
//!
//! Under `auto,keel` a loop's instances are kept apart by *class*: the bit
//! length of their iteration count, so that instances within a factor of
//! two of each other share a search and a wavefront's short and long
//! diagonals are never compared as if alike. A class's state is made the
//! first time an instance of that size runs (at most 65 per loop); its
//! search measures the neighbouring class's winner first.

use std::fmt;

use serde::Serialize;

use super::cost::{predicted_chunks, DispatchCost, LoopModel};
use super::{
    expert_chunk, AutoSpec, Choice, ExhaustiveSel, ExpertSel, KeelSel, Measurement, Method, Phase,
    RandomSel, Record, Select, SettledBy, PORTFOLIO_LEN,
};
use crate::error::PolicyError;

/// The four method state machines, dispatched without boxing.
#[derive(Debug)]
enum Machine {
    Keel(Box<KeelSel>),
    Expert(ExpertSel),
    Exhaustive(ExhaustiveSel),
    Random(Box<RandomSel>),
}

impl Machine {
    fn as_select(&mut self) -> &mut dyn Select {
        match self {
            Machine::Keel(m) => m.as_mut(),
            Machine::Expert(m) => m,
            Machine::Exhaustive(m) => m,
            Machine::Random(m) => m.as_mut(),
        }
    }

    fn keel(&self) -> Option<&KeelSel> {
        match self {
            Machine::Keel(m) => Some(m),
            _ => None,
        }
    }
}

/// One class of alike instances: its method state, its cost model and
/// what its explorations cost.
#[derive(Debug)]
struct Class {
    /// Bit length of the class's iteration counts (`0` for every instance
    /// under the Auto4OMP methods, which keep one state per loop).
    key: u32,
    machine: Machine,
    model: LoopModel,
    /// Exploited instances left to run unmeasured before the next
    /// measured one.
    unmeasured_left: u32,
    /// Seconds and iterations of this class's exploration instances.
    explored_seconds: f64,
    explored_iterations: f64,
    explored_instances: u64,
}

/// The choice made and not yet observed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    class: usize,
    index: usize,
    phase: Phase,
    threads: usize,
}

/// What selection cost one loop, as a report shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct SelectionCost {
    /// Seconds of the loop's instances: measured, plus the unmeasured
    /// exploited ones at the settled schedule's rate.
    pub loop_seconds: f64,
    /// Seconds of the instances spent exploring (explore, re-explore).
    pub exploration_seconds: f64,
    /// What those instances took beyond what the schedule each class
    /// settled on would have taken for the same iterations (negative when
    /// the search ran faster schedules than the one it kept).
    pub exploration_excess_seconds: f64,
    /// Instances spent exploring.
    pub exploration_instances: u64,
    /// Exploited instances run unmeasured (short loops).
    pub unmeasured_instances: u64,
    /// Classes of alike instances the loop ran in.
    pub classes: usize,
}

impl SelectionCost {
    /// The exploration's excess as a share of the loop's time (0 for a
    /// loop that took no time).
    pub fn exploration_share(&self) -> f64 {
        if self.loop_seconds > 0.0 {
            self.exploration_excess_seconds / self.loop_seconds
        } else {
            0.0
        }
    }
}

/// One loop's selection state: a method's state machine (one per class of
/// alike instances under `auto,keel`), the expert chunk switch, the cost
/// model and the record of decisions. `Send`, so a context may keep it in
/// a per-loop record behind a lock; it is not shared between loops.
pub struct LoopSelector {
    method: Method,
    spec: AutoSpec,
    stream: u64,
    classes: Vec<Class>,
    /// The class of the last choice.
    last_class: usize,
    cost: DispatchCost,
    pending: Option<Pending>,
    record: Record,
    unmeasured: u64,
    unmeasured_seconds: f64,
    measured_seconds: f64,
    /// The last lease granted: its class, length and estimated seconds per
    /// instance, until another choice is made.
    last_lease: Option<(usize, u32, f64)>,
}

impl fmt::Debug for LoopSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopSelector")
            .field("method", &self.method)
            .field("classes", &self.classes.len())
            .field("cost", &self.cost)
            .field("instances", &self.record.instances())
            .finish_non_exhaustive()
    }
}

impl LoopSelector {
    /// A fresh selector for one loop (see [`AutoSpec::selector`]), with
    /// the default [`DispatchCost`] until the context publishes its own.
    pub fn new(spec: &AutoSpec, stream: u64) -> Self {
        let mut selector = LoopSelector {
            method: spec.method,
            spec: *spec,
            stream,
            classes: Vec::new(),
            last_class: 0,
            cost: DispatchCost::default(),
            pending: None,
            record: Record::with_capacity(spec.record_runs),
            unmeasured: 0,
            unmeasured_seconds: 0.0,
            measured_seconds: 0.0,
            last_lease: None,
        };
        selector.classes.push(selector.new_class(0, None));
        selector
    }

    /// The same selector consulting `cost`, what the context measured its
    /// dispatch to cost (an invalid one is ignored).
    pub fn with_cost(mut self, cost: DispatchCost) -> Self {
        if cost.is_valid() {
            self.cost = cost;
        }
        self
    }

    /// Consults `cost` from now on, what the context measured its dispatch
    /// to cost (an invalid one is ignored): a context whose measurement
    /// ends after the loop's first instance passes the newer figure.
    pub fn set_cost(&mut self, cost: DispatchCost) {
        if cost.is_valid() {
            self.cost = cost;
        }
    }

    /// The dispatch cost it consults.
    pub fn dispatch_cost(&self) -> DispatchCost {
        self.cost
    }

    fn new_class(&self, key: u32, incumbent: Option<usize>) -> Class {
        let machine = match self.method {
            Method::Keel => Machine::Keel(Box::new(match incumbent {
                Some(j) => KeelSel::measuring_first(j),
                None => KeelSel::new(),
            })),
            Method::Expert => Machine::Expert(ExpertSel::new()),
            Method::Exhaustive => Machine::Exhaustive(ExhaustiveSel::new()),
            Method::Random => {
                Machine::Random(Box::new(RandomSel::new(self.spec.seed, self.stream)))
            }
        };
        Class {
            key,
            machine,
            model: LoopModel::default(),
            unmeasured_left: 0,
            explored_seconds: 0.0,
            explored_iterations: 0.0,
            explored_instances: 0,
        }
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The class of an instance of `iterations`: its bit length under
    /// `auto,keel` (made on first use, seeded with the winner of the
    /// nearest class that has one), the one class otherwise.
    fn class_of(&mut self, iterations: u64) -> usize {
        if self.method != Method::Keel {
            return 0;
        }
        let key = u64::BITS - iterations.leading_zeros();
        if self.classes[0].key == key {
            return 0;
        }
        if let Some(k) = self.classes.iter().position(|c| c.key == key) {
            return k;
        }
        if self.classes.len() == 1 && self.record.instances() == 0 {
            // The first instance names the first class.
            self.classes[0].key = key;
            return 0;
        }
        let incumbent = self
            .classes
            .iter()
            .filter_map(|c| c.machine.keel()?.winner().map(|w| (c.key.abs_diff(key), w)))
            .min_by_key(|&(distance, _)| distance)
            .map(|(_, w)| w);
        let class = self.new_class(key, incumbent);
        self.classes.push(class);
        self.classes.len() - 1
    }

    /// The schedule for the next instance of this loop, which has
    /// `iterations` iterations over `threads` threads. If the previous
    /// choice was never observed (its measurement was lost), the same
    /// schedule is returned again: nothing was learned.
    ///
    /// Under `auto,keel` the cost model decides first: the candidates the
    /// loop cannot afford leave the search, every chunk is raised to the
    /// smallest whose claim costs at most
    /// [`CHUNK_OVERHEAD_SHARE`](super::cost::CHUNK_OVERHEAD_SHARE) of its
    /// work, STATIC runs as blocks (one per thread), and an exploited
    /// choice on a short loop is measured only once in a few instances
    /// ([`Choice::measure`]).
    pub fn choose(&mut self, iterations: u64, threads: usize) -> Choice {
        self.last_lease = None;
        let class = match self.pending {
            Some(p) => p.class,
            None => self.class_of(iterations),
        };
        self.last_class = class;
        let keel = self.method == Method::Keel;
        let expert_on = self.spec.expert_chunk;
        let cost = self.cost;
        let c = &mut self.classes[class];
        let chunk_for = |model: &LoopModel, index: usize| -> Option<u64> {
            if keel && index == 0 {
                return None;
            }
            let floor = model.min_chunk(&cost, index, iterations, threads);
            let expert = if expert_on {
                expert_chunk(iterations, threads)
            } else {
                None
            };
            match expert {
                Some(e) => Some(e.max(floor)),
                None if floor > 1 => Some(floor),
                None => None,
            }
        };
        if keel && self.pending.is_none() {
            let exploiting = c.machine.keel().and_then(KeelSel::winner);
            if let Some(winner) = exploiting.filter(|_| self.spec.pin.is_none()) {
                if c.unmeasured_left > 0 {
                    // Every unmeasured instance up to the next measured one
                    // in one lease, counted now.
                    let lease = std::mem::take(&mut c.unmeasured_left);
                    let rate = c.machine.keel().and_then(KeelSel::reference_rate);
                    let each = rate.map_or(0.0, |r| r * iterations.max(1) as f64);
                    let estimate = each * f64::from(lease);
                    if let Machine::Keel(m) = &mut c.machine {
                        m.account_unmeasured(estimate);
                    }
                    self.last_lease = Some((class, lease, each));
                    self.unmeasured += u64::from(lease);
                    self.unmeasured_seconds += estimate;
                    let instance = self.record.instances();
                    self.record
                        .push_many(winner, Phase::Exploit, u64::from(lease));
                    return Choice {
                        instance,
                        index: winner,
                        chunk: chunk_for(&c.model, winner),
                        phase: Phase::Exploit,
                        measure: false,
                        lease,
                    };
                }
                c.unmeasured_left = c.model.measure_interval(&cost, iterations, threads) - 1;
            } else if self.spec.pin.is_none() {
                // A pinned selector runs its pin: nothing to restrict or rank.
                let mut allowed = 0u16;
                let mut overheads = [0.0; PORTFOLIO_LEN];
                for (index, overhead) in overheads.iter_mut().enumerate() {
                    let chunk = chunk_for(&c.model, index).unwrap_or(1);
                    if c.model.affordable(&cost, index, iterations, threads, chunk) {
                        allowed |= 1 << index;
                    }
                    *overhead = predicted_chunks(index, iterations, threads as f64, chunk)
                        * cost.chunk_cost(index)
                        + c.model.imbalance_cost(&cost, index, iterations, threads);
                }
                if let Machine::Keel(m) = &mut c.machine {
                    m.restrict(allowed);
                    m.rank_by_cost(&overheads);
                }
            }
        }
        let (index, phase) = match self.pending {
            Some(p) => (p.index, p.phase),
            None => c.machine.as_select().next(),
        };
        self.pending = Some(Pending {
            class,
            index,
            phase,
            threads,
        });
        let (index, phase) = match self.spec.pin {
            Some(pinned) => (pinned, Phase::Pinned),
            None => (index, phase),
        };
        let instance = self.record.instances();
        self.record.push(index, phase);
        Choice {
            instance,
            index,
            chunk: chunk_for(&c.model, index),
            phase,
            measure: true,
            lease: 1,
        }
    }

    /// Hands back `unused` instances of the last choice's lease that did
    /// not run (at most the lease's length less the instance that made
    /// it; nothing when the last choice was no lease): they are no longer
    /// counted, and the class measures sooner.
    pub fn return_lease(&mut self, unused: u32) {
        let Some((class, lease, each)) = self.last_lease.take() else {
            return;
        };
        let unused = unused.min(lease - 1);
        if unused == 0 {
            return;
        }
        let seconds = each * f64::from(unused);
        if let Machine::Keel(m) = &mut self.classes[class].machine {
            m.account_unmeasured(-seconds);
        }
        self.unmeasured -= u64::from(unused);
        self.unmeasured_seconds -= seconds;
        self.record.take_back(u64::from(unused));
        self.classes[class].unmeasured_left = unused;
    }

    /// The measurements of the instance [`LoopSelector::choose`] last chose
    /// for. A measurement with no choice pending is ignored; a non-finite or
    /// negative time or a LIB outside `[0, 100]` is a typed error and leaves
    /// the choice pending.
    pub fn observe(&mut self, measurement: &Measurement<'_>) -> Result<(), PolicyError> {
        measurement.validate()?;
        if let Some(p) = self.pending.take() {
            self.measured_seconds += measurement.t_par;
            let c = &mut self.classes[p.class];
            if let Some(n) = measurement.iterations {
                c.model
                    .observe(measurement.t_par, measurement.lib, n, p.threads);
            }
            if self.spec.pin.is_none() {
                c.model.observe_schedule(p.index, measurement.lib);
            }
            if p.phase.is_exploration() {
                c.explored_seconds += measurement.t_par;
                c.explored_iterations += measurement.iterations.map_or(1.0, |n| n as f64);
                c.explored_instances += 1;
            }
            c.machine.as_select().observe(measurement);
        }
        Ok(())
    }

    /// The decisions so far.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Why the search of the last instance's class ended, under
    /// `auto,keel` once it has.
    pub fn settled_by(&self) -> Option<SettledBy> {
        self.classes[self.last_class].machine.keel()?.settled_by()
    }

    /// The record and the cost as they stand with the last lease's
    /// `unrun` instances not yet run (a context showing a loop mid-lease):
    /// those instances are not counted.
    pub fn view_without_unrun(&self, unrun: u32) -> (Record, SelectionCost) {
        let mut record = self.record.clone();
        let mut cost = self.cost();
        if let Some((_, lease, each)) = self.last_lease {
            let unrun = unrun.min(lease - 1);
            record.take_back(u64::from(unrun));
            cost.unmeasured_instances -= u64::from(unrun);
            cost.loop_seconds = (cost.loop_seconds - each * f64::from(unrun)).max(0.0);
        }
        (record, cost)
    }

    /// What selection has cost this loop so far.
    pub fn cost(&self) -> SelectionCost {
        let mut cost = SelectionCost {
            loop_seconds: self.measured_seconds + self.unmeasured_seconds,
            classes: self.classes.len(),
            unmeasured_instances: self.unmeasured,
            ..SelectionCost::default()
        };
        for c in &self.classes {
            cost.exploration_seconds += c.explored_seconds;
            cost.exploration_instances += c.explored_instances;
            // The Auto4OMP methods settle on no reference rate: their
            // excess is left to the studies that time every schedule.
            if let Some(rate) = c.machine.keel().and_then(KeelSel::reference_rate) {
                cost.exploration_excess_seconds +=
                    c.explored_seconds - rate * c.explored_iterations;
            }
        }
        cost
    }
}
