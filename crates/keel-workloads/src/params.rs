//! Typed spec parameters shared by the workload generators (`generate`)
//! and the loop workloads (`loops`): every out-of-range value is a typed
//! error that names the key and the valid range.

use keel_policy::error::compact;
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
/// `default` when absent. `f64::MIN` / `f64::MAX` (or an infinite bound)
/// mean no bound on that side, and the message says "finite" instead of
/// printing 309 digits.
pub(crate) fn number(
    spec: &Spec,
    key: &str,
    default: f64,
    (min, open_min): (f64, bool),
    max: f64,
) -> Result<f64, WorkloadError> {
    let expected = expected_range((min, open_min), max);
    match spec.parsed::<f64>(key, &expected)? {
        None => Ok(default),
        Some(v) if v.is_finite() && (v > min || (!open_min && v == min)) && v <= max => Ok(v),
        Some(v) => Err(spec.invalid(key, &compact(v), &expected).into()),
    }
}

/// What [`number`] accepts, in words, with every bound printed compactly.
fn expected_range((min, open_min): (f64, bool), max: f64) -> String {
    let lower = (open_min || min != f64::MIN) && min.is_finite();
    let upper = max != f64::MAX && max.is_finite();
    let (lo, hi) = (compact(min), compact(max));
    match (lower, open_min, upper) {
        (true, false, true) => format!("a number in {lo}..={hi}"),
        (true, true, true) => format!("a number > {lo} and <= {hi}"),
        (true, false, false) => format!("a finite number >= {lo}"),
        (true, true, false) => format!("a finite number > {lo}"),
        (false, _, true) => format!("a finite number <= {hi}"),
        (false, _, false) => "a finite number".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_never_print_a_bound_or_value_in_hundreds_of_digits() {
        assert_eq!(
            expected_range((f64::MIN, false), f64::MAX),
            "a finite number"
        );
        assert_eq!(expected_range((0.0, true), f64::MAX), "a finite number > 0");
        assert_eq!(
            expected_range((f64::MIN, false), 2.0),
            "a finite number <= 2"
        );
        assert_eq!(expected_range((-2.0, false), 0.5), "a number in -2..=0.5");
        assert_eq!(
            expected_range((1.0, true), 1e300),
            "a number > 1 and <= 1e300"
        );
        let spec: Spec = "w:x=-1e300,y=1e309".parse().unwrap();
        let err = number(&spec, "x", 0.0, (0.0, false), f64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`-1e300`") && err.contains("a finite number >= 0"),
            "{err}"
        );
        assert!(err.len() < 200, "{err}");
        let err = number(&spec, "y", 0.0, (f64::MIN, false), f64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`inf`") && err.ends_with("a finite number"),
            "{err}"
        );
    }
}
