//! Typed spec parameters shared by the workload generators (`generate`)
//! and the loop workloads (`loops`): every out-of-range value is a typed
//! error that names the key and the valid range.

use keel_policy::Spec;

use crate::error::WorkloadError;

/// An integer parameter in `min..=max`, `default` when absent.
pub(crate) fn count(
    spec: &Spec,
    key: &str,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, WorkloadError> {
    let expected = format!("an integer in {min}..={max}");
    match spec.parsed::<usize>(key, &expected)? {
        None => Ok(default),
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(v) => Err(spec.invalid(key, &v.to_string(), &expected).into()),
    }
}

/// A finite number in `min..=max` (`min` excluded when `open_min`),
/// `default` when absent.
pub(crate) fn number(
    spec: &Spec,
    key: &str,
    default: f64,
    (min, open_min): (f64, bool),
    max: f64,
) -> Result<f64, WorkloadError> {
    let expected = match (open_min, max.is_finite()) {
        (false, true) => format!("a number in {min}..={max}"),
        (true, true) => format!("a number > {min} and <= {max}"),
        (false, false) => format!("a finite number >= {min}"),
        (true, false) => format!("a finite number > {min}"),
    };
    match spec.parsed::<f64>(key, &expected)? {
        None => Ok(default),
        Some(v) if v.is_finite() && (v > min || (!open_min && v == min)) && v <= max => Ok(v),
        Some(v) => Err(spec.invalid(key, &v.to_string(), &expected).into()),
    }
}
