//! Loop traces in: the user's own per-iteration (or per-task) costs, one
//! loop instance or many over time steps, as CSV or JSON. The formats are
//! documented in the crate's `README.md`; in short:
//!
//! ```text
//! # CSV: a header naming the columns, then one row per iteration.
//! step,loop,cost_us
//! 0,density,1.5
//! 0,density,2.25
//! 1,density,1.75
//! ```
//!
//! ```json
//! {"unit": "us", "instances": [{"step": 0, "loop": "density", "costs": [1.5, 2.25]}]}
//! ```
//!
//! In CSV, rows of one instance (one `(step, loop)` pair) are contiguous
//! and in iteration order, and steps never decrease; in JSON, instances run
//! in list order. Every error names its line (and
//! for JSON its column): what is wrong and what is valid.
//!
//! The CSV above, parsed: one instance per step and loop, costs in seconds.
//!
//! ```
//! use keel_sim::trace::parse_csv;
//! let trace = parse_csv("step,loop,cost_us\n0,density,1.5\n0,density,2.25\n1,density,1.75\n").unwrap();
//! assert_eq!(trace.instances.len(), 2);
//! assert_eq!(trace.instances[0].loop_name, "density");
//! assert_eq!(trace.instances[0].costs, vec![1.5e-6, 2.25e-6]);
//! assert_eq!(trace.iterations(), 3);
//! ```

use std::path::Path;

use serde::de::{self, Deserializer};
use serde::Deserialize;
use thiserror::Error;

use crate::error::SimError;
use crate::loops::IterationCosts;

/// The loop name of rows and instances that give none.
pub const DEFAULT_LOOP: &str = "loop";

/// A bad trace, with where and why.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TraceError {
    /// The file could not be read.
    #[error("cannot read trace `{path}`: {message}")]
    Io {
        /// The path.
        path: String,
        /// The system's message.
        message: String,
    },
    /// The file's extension is neither `.csv` nor `.json`.
    #[error("trace `{path}`: unknown format; expected a .csv or .json file")]
    UnknownFormat {
        /// The path.
        path: String,
    },
    /// A CSV trace without a header line.
    #[error("line {line}: expected a header naming the columns, e.g. `step,loop,cost`")]
    MissingHeader {
        /// The line (1-based) where the header should be.
        line: usize,
    },
    /// A CSV header that is not usable.
    #[error("line {line}: {problem}")]
    BadHeader {
        /// The line (1-based).
        line: usize,
        /// What is wrong, and what is valid.
        problem: String,
    },
    /// A CSV field that does not parse or is out of range.
    #[error("line {line}: column `{column}`: `{value}` is not {expected}")]
    BadField {
        /// The line (1-based).
        line: usize,
        /// The column's name.
        column: String,
        /// The field as written.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },
    /// A CSV row with the wrong number of fields.
    #[error("line {line}: {found} fields, but the header has {expected}")]
    FieldCount {
        /// The line (1-based).
        line: usize,
        /// Fields in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// Rows out of order: a step that decreases, an instance split in two,
    /// an iteration number out of sequence.
    #[error("line {line}: {problem}")]
    Order {
        /// The line (1-based).
        line: usize,
        /// What is out of order.
        problem: String,
    },
    /// A JSON trace that does not parse or holds a bad value.
    #[error("line {line}, column {column}: {problem}")]
    Json {
        /// The line (1-based).
        line: usize,
        /// The column (1-based).
        column: usize,
        /// What is wrong.
        problem: String,
    },
    /// A trace with no iterations at all.
    #[error("the trace has no iterations: give at least one cost")]
    Empty,
}

/// The unit of the costs in a trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Seconds.
    #[default]
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

impl Unit {
    /// Seconds per unit.
    pub fn seconds(self) -> f64 {
        match self {
            Unit::S => 1.0,
            Unit::Ms => 1e-3,
            Unit::Us => 1e-6,
            Unit::Ns => 1e-9,
        }
    }
}

/// One loop instance of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceInstance {
    /// Its time step.
    pub step: u64,
    /// Its loop's name (instances of one name are one loop).
    pub loop_name: String,
    /// Per-iteration costs, in seconds.
    pub costs: Vec<f64>,
}

impl TraceInstance {
    /// The costs as the simulator takes them.
    pub fn iteration_costs(&self) -> Result<IterationCosts, SimError> {
        IterationCosts::new(&self.costs)
    }
}

/// A trace: loop instances in program order.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopTrace {
    /// The instances, steps non-decreasing.
    pub instances: Vec<TraceInstance>,
}

impl LoopTrace {
    /// Total iterations over every instance.
    pub fn iterations(&self) -> usize {
        self.instances.iter().map(|i| i.costs.len()).sum()
    }
}

/// Reads a `.csv` or `.json` trace.
pub fn read_trace(path: &Path) -> Result<LoopTrace, TraceError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::Io {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
    {
        Some(e) if e == "csv" => parse_csv(&text),
        Some(e) if e == "json" => parse_json(&text),
        _ => Err(TraceError::UnknownFormat { path: shown }),
    }
}

/// Where each CSV column is.
struct Columns {
    count: usize,
    cost: usize,
    unit: Unit,
    step: Option<usize>,
    name: Option<usize>,
    iteration: Option<usize>,
}

fn header(line: usize, text: &str) -> Result<Columns, TraceError> {
    let names: Vec<String> = text
        .split(',')
        .map(|f| f.trim().to_ascii_lowercase())
        .collect();
    let bad = |problem: String| TraceError::BadHeader { line, problem };
    let find = |name: &str| -> Result<Option<usize>, TraceError> {
        let mut at = names.iter().enumerate().filter(|(_, n)| *n == name);
        match (at.next(), at.next()) {
            (None, _) => Ok(None),
            (Some((i, _)), None) => Ok(Some(i)),
            (Some(_), Some(_)) => Err(bad(format!("column `{name}` appears twice"))),
        }
    };
    const COSTS: [(&str, Unit); 4] = [
        ("cost", Unit::S),
        ("cost_ms", Unit::Ms),
        ("cost_us", Unit::Us),
        ("cost_ns", Unit::Ns),
    ];
    let mut cost = None;
    for (name, unit) in COSTS {
        if let Some(i) = find(name)? {
            if cost.is_some() {
                return Err(bad("more than one cost column; give exactly one of cost, cost_ms, cost_us, cost_ns".into()));
            }
            cost = Some((i, unit));
        }
    }
    let Some((cost, unit)) = cost else {
        return Err(bad(format!(
            "no cost column in `{text}`; expected one of cost (seconds), cost_ms, cost_us, cost_ns"
        )));
    };
    const KNOWN: [&str; 7] = [
        "step",
        "loop",
        "iteration",
        "cost",
        "cost_ms",
        "cost_us",
        "cost_ns",
    ];
    if let Some(unknown) = names.iter().find(|n| !KNOWN.contains(&n.as_str())) {
        return Err(bad(format!(
            "unknown column `{unknown}`; valid columns: {}",
            KNOWN.join(", ")
        )));
    }
    Ok(Columns {
        count: names.len(),
        cost,
        unit,
        step: find("step")?,
        name: find("loop")?,
        iteration: find("iteration")?,
    })
}

/// Parses a CSV trace (see the module docs and `README.md`).
pub fn parse_csv(text: &str) -> Result<LoopTrace, TraceError> {
    let mut columns: Option<Columns> = None;
    let mut instances: Vec<TraceInstance> = Vec::new();
    // Line where the current instance started, to name it in errors.
    let mut closed: Vec<(u64, String)> = Vec::new();
    let mut last_line = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        last_line = line;
        let row = raw.trim();
        if row.is_empty() || row.starts_with('#') {
            continue;
        }
        let Some(cols) = &columns else {
            columns = Some(header(line, row)?);
            continue;
        };
        let fields: Vec<&str> = row.split(',').map(str::trim).collect();
        if fields.len() != cols.count {
            return Err(TraceError::FieldCount {
                line,
                expected: cols.count,
                found: fields.len(),
            });
        }
        let field_error = |column: &str, value: &str, expected| TraceError::BadField {
            line,
            column: column.to_string(),
            value: value.to_string(),
            expected,
        };
        let cost_text = fields[cols.cost];
        let cost = cost_text
            .parse::<f64>()
            .ok()
            .map(|c| c * cols.unit.seconds())
            .filter(|c| c.is_finite() && *c >= 0.0)
            .ok_or_else(|| field_error("cost", cost_text, "a finite number ≥ 0"))?;
        let step = match cols.step {
            None => 0,
            Some(i) => fields[i]
                .parse::<u64>()
                .map_err(|_| field_error("step", fields[i], "an integer ≥ 0"))?,
        };
        let name = match cols.name {
            None => DEFAULT_LOOP,
            Some(i) if fields[i].is_empty() || fields[i].contains('"') => {
                return Err(field_error(
                    "loop",
                    fields[i],
                    "a non-empty name without quotes",
                ))
            }
            Some(i) => fields[i],
        };
        let same =
            matches!(instances.last(), Some(cur) if cur.step == step && cur.loop_name == name);
        if !same {
            if let Some(cur) = instances.last() {
                if step < cur.step {
                    return Err(TraceError::Order {
                        line,
                        problem: format!(
                            "step {step} after step {}: steps must not decrease",
                            cur.step
                        ),
                    });
                }
                closed.push((cur.step, cur.loop_name.clone()));
            }
            if closed.iter().any(|(s, n)| *s == step && n == name) {
                return Err(TraceError::Order {
                    line,
                    problem: format!(
                        "loop `{name}` of step {step} appears again: an instance's rows must be contiguous"
                    ),
                });
            }
            instances.push(TraceInstance {
                step,
                loop_name: name.to_string(),
                costs: Vec::new(),
            });
        }
        let current = instances.last_mut().expect("pushed above");
        if let Some(i) = cols.iteration {
            let expected = current.costs.len() as u64;
            match fields[i].parse::<u64>() {
                Ok(k) if k == expected => {}
                Ok(k) => {
                    return Err(TraceError::Order {
                        line,
                        problem: format!(
                            "iteration {k} where {expected} was expected: iterations count 0, 1, 2, … within each instance"
                        ),
                    })
                }
                Err(_) => return Err(field_error("iteration", fields[i], "an integer ≥ 0")),
            }
        }
        current.costs.push(cost);
    }
    if columns.is_none() {
        return Err(TraceError::MissingHeader {
            line: last_line.max(1),
        });
    }
    finish(instances)
}

fn finish(instances: Vec<TraceInstance>) -> Result<LoopTrace, TraceError> {
    let trace = LoopTrace { instances };
    if trace.iterations() == 0 {
        return Err(TraceError::Empty);
    }
    Ok(trace)
}

/// A cost, checked while it is parsed so that serde_json names its line.
struct Cost(f64);

impl<'de> Deserialize<'de> for Cost {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && v >= 0.0 {
            Ok(Cost(v))
        } else {
            Err(de::Error::custom(format!(
                "cost {v} is not a finite number ≥ 0"
            )))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstance {
    #[serde(default)]
    step: u64,
    #[serde(default, rename = "loop", deserialize_with = "loop_name")]
    loop_name: Option<String>,
    #[serde(deserialize_with = "nonempty_costs")]
    costs: Vec<Cost>,
}

/// Checked where the list ends, so that serde_json names that line.
fn nonempty_costs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Cost>, D::Error> {
    let costs = Vec::<Cost>::deserialize(d)?;
    if costs.is_empty() {
        return Err(de::Error::custom(
            "an instance with no costs: give at least one",
        ));
    }
    Ok(costs)
}

fn loop_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    if name.is_empty() {
        return Err(de::Error::custom("an empty loop name"));
    }
    Ok(Some(name))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    #[serde(default)]
    unit: Unit,
    costs: Option<Vec<Cost>>,
    instances: Option<Vec<RawInstance>>,
}

/// Parses a JSON trace: `{"unit": "us", "costs": [...]}` for one instance,
/// or `{"unit": "us", "instances": [{"step": 0, "loop": "l", "costs": [...]}]}`.
pub fn parse_json(text: &str) -> Result<LoopTrace, TraceError> {
    let raw: RawTrace = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let problem = match message.find(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        TraceError::Json {
            line: e.line(),
            column: e.column(),
            problem,
        }
    })?;
    let scale = raw.unit.seconds();
    let convert = |costs: Vec<Cost>| costs.into_iter().map(|c| c.0 * scale).collect();
    let instances = match (raw.costs, raw.instances) {
        (Some(costs), None) => vec![TraceInstance {
            step: 0,
            loop_name: DEFAULT_LOOP.to_string(),
            costs: convert(costs),
        }],
        // Program order is the list's order; steps label the instances.
        (None, Some(list)) => list
            .into_iter()
            .map(|f| TraceInstance {
                step: f.step,
                loop_name: f.loop_name.unwrap_or_else(|| DEFAULT_LOOP.to_string()),
                costs: convert(f.costs),
            })
            .collect(),
        _ => {
            return Err(TraceError::Json {
                line: 1,
                column: 1,
                problem: "give exactly one of `costs` (one instance) or `instances`".into(),
            })
        }
    };
    finish(instances)
}
