//! `material`: a material-optimisation farm with feedback, after the
//! paper's §III-E.2 (Rossbory and Reisner's cutting optimisation, Fig. 13):
//! a pool of candidate solutions; each worker improves a solution with its
//! own strategy, whose cost differs between workers; results return to the
//! pool for further improvement until a budget of tasks is spent.
//!
//! **Problem.** `pieces` pieces with lengths drawn from ChaCha8 (`seed`) in
//! `[50, 500]` are cut, in a solution's order, from bars of length `stock`,
//! next-fit (a piece that does not fit opens a new bar). The waste is the
//! unused length of all bars. A solution is an order of the pieces.
//!
//! **Strategies.** Worker `w` runs `effort × costs[w mod len]` moves of a
//! local search: swap two random pieces, keep the swap unless it increases
//! the waste. The moves are drawn from ChaCha8 seeded by the solution's id
//! and generation, so a task's result depends only on its input and the
//! worker's strategy, and its cost only on the strategy.
//!
//! **Feedback.** The collector keeps the best solution and sends each
//! result back as the next candidate while fewer than `tasks` tasks have
//! been issued ([`Search`]); the pool starts with `pool` random orders.
//!
//! An improvement never makes a solution worse:
//!
//! ```
//! use keel_workloads::farm::Material;
//! let problem = Material::new(4, 20, 16, 1000, 10, vec![1, 4], 7);
//! let pool = problem.initial();
//! assert_eq!(pool.len(), 4);
//! assert_eq!(problem.cost_of(1), 4);
//! let better = problem.improve(1, pool[0].clone());
//! assert!(better.waste <= pool[0].waste);
//! assert_eq!(better.waste, problem.waste(&better.order));
//! assert_eq!(better.generation, pool[0].generation + 1);
//! ```

use keel_policy::Spec;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::WorkloadError;
use crate::params::count;

/// A candidate cutting order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    /// Which initial solution it descends from.
    pub id: u64,
    /// How many improvements it has been through.
    pub generation: u32,
    /// Piece indices in cutting order.
    pub order: Vec<u16>,
    /// Its waste.
    pub waste: u64,
}

/// The optimisation problem and its farm parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Material {
    /// Initial solutions in the pool.
    pub pool: usize,
    /// Tasks to issue in all (the initial pool included).
    pub tasks: usize,
    /// Length of a bar.
    pub stock: u32,
    /// Local-search moves per unit of strategy cost.
    pub effort: u32,
    /// Strategy cost of each worker (cycled over the workers).
    pub costs: Vec<u32>,
    /// Seed of the pieces and the initial orders.
    pub seed: u64,
    lengths: Vec<u32>,
}

impl Default for Material {
    /// A pool of 16, 1,000 tasks, 64 pieces, bars of 1,000, 400 moves per
    /// cost unit, strategy costs 1 and 4, seed 2013.
    fn default() -> Self {
        Material::new(16, 1000, 64, 1000, 400, vec![1, 4], 2013)
    }
}

impl Material {
    /// The workload's name.
    pub const NAME: &'static str = "material";

    /// Draws the pieces.
    ///
    /// # Panics
    /// If `pieces` is 0 or above 65,536, `stock < 500`, or `costs` is empty
    /// or holds a 0; [`Material::from_spec`] reports these as errors.
    pub fn new(
        pool: usize,
        tasks: usize,
        pieces: usize,
        stock: u32,
        effort: u32,
        costs: Vec<u32>,
        seed: u64,
    ) -> Self {
        assert!((1..=1 << 16).contains(&pieces) && stock >= 500);
        assert!(!costs.is_empty() && costs.iter().all(|&c| c > 0));
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let lengths = (0..pieces).map(|_| rng.gen_range(50..=500)).collect();
        Material {
            pool,
            tasks,
            stock,
            effort,
            costs,
            seed,
            lengths,
        }
    }

    /// `material[:pool=16,tasks=1000,pieces=64,stock=1000,effort=400,costs=1/4,seed=2013]`
    /// (`costs` separated by `/`).
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "pool", "tasks", "pieces", "stock", "effort", "costs", "seed",
        ])?;
        let d = Material::default();
        let costs = match spec.token("costs")? {
            None => d.costs.clone(),
            Some(text) => text
                .split('/')
                .map(|c| c.trim().parse::<u32>().ok().filter(|&c| c > 0))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| {
                    spec.invalid(
                        "costs",
                        text,
                        "positive integers separated by `/`, e.g. 1/4",
                    )
                })?,
        };
        Ok(Material::new(
            count(spec, "pool", d.pool, 1, 1 << 20)?,
            count(spec, "tasks", d.tasks, 0, usize::MAX)?,
            count(spec, "pieces", d.lengths.len(), 1, 1 << 16)?,
            count(spec, "stock", d.stock as usize, 500, u32::MAX as usize)? as u32,
            count(spec, "effort", d.effort as usize, 1, 1 << 24)? as u32,
            costs,
            spec.parsed::<u64>("seed", "an integer >= 0")?
                .unwrap_or(d.seed),
        ))
    }

    /// The spec that rebuilds this workload.
    pub fn spec(&self) -> String {
        let costs: Vec<String> = self.costs.iter().map(u32::to_string).collect();
        format!(
            "material:pool={},tasks={},pieces={},stock={},effort={},costs={},seed={}",
            self.pool,
            self.tasks,
            self.lengths.len(),
            self.stock,
            self.effort,
            costs.join("/"),
            self.seed
        )
    }

    /// The piece lengths.
    pub fn lengths(&self) -> &[u32] {
        &self.lengths
    }

    /// The waste of cutting `order` next-fit from bars of `stock`.
    pub fn waste(&self, order: &[u16]) -> u64 {
        let mut bars = 1u64;
        let mut left = self.stock;
        for &p in order {
            let len = self.lengths[p as usize];
            if len > left {
                bars += 1;
                left = self.stock;
            }
            left -= len;
        }
        let used: u64 = self.lengths.iter().map(|&l| l as u64).sum();
        bars * self.stock as u64 - used
    }

    /// The initial pool: `pool` random orders.
    pub fn initial(&self) -> Vec<Solution> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x5eed);
        (0..self.pool.min(self.tasks) as u64)
            .map(|id| {
                let mut order: Vec<u16> = (0..self.lengths.len() as u16).collect();
                order.shuffle(&mut rng);
                let waste = self.waste(&order);
                Solution {
                    id,
                    generation: 0,
                    order,
                    waste,
                }
            })
            .collect()
    }

    /// The strategy cost of worker `worker`.
    pub fn cost_of(&self, worker: usize) -> u32 {
        self.costs[worker % self.costs.len()]
    }

    /// One task: worker `worker`'s strategy applied to `s`.
    pub fn improve(&self, worker: usize, mut s: Solution) -> Solution {
        let moves = self.effort as u64 * self.cost_of(worker) as u64;
        let mut rng = ChaCha8Rng::seed_from_u64(
            self.seed ^ s.id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((s.generation as u64) << 40),
        );
        let n = s.order.len();
        for _ in 0..moves {
            let (i, j) = (rng.gen_range(0..n), rng.gen_range(0..n));
            s.order.swap(i, j);
            let w = self.waste(&s.order);
            if w <= s.waste {
                s.waste = w;
            } else {
                s.order.swap(i, j);
            }
        }
        s.generation += 1;
        s
    }

    /// A fresh search over this problem for the collector.
    pub fn search(&self) -> Search {
        Search {
            issued: self.pool.min(self.tasks),
            budget: self.tasks,
            best: u64::MAX,
        }
    }
}

/// The collector's state: the budget and the best waste so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    /// Tasks issued so far (the initial pool included).
    pub issued: usize,
    /// Tasks to issue in all.
    pub budget: usize,
    /// The best waste seen.
    pub best: u64,
}

impl Search {
    /// Takes a result; returns it as the next task while the budget lasts.
    pub fn collect(&mut self, s: Solution) -> Option<Solution> {
        self.best = self.best.min(s.waste);
        (self.issued < self.budget).then(|| {
            self.issued += 1;
            s
        })
    }
}
