//! The environment as loops read it, each variable once per process and
//! only here (as OpenMP reads `OMP_SCHEDULE` once):
//!
//! - `KEEL_SCHEDULE`: the schedule of loops that set none in code; `auto`
//!   when unset or empty.
//! - `KEEL_EXPERT_CHUNK=0|1`: whether `auto` replaces the chunk parameter
//!   by the expert chunk, when its text does not say (on unless `0`).
//! - `KEEL_LOOP_RECORD=all|needed`: whether every instance is recorded
//!   (see [`record_all`](super::record_all)).
//!
//! A bad value never stops a loop run by a lenient form: it is warned about
//! once and its default used.

use std::sync::OnceLock;

use keel_policy::PolicyError;

use super::schedule::ResolvedSchedule;
use super::LoopError;
use crate::warn;

/// Where loops name `KEEL_SCHEDULE` in errors and warnings.
const SCHEDULE_VAR: &str = "KEEL_SCHEDULE";

/// `KEEL_SCHEDULE`'s text, trimmed; `auto` when unset or empty. A value
/// that is not UTF-8 keeps its bytes as U+FFFD, which no schedule holds: it
/// is a bad value like any other, not an unset one.
fn schedule_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        std::env::var_os(SCHEDULE_VAR)
            .map(|v| v.to_string_lossy().trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "auto".to_string())
    })
}

/// `KEEL_SCHEDULE`, resolved once; its parse error when it is invalid.
fn env_schedule_parsed() -> &'static Result<ResolvedSchedule, PolicyError> {
    static RESOLVED: OnceLock<Result<ResolvedSchedule, PolicyError>> = OnceLock::new();
    RESOLVED.get_or_init(|| ResolvedSchedule::parse(schedule_text(), SCHEDULE_VAR))
}

/// `KEEL_SCHEDULE` for the strict forms: invalid is an error.
pub(crate) fn env_schedule() -> Result<&'static ResolvedSchedule, LoopError> {
    env_schedule_parsed()
        .as_ref()
        .map_err(|error| LoopError::Schedule {
            source_name: SCHEDULE_VAR,
            error: error.clone(),
        })
}

/// `KEEL_SCHEDULE` for the lenient forms: `auto` when it does not parse
/// (warned once, as libgomp warns about a bad `OMP_SCHEDULE`).
pub(crate) fn env_schedule_or_default() -> &'static ResolvedSchedule {
    match env_schedule_parsed() {
        Ok(resolved) => resolved,
        Err(err) => {
            let text = schedule_text();
            warn::once(SCHEDULE_VAR, text, || {
                format!("KEEL_SCHEDULE={text:?} is invalid ({err}); using auto")
            });
            default_schedule()
        }
    }
}

/// `auto`, as a loop under `KEEL_SCHEDULE` falls back to it.
pub(crate) fn default_schedule() -> &'static ResolvedSchedule {
    static AUTO: OnceLock<ResolvedSchedule> = OnceLock::new();
    AUTO.get_or_init(|| {
        ResolvedSchedule::parse("auto", SCHEDULE_VAR).expect("`auto` is a valid schedule")
    })
}

/// Warns once that `KEEL_SCHEDULE` cannot plan some loop (`error`), whose
/// instance then runs under the default.
pub(crate) fn warn_env_schedule_unplannable(error: &PolicyError) {
    let text = schedule_text();
    warn::once(SCHEDULE_VAR, text, || {
        format!("KEEL_SCHEDULE={text:?} cannot run every loop ({error}); using auto")
    });
}

/// `KEEL_EXPERT_CHUNK=0|1`, read once: whether `auto` replaces the chunk
/// parameter by the expert chunk (on unless set to `0`).
pub(crate) fn expert_chunk() -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    *ENV.get_or_init(|| std::env::var("KEEL_EXPERT_CHUNK").map_or(true, |v| v.trim() != "0"))
}

/// `KEEL_LOOP_RECORD`: `all` records every instance; unset, empty or
/// `needed` only those that need it; anything else warns once and keeps
/// the default.
pub(crate) fn record_all() -> bool {
    let Ok(value) = std::env::var("KEEL_LOOP_RECORD") else {
        return false;
    };
    match value.trim() {
        "all" => true,
        "" | "needed" => false,
        other => {
            warn::once("KEEL_LOOP_RECORD", other, || {
                format!("KEEL_LOOP_RECORD={other:?} is not `all` or `needed`; using `needed`")
            });
            false
        }
    }
}
