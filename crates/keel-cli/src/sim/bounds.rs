//! Bounds on `keel sim`'s numeric options, checked where the value enters
//! (clap `value_parser`s), each refusal naming the option's valid range or
//! the limit it crossed. The simulator checks the same limits again for
//! library callers; these give the option's name and fail before any work.

use keel_sim::cluster::{MAX_QUANTUM, MIN_QUANTUM};

/// The largest `--scale` of `sim cosched`: 1,000 × the paper's iterations.
/// The simulator's own work limit
/// ([`keel_sim::cluster::MAX_PROCESS_ITERATIONS`]) refuses the largest
/// scenarios well before this; past it every scenario is refused.
pub const MAX_SCALE: f64 = 1000.0;

/// The longest cost in seconds an option may give (latency, context
/// switch, wake-up): one hour, as the longest time quantum.
pub const MAX_COST_S: f64 = MAX_QUANTUM;

/// A number as a person reads it (`f64`'s `Display` writes all 309 digits
/// of `f64::MAX`).
pub fn shown(x: f64) -> String {
    keel_sim::error::shown(x.to_string())
}

fn number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| format!("`{text}` is not a number"))
}

/// A count of at least 1 (`--reps`, `--tasks`, `--workers`).
pub fn count(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// A coefficient of variation: finite and ≥ 0 (0 = no noise).
pub fn cv(text: &str) -> Result<f64, String> {
    let x = number(text)?;
    if !(x.is_finite() && x >= 0.0) {
        return Err(format!("{} is not a finite number ≥ 0", shown(x)));
    }
    Ok(x)
}

/// A time quantum in seconds (OS tick, OS quantum, granularity): in
/// [`MIN_QUANTUM`, `MAX_QUANTUM`].
pub fn quantum(text: &str) -> Result<f64, String> {
    let x = number(text)?;
    if !(x.is_finite() && (MIN_QUANTUM..=MAX_QUANTUM).contains(&x)) {
        return Err(format!(
            "{} s is outside the simulator's time quanta, MIN_QUANTUM = {MIN_QUANTUM} s to MAX_QUANTUM = {MAX_QUANTUM} s",
            shown(x)
        ));
    }
    Ok(x)
}

/// A cost in seconds: finite, ≥ 0 and at most [`MAX_COST_S`].
pub fn cost(text: &str) -> Result<f64, String> {
    let x = number(text)?;
    if !(x.is_finite() && (0.0..=MAX_COST_S).contains(&x)) {
        return Err(format!(
            "{} s is not a cost from 0 to {MAX_COST_S} s",
            shown(x)
        ));
    }
    Ok(x)
}

/// `sim cosched --scale`: finite, > 0 and at most [`MAX_SCALE`].
pub fn scale(text: &str) -> Result<f64, String> {
    let x = number(text)?;
    if !(x.is_finite() && x > 0.0 && x <= MAX_SCALE) {
        return Err(format!(
            "{} is not a scale > 0 and ≤ MAX_SCALE = {MAX_SCALE}",
            shown(x)
        ));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_refuse_nonsense_and_name_the_limit() {
        assert_eq!(count("3"), Ok(3));
        assert!(count("0").unwrap_err().contains("at least 1"));
        assert!(count("-1").is_err());
        assert_eq!(cv("0"), Ok(0.0));
        for bad in ["NaN", "-5", "inf"] {
            assert!(cv(bad).is_err(), "{bad}");
        }
        assert!(quantum("1e-12").unwrap_err().contains("MIN_QUANTUM"));
        assert!(quantum("0.0005").is_ok());
        assert!(scale("1e12").unwrap_err().contains("MAX_SCALE = 1000"));
        let huge = scale("1.7976931348623157e308").unwrap_err();
        assert!(huge.len() < 100, "{huge}");
        assert!(cost("NaN").is_err() && cost("0").is_ok());
    }
}
