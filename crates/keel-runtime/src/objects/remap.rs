//! A remap: Charm++'s load-balancing step in the thread context. Gather the
//! load database into a context handler (measured times only), call the
//! registry policy, check its decision against what it was told, move the
//! objects, clear the database (the principle of persistence: each remap
//! sees only the steps since the last).

use std::time::Instant;

use keel_policy::mapping::MappingInput;
use keel_policy::{metrics, Concept, ContextHandler, Mapping, Model, Origin, Subject};

use super::{Object, Objects, ObjectsError, Rebalance};

/// The decision has one PU per object, for this many PUs.
pub(super) fn check_shape(
    spec: &str,
    mapping: &Mapping,
    objects: usize,
    pus: usize,
) -> Result<(), ObjectsError> {
    if mapping.ntasks() != objects || mapping.npus() != pus {
        return Err(ObjectsError::WrongShape {
            spec: spec.to_string(),
            tasks: mapping.ntasks(),
            pus: mapping.npus(),
            want_tasks: objects,
            want_pus: pus,
        });
    }
    Ok(())
}

impl<T: Object> Objects<'_, T> {
    /// Remaps now from the measurements since the last remap, moves the
    /// objects and clears the load database.
    pub fn rebalance(&mut self) -> Result<Rebalance, ObjectsError> {
        let began = Instant::now();
        self.requested = false;
        let mut loads = self.object_loads();
        if let Some(speeds) = &self.speeds {
            // Measured time on a PU of speed s is work / s.
            for (load, &pu) in loads.iter_mut().zip(&self.placement) {
                *load *= speeds[pu];
            }
        }
        let background = self.pu_background.clone();
        let pus = self.pus();
        let spec = self.policy_spec.clone();
        let dynamic = |subject| Concept::Workload {
            subject,
            model: Model::Dynamic,
        };
        let mut ctx = ContextHandler::new();
        ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &loads[..])
            .provide_values(dynamic(Subject::Pus), Origin::Runtime, &background[..])
            .provide_flags(
                Concept::TaskMigratable,
                Origin::Runtime,
                &self.migratable[..],
            )
            .provide_flags(
                Concept::PuAvailability,
                Origin::Runtime,
                &self.available[..],
            )
            .provide_placement(Origin::Runtime, &self.placement[..]);
        if let Some(speeds) = &self.speeds {
            ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..]);
        }
        let decided = Instant::now();
        let mapping = self
            .policy
            .map(&ctx)
            .map_err(|source| ObjectsError::Decision {
                spec: spec.clone(),
                source,
            })?;
        let decision_s = decided.elapsed().as_secs_f64();
        drop(ctx);
        check_shape(&spec, &mapping, self.len(), pus)?;
        for (object, (&from, &to)) in self.placement.iter().zip(mapping.as_slice()).enumerate() {
            if !self.migratable[object] && from != to {
                return Err(ObjectsError::MovedUnmigratable {
                    spec,
                    object,
                    from,
                    to,
                });
            }
            if !self.available[to] {
                return Err(ObjectsError::UsedUnavailablePu {
                    spec,
                    object,
                    pu: to,
                });
            }
        }
        let decision = |source| ObjectsError::Decision {
            spec: spec.clone(),
            source,
        };
        let input = MappingInput::new(&loads, &background)
            .and_then(|i| match &self.speeds {
                Some(speeds) => i.with_speeds(speeds),
                None => Ok(i),
            })
            .and_then(|i| i.with_availability(&self.available))
            .and_then(|i| i.with_current(&self.placement))
            .map_err(decision)?;
        let old = Mapping::new(self.placement.clone(), pus).map_err(decision)?;
        let lambda_before = metrics::evaluate(&input, &old).lambda;
        let lambda_after = metrics::evaluate(&input, &mapping).lambda;
        let migrations = metrics::migrations(&self.placement, mapping.as_slice());

        let moved = Instant::now();
        let placement = mapping.into_vec();
        let steals = self.tasks.expose().steals();
        let mut leaving = Vec::new();
        for state in &mut self.pus {
            let state = state.get_mut().unwrap_or_else(|e| e.into_inner());
            let mut k = 0;
            while k < state.entries.len() {
                if placement[state.entries[k].id] != self.placement[state.entries[k].id] {
                    leaving.push(state.entries.swap_remove(k));
                } else {
                    k += 1;
                }
            }
        }
        for mut entry in leaving {
            entry.load = 0.0;
            let to = placement[entry.id];
            self.pus[to]
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .entries
                .push(entry);
        }
        for state in &mut self.pus {
            let state = state.get_mut().unwrap_or_else(|e| e.into_inner());
            state.entries.sort_unstable_by_key(|e| e.id);
            // The run order a step leaves holds for the new lists too,
            // ties in id order.
            if steals {
                state.sort_for_stealing();
            }
            for e in &mut state.entries {
                e.load = 0.0;
            }
        }
        self.placement = placement;
        self.pu_background.iter_mut().for_each(|b| *b = 0.0);
        let migration_s = moved.elapsed().as_secs_f64();
        let total_s = began.elapsed().as_secs_f64();
        self.trigger.balanced(total_s);
        self.history.clear();
        Ok(Rebalance {
            step: self.step,
            policy: spec,
            migrations,
            lambda_before,
            lambda_after,
            decision_s,
            migration_s,
            total_s,
            reason: super::REQUESTED.to_string(),
        })
    }
}
