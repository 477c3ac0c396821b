//! The JSON trace format (see the module docs of [`super`]).

use keel_policy::NO_PU;
use serde::Deserialize;

use super::{
    valid_load, valid_speed, PuFields, Sourced, TaskFields, ID_EXPECTED, JSON_PU_EXPECTED,
    LOAD_EXPECTED, SPEED_EXPECTED,
};
use crate::error::TraceError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTrace {
    task_loads: Vec<f64>,
    pu_loads: Option<Vec<f64>>,
    pu_speeds: Option<Vec<f64>>,
    pu_available: Option<Vec<bool>>,
    migratable: Option<Vec<bool>>,
    current_mapping: Option<Vec<Option<usize>>>,
    task_ids: Option<Vec<String>>,
    num_pus: Option<usize>,
}

/// Parses a JSON trace; values are checked here so errors can name the field.
pub(super) fn parse(name: &str, bytes: &[u8]) -> Result<(TaskFields, PuFields), TraceError> {
    // serde_json's messages carry the line and column; it rejects NaN and
    // out-of-range numbers itself, since JSON cannot spell them.
    let trace: JsonTrace = serde_json::from_slice(bytes).map_err(|e| TraceError::Syntax {
        at: name.to_string(),
        message: e.to_string(),
    })?;
    check(
        name,
        "task_loads",
        &trace.task_loads,
        valid_load,
        LOAD_EXPECTED,
    )?;
    if let Some(loads) = &trace.pu_loads {
        check(name, "pu_loads", loads, valid_load, LOAD_EXPECTED)?;
    }
    if let Some(speeds) = &trace.pu_speeds {
        check(name, "pu_speeds", speeds, valid_speed, SPEED_EXPECTED)?;
    }
    let ntasks = trace.task_loads.len();
    let per_task = |field: &'static str, found: usize| {
        if found == ntasks {
            Ok(())
        } else {
            Err(TraceError::LengthMismatch {
                at: name.to_string(),
                field,
                found,
                expected: ntasks,
            })
        }
    };
    if let Some(m) = &trace.migratable {
        per_task("migratable", m.len())?;
    }
    if let Some(ids) = &trace.task_ids {
        per_task("task_ids", ids.len())?;
        if let Some(i) = ids.iter().position(|id| id.trim().is_empty()) {
            return Err(TraceError::BadValue {
                at: name.to_string(),
                field: format!("task_ids[{i}]"),
                value: ids[i].clone(),
                expected: ID_EXPECTED,
            });
        }
    }
    if let Some(c) = &trace.current_mapping {
        per_task("current_mapping", c.len())?;
        // `null` is how JSON says "unplaced"; the number that the library
        // uses for it internally is refused, as the CSV reader refuses it.
        if let Some(i) = c.iter().position(|&p| p == Some(NO_PU)) {
            return Err(TraceError::BadValue {
                at: name.to_string(),
                field: format!("current_mapping[{i}]"),
                value: NO_PU.to_string(),
                expected: JSON_PU_EXPECTED,
            });
        }
    }

    let mut pus = PuFields::default();
    let sourced = |field: &str| format!("{field} in {name}");
    if let Some(n) = trace.num_pus {
        pus.counts.push((sourced("num_pus"), n));
    }
    if let Some(values) = trace.pu_loads {
        pus.counts.push((sourced("pu_loads"), values.len()));
        pus.background = Some(Sourced {
            values,
            source: sourced("pu_loads"),
        });
    }
    if let Some(values) = trace.pu_speeds {
        pus.counts.push((sourced("pu_speeds"), values.len()));
        pus.speed = Some(Sourced {
            values,
            source: sourced("pu_speeds"),
        });
    }
    if let Some(values) = trace.pu_available {
        pus.counts.push((sourced("pu_available"), values.len()));
        pus.available = Some(Sourced {
            values,
            source: sourced("pu_available"),
        });
    }
    let tasks = TaskFields {
        loads: trace.task_loads,
        migratable: trace.migratable,
        current: trace
            .current_mapping
            .map(|c| c.into_iter().map(|p| p.unwrap_or(NO_PU)).collect()),
        ids: trace.task_ids,
        lines: None,
    };
    Ok((tasks, pus))
}

fn check(
    name: &str,
    field: &str,
    values: &[f64],
    valid: fn(f64) -> bool,
    expected: &'static str,
) -> Result<(), TraceError> {
    match values.iter().position(|&v| !valid(v)) {
        None => Ok(()),
        Some(i) => Err(TraceError::BadValue {
            at: name.to_string(),
            field: format!("{field}[{i}]"),
            value: keel_policy::error::compact(values[i]),
            expected,
        }),
    }
}
