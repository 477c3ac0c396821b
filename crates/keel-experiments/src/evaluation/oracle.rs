//! The yardsticks of the paper's evaluation (§4, Table 3): **ManualBest**,
//! the best fixed schedule of each loop found after the fact, and
//! **Oracle**, the best schedule of every loop instance found after the
//! fact, both from a table of measured times `[schedule][instance]` (the
//! medians of repeated runs of every fixed schedule); and the
//! **% degradation** of any run against Oracle, `(T / T_oracle − 1)·100`.
//!
//! An application has several loops; its ManualBest and Oracle are the sums
//! of its loops' ([`manual_best_total`], [`oracle_total`]).
//!
//! Two schedules over two instances: each is best once, so Oracle beats either:
//!
//! ```
//! use keel_experiments::evaluation::oracle::{degradation_percent, LoopTimes};
//! let times = LoopTimes::new(&[vec![1.0, 3.0], vec![2.0, 1.0]]).unwrap();
//! assert_eq!(times.manual_best(), (1, 3.0));
//! assert_eq!(times.oracle_choices(), vec![0, 1]);
//! assert_eq!(times.oracle(), 2.0);
//! assert_eq!(degradation_percent(times.manual_best().1, times.oracle()), 50.0);
//! ```

use serde::Serialize;

use keel_policy::stats::median as median_in_place;
use keel_policy::PolicyError;

/// Measured times of one loop: `time(schedule, instance)` in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopTimes {
    schedules: usize,
    instances: usize,
    /// Row-major: schedule `s`'s instances at `s·instances ..`.
    times: Vec<f64>,
}

fn check_time(value: f64, index: usize) -> Result<f64, PolicyError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(PolicyError::InvalidNumber {
            what: "measured time",
            index,
            value,
            expected: "a finite number of seconds >= 0",
        })
    }
}

fn shape_error(key: &str, value: usize, expected: String) -> PolicyError {
    PolicyError::InvalidParameter {
        policy: "oracle".to_string(),
        key: key.to_string(),
        value: value.to_string(),
        expected,
    }
}

/// Checks that every table has the first one's shape (and that there is
/// one).
fn same_shape(tables: &[LoopTimes]) -> Result<(), PolicyError> {
    let first = tables
        .first()
        .ok_or_else(|| shape_error("repeats", 0, "at least one repeat".into()))?;
    for t in tables {
        if (t.schedules, t.instances) != (first.schedules, first.instances) {
            return Err(shape_error(
                "instances",
                t.schedules * t.instances,
                format!(
                    "every repeat with {} schedules × {} instances",
                    first.schedules, first.instances
                ),
            ));
        }
    }
    Ok(())
}

/// The element-wise median of `tables`, non-empty and of one shape.
fn elementwise_median(tables: &[&LoopTimes]) -> LoopTimes {
    let mut column = vec![0.0; tables.len()];
    let times = (0..tables[0].times.len())
        .map(|i| {
            for (c, t) in column.iter_mut().zip(tables) {
                *c = t.times[i];
            }
            median_in_place(&mut column)
        })
        .collect();
    LoopTimes {
        times,
        ..tables[0].clone()
    }
}

impl LoopTimes {
    /// From rows `times[schedule][instance]`: at least one schedule and one
    /// instance, every row the same length, every time finite and `>= 0`.
    pub fn new(times: &[Vec<f64>]) -> Result<Self, PolicyError> {
        let schedules = times.len();
        if schedules == 0 {
            return Err(shape_error("schedules", 0, "at least one schedule".into()));
        }
        let instances = times[0].len();
        if instances == 0 {
            return Err(shape_error("instances", 0, "at least one instance".into()));
        }
        let mut flat = Vec::with_capacity(schedules * instances);
        for row in times {
            if row.len() != instances {
                return Err(shape_error(
                    "instances",
                    row.len(),
                    format!("{instances} instances for every schedule"),
                ));
            }
            for &t in row {
                flat.push(check_time(t, flat.len())?);
            }
        }
        Ok(LoopTimes {
            schedules,
            instances,
            times: flat,
        })
    }

    /// The element-wise median of repeated runs: `repeats[r][schedule][instance]`.
    pub fn from_repeats(repeats: &[Vec<Vec<f64>>]) -> Result<Self, PolicyError> {
        let tables = repeats
            .iter()
            .map(|r| LoopTimes::new(r))
            .collect::<Result<Vec<_>, _>>()?;
        same_shape(&tables)?;
        Ok(elementwise_median(&tables.iter().collect::<Vec<_>>()))
    }

    /// Number of schedules (rows).
    pub fn schedules(&self) -> usize {
        self.schedules
    }

    /// Number of instances (columns).
    pub fn instances(&self) -> usize {
        self.instances
    }

    /// The time of `schedule` at `instance`.
    pub fn time(&self, schedule: usize, instance: usize) -> f64 {
        self.times[schedule * self.instances + instance]
    }

    /// Total time of `schedule` over every instance.
    pub fn total(&self, schedule: usize) -> f64 {
        self.times[schedule * self.instances..(schedule + 1) * self.instances]
            .iter()
            .sum()
    }

    /// ManualBest: the fixed schedule with the smallest total, and that
    /// total (the lowest index on ties).
    pub fn manual_best(&self) -> (usize, f64) {
        (0..self.schedules)
            .map(|s| (s, self.total(s)))
            .fold(
                (0, f64::INFINITY),
                |best, x| if x.1 < best.1 { x } else { best },
            )
    }

    /// Oracle's choice per instance (the lowest index on ties).
    pub fn oracle_choices(&self) -> Vec<usize> {
        (0..self.instances)
            .map(|k| {
                (0..self.schedules)
                    .fold((0, f64::INFINITY), |best, s| {
                        let t = self.time(s, k);
                        if t < best.1 {
                            (s, t)
                        } else {
                            best
                        }
                    })
                    .0
            })
            .collect()
    }

    /// Oracle: the sum over instances of the fastest schedule's time.
    pub fn oracle(&self) -> f64 {
        self.oracle_choices()
            .iter()
            .enumerate()
            .map(|(k, &s)| self.time(s, k))
            .sum()
    }

    /// What a per-instance sequence of choices would take according to the
    /// table (a selection method replayed offline). The sequence must have
    /// one valid schedule per instance.
    pub fn replay(&self, choices: &[usize]) -> Result<f64, PolicyError> {
        if choices.len() != self.instances {
            return Err(shape_error(
                "choices",
                choices.len(),
                format!("one choice per instance ({})", self.instances),
            ));
        }
        choices
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                if s < self.schedules {
                    Ok(self.time(s, k))
                } else {
                    Err(shape_error(
                        "schedule",
                        s,
                        format!("a schedule index below {}", self.schedules),
                    ))
                }
            })
            .sum()
    }
}

/// Oracle **held out**: per instance, the time of Oracle's choice made
/// without the run that times it. For each repeat `r` of
/// `repeats[r][schedule][instance]`, Oracle chooses each instance's
/// schedule from the medians of the *other* repeats and the choice is timed
/// in repeat `r`; each instance's time is then the median over `r` of those
/// times (as every configuration's is over its repeats). `None` with fewer
/// than two repeats.
///
/// Oracle proper times each choice in the very medians it chose it from,
/// so with `S` schedules whose per-instance times differ by noise it picks
/// the luckiest of `S` draws at every instance: a lead that no run can
/// repeat. The held-out version keeps the clairvoyance (the best schedule
/// per instance, known from other runs) and drops that selection bias; the
/// difference between the two measures how much of Oracle is luck.
pub fn held_out_oracle(repeats: &[Vec<Vec<f64>>]) -> Result<Option<Vec<f64>>, PolicyError> {
    let tables = repeats
        .iter()
        .map(|r| LoopTimes::new(r))
        .collect::<Result<Vec<_>, _>>()?;
    same_shape(&tables)?;
    if tables.len() < 2 {
        return Ok(None);
    }
    let instances = tables[0].instances;
    let mut per_fold = vec![vec![0.0; tables.len()]; instances];
    for (r, held) in tables.iter().enumerate() {
        let others: Vec<&LoopTimes> = tables
            .iter()
            .enumerate()
            .filter(|&(q, _)| q != r)
            .map(|(_, t)| t)
            .collect();
        let chooser = elementwise_median(&others);
        for (k, s) in chooser.oracle_choices().into_iter().enumerate() {
            per_fold[k][r] = held.time(s, k);
        }
    }
    Ok(Some(
        per_fold
            .iter_mut()
            .map(|times| median_in_place(times))
            .collect(),
    ))
}

/// ManualBest of an application: each loop's best fixed schedule.
pub fn manual_best_total(loops: &[LoopTimes]) -> f64 {
    loops.iter().map(|l| l.manual_best().1).sum()
}

/// Oracle of an application: each loop instance's best schedule.
pub fn oracle_total(loops: &[LoopTimes]) -> f64 {
    loops.iter().map(LoopTimes::oracle).sum()
}

/// `(time / oracle − 1)·100`: how much slower than Oracle, in percent
/// (0 for Oracle itself; NaN if `oracle` is not positive).
pub fn degradation_percent(time: f64, oracle: f64) -> f64 {
    if oracle > 0.0 {
        (time / oracle - 1.0) * 100.0
    } else {
        f64::NAN
    }
}

/// A Table-3-style report: one row per method or schedule, one column per
/// workload, each cell the % degradation against that workload's Oracle.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DegradationTable {
    /// Column names (workloads), in order of first use.
    pub workloads: Vec<String>,
    /// Row names (methods, schedules), in order of first use.
    pub rows: Vec<String>,
    /// `cells[row][workload]`: % degradation, `None` where not measured.
    pub cells: Vec<Vec<Option<f64>>>,
}

impl DegradationTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `row`'s total `time` on `workload`, whose Oracle is `oracle`.
    pub fn add(&mut self, row: &str, workload: &str, time: f64, oracle: f64) {
        let w = match self.workloads.iter().position(|x| x == workload) {
            Some(w) => w,
            None => {
                self.workloads.push(workload.to_string());
                for cells in &mut self.cells {
                    cells.push(None);
                }
                self.workloads.len() - 1
            }
        };
        let r = match self.rows.iter().position(|x| x == row) {
            Some(r) => r,
            None => {
                self.rows.push(row.to_string());
                self.cells.push(vec![None; self.workloads.len()]);
                self.rows.len() - 1
            }
        };
        self.cells[r][w] = Some(degradation_percent(time, oracle));
    }

    /// The cell of `row` on `workload`.
    pub fn get(&self, row: &str, workload: &str) -> Option<f64> {
        let r = self.rows.iter().position(|x| x == row)?;
        let w = self.workloads.iter().position(|x| x == workload)?;
        self.cells[r][w]
    }

    /// A plain-text table, degradations with two decimals, `-` where missing.
    pub fn render(&self) -> String {
        let name_width = self.rows.iter().map(String::len).max().unwrap_or(0).max(6);
        let widths: Vec<usize> = self.workloads.iter().map(|w| w.len().max(8)).collect();
        let mut out = format!("{:name_width$}", "% vs Oracle");
        for (w, width) in self.workloads.iter().zip(&widths) {
            out.push_str(&format!("  {w:>width$}"));
        }
        out.push('\n');
        for (row, cells) in self.rows.iter().zip(&self.cells) {
            out.push_str(&format!("{row:name_width$}"));
            for (cell, width) in cells.iter().zip(&widths) {
                match cell {
                    Some(d) => out.push_str(&format!("  {d:>width$.2}")),
                    None => out.push_str(&format!("  {:>width$}", "-")),
                }
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> LoopTimes {
        LoopTimes::new(&[
            vec![1.0, 1.0, 3.0, 3.0],
            vec![2.0, 2.0, 1.0, 1.0],
            vec![1.5, 1.5, 1.5, 1.5],
        ])
        .unwrap()
    }

    #[test]
    fn manual_best_and_oracle_by_hand() {
        let t = table();
        assert_eq!(t.total(0), 8.0);
        assert_eq!(t.manual_best(), (1, 6.0));
        assert_eq!(t.oracle_choices(), vec![0, 0, 1, 1]);
        assert_eq!(t.oracle(), 4.0);
        assert_eq!(t.replay(&[0, 0, 1, 1]).unwrap(), 4.0);
        assert_eq!(t.replay(&[2, 2, 2, 2]).unwrap(), 6.0);
        assert_eq!(degradation_percent(6.0, 4.0), 50.0);
        assert_eq!(degradation_percent(4.0, 4.0), 0.0);
        assert!(degradation_percent(1.0, 0.0).is_nan());
        let loops = [t.clone(), t];
        assert_eq!(manual_best_total(&loops), 12.0);
        assert_eq!(oracle_total(&loops), 8.0);
    }

    #[test]
    fn ties_go_to_the_lowest_index() {
        let t = LoopTimes::new(&[vec![1.0, 2.0], vec![1.0, 2.0]]).unwrap();
        assert_eq!(t.manual_best(), (0, 3.0));
        assert_eq!(t.oracle_choices(), vec![0, 0]);
    }

    #[test]
    fn medians_of_repeats() {
        let r = |a: f64| vec![vec![a, 1.0], vec![2.0, a]];
        let t = LoopTimes::from_repeats(&[r(1.0), r(9.0), r(2.0)]).unwrap();
        assert_eq!(t.time(0, 0), 2.0);
        assert_eq!(t.time(1, 1), 2.0);
        assert_eq!(t.time(0, 1), 1.0);
        let even = LoopTimes::from_repeats(&[r(1.0), r(3.0)]).unwrap();
        assert_eq!(even.time(0, 0), 2.0);
    }

    #[test]
    fn held_out_oracle_by_hand() {
        // Schedule 0 looks faster at instance 0 in two of three repeats:
        // held out, two folds still choose it from the other repeats and
        // time it fast, so the held-out median agrees with Oracle proper.
        let repeats = [
            vec![vec![1.0, 5.0], vec![3.0, 4.0]],
            vec![vec![3.0, 5.0], vec![1.0, 4.0]],
            vec![vec![1.0, 5.0], vec![3.0, 4.0]],
        ];
        let proper = LoopTimes::from_repeats(&repeats).unwrap();
        assert_eq!(proper.oracle_choices(), vec![0, 1]);
        assert_eq!(proper.oracle(), 1.0 + 4.0);
        // Fold 0 chooses from repeats 1 and 2: medians 2.0 and 2.0 at
        // instance 0, a tie to schedule 0, timed 1.0 in repeat 0; fold 1
        // from 0 and 2 (schedule 0: 1.0), timed 3.0 in repeat 1; fold 2
        // from 0 and 1 (tie, schedule 0), timed 1.0. Median 1.0. Instance
        // 1: schedule 1 in every fold, 4.0.
        assert_eq!(held_out_oracle(&repeats).unwrap(), Some(vec![1.0, 4.0]));
        // Schedule 1 looks faster at instance 0 in two of three repeats:
        // Oracle proper takes its median 1.0; the folds choose 1, 0 (a
        // tie), 0 (a tie) and time 3.0 each, the schedules' true cost.
        let lucky = [
            vec![vec![1.0, 5.0], vec![3.0, 4.0]],
            vec![vec![3.0, 5.0], vec![1.0, 4.0]],
            vec![vec![3.0, 5.0], vec![1.0, 4.0]],
        ];
        assert_eq!(LoopTimes::from_repeats(&lucky).unwrap().oracle(), 1.0 + 4.0);
        assert_eq!(held_out_oracle(&lucky).unwrap(), Some(vec![3.0, 4.0]));
        assert_eq!(held_out_oracle(&repeats[..1]).unwrap(), None);
        assert!(held_out_oracle(&[]).is_err());
        let ragged = [vec![vec![1.0]], vec![vec![1.0, 2.0]]];
        assert!(held_out_oracle(&ragged).is_err());
    }

    #[test]
    fn malformed_tables_are_typed_errors() {
        assert!(LoopTimes::new(&[]).is_err());
        assert!(LoopTimes::new(&[vec![]]).is_err());
        assert!(LoopTimes::new(&[vec![1.0], vec![1.0, 2.0]]).is_err());
        let err = LoopTimes::new(&[vec![1.0, f64::NAN]]).unwrap_err();
        assert!(
            matches!(err, PolicyError::InvalidNumber { index: 1, .. }),
            "{err}"
        );
        assert!(LoopTimes::new(&[vec![-1.0]]).is_err());
        assert!(LoopTimes::from_repeats(&[]).is_err());
        let a = vec![vec![1.0]];
        let b = vec![vec![1.0, 2.0]];
        assert!(LoopTimes::from_repeats(&[a, b]).is_err());
        let t = table();
        assert!(t.replay(&[0]).is_err());
        assert!(t.replay(&[0, 0, 0, 3]).is_err());
    }

    #[test]
    fn degradation_table_fills_and_renders() {
        let mut d = DegradationTable::new();
        d.add("static", "mandelbrot", 2.32, 1.25);
        d.add("auto,keel", "mandelbrot", 1.275, 1.25);
        d.add("auto,keel", "gromacs", 1.0, 1.0);
        assert!((d.get("auto,keel", "mandelbrot").unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(d.get("static", "gromacs"), None);
        assert_eq!(d.get("auto,keel", "gromacs"), Some(0.0));
        let text = d.render();
        assert!(
            text.contains("85.60") && text.contains("2.00") && text.contains('-'),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3);
    }
}
