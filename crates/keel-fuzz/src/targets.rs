//! The fuzz targets: one per parser that reads outside text.
//!
//! A target returns `Ok(())` whether the parser accepted or rejected the
//! input; `Err` means the parser accepted something unusable (the message
//! says what). Panics are the driver's to catch.

use std::time::{Duration, Instant};

use keel_cosched::cluster::auth::{Authenticator, SharedKey};
use keel_cosched::cluster::wire::{decode_envelope, decode_greeting, encode_envelope, read_frame};
use keel_cosched::control::ControlCommand;
use keel_cosched::job::{parse_jobs, JobSpec};
use keel_policy::context::ContextHandler;
use keel_policy::dls::{self, LoopSchedule, LoopShape};
use keel_policy::select::{self, Setting};
use keel_policy::{cosched, expose, farm, mapping, Concept, Model, Origin, Spec, Subject};
use keel_workloads::swf::{arrivals, parse_swf, WideJobs};
use keel_workloads::trace::{parse_trace, TaskFormat};

use crate::grammar::{self, Grammar};

/// One parser under test.
pub struct Target {
    /// Short name: the corpus folder and the command-line name.
    pub name: &'static str,
    /// What it parses, through which public function.
    pub summary: &'static str,
    /// Feeds one input to the parser.
    pub run: fn(&[u8]) -> Result<(), String>,
    /// Builds the target's grammar.
    pub grammar: fn() -> Grammar,
}

/// Separates the task table from the PU table in a `trace-csv` input.
pub const CSV_PU_SEPARATOR: &[u8] = b"\n%%\n";

/// Most ranks a parsed job may ask for: the machine manager gives each rank
/// its own PE and records it before checking the job against the machine,
/// and no machine it drives has more PEs than a Linux CPU set holds.
pub const MAX_PLAUSIBLE_RANKS: usize = 1 << 16;

/// The session (the receiver's greeting nonce) a `cosched-wire` envelope
/// must be addressed to; the grammar and the seeds use it.
pub const WIRE_TO: u64 = 42;

/// The sequence number a `cosched-wire` envelope must carry: the first of
/// a session.
pub const WIRE_SEQ: u64 = 1;

static TARGETS: [Target; 9] = [
    Target {
        name: "policy-spec",
        summary: "spec strings through Spec::parse and every registry (mapping, loop schedule, \
                  cosched, farm, expose); built mapping policies map a small problem, built \
                  loop schedules plan a small loop",
        run: policy_spec,
        grammar: grammar::policy_spec,
    },
    Target {
        name: "keel-schedule",
        summary: "KEEL_SCHEDULE text through select::parse_setting (as keel::loops reads it); \
                  a selector chooses once, a fixed schedule plans a small loop",
        run: keel_schedule,
        grammar: grammar::keel_schedule,
    },
    Target {
        name: "trace-json",
        summary: "JSON task traces through trace::parse_trace",
        run: trace_json,
        grammar: grammar::trace_json,
    },
    Target {
        name: "trace-csv",
        summary: "CSV task tables through trace::parse_trace, with the PU table after a `%%` \
                  line (else 2 PUs, as --pus gives them)",
        run: trace_csv,
        grammar: grammar::trace_csv,
    },
    Target {
        name: "swf",
        summary: "SWF logs through swf::parse_swf, the header getters and swf::arrivals",
        run: swf,
        grammar: grammar::swf,
    },
    Target {
        name: "control",
        summary: "control-socket request lines through ControlCommand::parse, a submitted \
                  job line through JobSpec::parse_line",
        run: control,
        grammar: grammar::control,
    },
    Target {
        name: "job-file",
        summary: "job files through job::parse_jobs; every job must print back to itself",
        run: job_file,
        grammar: grammar::job_file,
    },
    Target {
        name: "cosched-wire",
        summary: "cluster protocol bytes (MM <-> NM) through wire::read_frame, \
                  wire::decode_envelope, wire::decode_greeting and SharedKey::open, as a \
                  stream of frames and as one payload; an accepted message re-encodes to \
                  itself and is refused under another session or sequence number",
        run: cosched_wire,
        grammar: grammar::cosched_wire,
    },
    Target {
        name: "cosched-register",
        summary: "registration socket lines (SPANK plugin -> NM) through Registration::parse \
                  and Reply::parse; an accepted request encodes and parses back to itself and \
                  is authorized for its own pid only; an accepted reply round-trips",
        run: cosched_register,
        grammar: grammar::cosched_register,
    },
];

/// Every target.
pub fn targets() -> &'static [Target] {
    &TARGETS
}

/// The target called `name` (including [`SELF_TEST`]).
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS
        .iter()
        .chain(std::iter::once(&SELF_TEST))
        .find(|t| t.name == name)
}

/// A target that fails on purpose, for testing the driver: `panic`,
/// `check`, `overflow` (recurses until the stack overflows), `alloc` (asks
/// for more memory than [`crate::MEMORY_LIMIT`]) and `hang` (sleeps past
/// [`crate::CASE_LIMIT`]) fail that way; anything else passes. Not in
/// [`targets`].
pub static SELF_TEST: Target = Target {
    name: "self-test",
    summary: "fails on purpose by its input: panic, check, overflow, alloc, hang",
    run: self_test,
    grammar: grammar::self_test,
};

fn self_test(input: &[u8]) -> Result<(), String> {
    fn recurse(depth: u64) -> u64 {
        // Never true in practice: the stack runs out long before.
        if std::hint::black_box(depth) == u64::MAX {
            return 0;
        }
        let frame = std::hint::black_box([depth; 64]);
        frame[(depth % 64) as usize].wrapping_add(recurse(depth + 1))
    }
    match input {
        b"panic" => panic!("self-test panic"),
        b"check" => Err("self-test check".into()),
        b"overflow" => {
            std::hint::black_box(recurse(0));
            Ok(())
        }
        b"alloc" => {
            let v = vec![1u8; std::hint::black_box(crate::MEMORY_LIMIT as usize * 2)];
            std::hint::black_box(&v);
            Ok(())
        }
        b"hang" => {
            std::thread::sleep(crate::CASE_LIMIT * 3);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn text(input: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(input)
}

fn policy_spec(input: &[u8]) -> Result<(), String> {
    let text = text(input);
    if let Ok(spec) = Spec::parse(&text) {
        let shown = spec.to_string();
        match Spec::parse(&shown) {
            Ok(again) if again == spec => {}
            Ok(again) => {
                return Err(format!(
                    "spec prints as `{shown}`, which parses to a different spec ({again:?} vs {spec:?})"
                ))
            }
            Err(e) => return Err(format!("spec prints as `{shown}`, which does not parse: {e}")),
        }
    }
    if let Ok(policy) = mapping::registry().build(&text) {
        let loads = [3.0, 1.0, 1.0, 3.0, 2.0, 2.0];
        let pus = [0.0, 0.5];
        let _ = policy.map(&mapping::runtime_context(&loads, &pus));
    }
    if let Ok(schedule) = dls::registry().build(&text) {
        plan_small_loop(schedule.as_ref(), None);
    }
    if let Some((schedule, chunk)) = select::parse_setting(&text)
        .ok()
        .and_then(Setting::into_fixed)
    {
        plan_small_loop(schedule.as_ref(), chunk);
    }
    let _ = cosched::parse(&text);
    let _ = farm::parse(&text);
    let _ = expose::Expose::parse(&text);
    Ok(())
}

/// Plans 1000 iterations on 4 threads (a schedule that plans at all must
/// plan this without panicking; its error, if any, is its own business);
/// a workload-aware schedule first assigns them from per-iteration hints.
fn plan_small_loop(schedule: &dyn LoopSchedule, chunk: Option<u64>) {
    if let Ok(shape) = LoopShape::new(1000, 4, chunk) {
        let ctx = ContextHandler::new();
        let _ = schedule.plan(&shape, &ctx);
        if let Some(workload) = schedule.as_workload() {
            let hints: Vec<f64> = (0..1000).map(|i| f64::from(i % 7 + 1)).collect();
            let mut with_hints = ContextHandler::new();
            let concept = Concept::Workload {
                subject: Subject::Tasks,
                model: Model::Static,
            };
            with_hints.provide_values(concept, Origin::User, &hints[..]);
            let _ = workload.assign(&shape, &with_hints);
        }
    }
}

fn keel_schedule(input: &[u8]) -> Result<(), String> {
    match select::parse_setting(&text(input)) {
        Ok(Setting::Auto(spec)) => {
            let mut selector = spec.selector(0);
            let _ = selector.choose(1000, 4);
        }
        Ok(Setting::Fixed { schedule, chunk }) => plan_small_loop(schedule.as_ref(), chunk),
        Err(_) => {}
    }
    Ok(())
}

fn trace_json(input: &[u8]) -> Result<(), String> {
    let _ = parse_trace(TaskFormat::Json, "<fuzz>.json", input, None, None);
    Ok(())
}

fn trace_csv(input: &[u8]) -> Result<(), String> {
    let _ = parse_csv(input);
    Ok(())
}

/// A `trace-csv` input through the parser: the task table, and either the
/// PU table after [`CSV_PU_SEPARATOR`] or, without one, 2 PUs as `--pus`
/// would give them (a task table alone does not say how many PUs there are).
fn parse_csv(input: &[u8]) -> Result<keel_workloads::MappingProblem, keel_workloads::TraceError> {
    let (tasks, pu_file, pus) = match find(input, CSV_PU_SEPARATOR) {
        Some(at) => (
            &input[..at],
            Some(("<fuzz-pus>.csv", &input[at + CSV_PU_SEPARATOR.len()..])),
            None,
        ),
        None => (input, None, Some(2)),
    };
    parse_trace(TaskFormat::Csv, "<fuzz>.csv", tasks, pu_file, pus)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn swf(input: &[u8]) -> Result<(), String> {
    if let Ok(log) = parse_swf(&text(input)) {
        let _ = (log.max_procs(), log.max_nodes(), log.unix_start_time());
        let _ = log.version();
        for pes in [1, 64] {
            let _ = arrivals(&log.jobs, pes, WideJobs::Drop);
            let _ = arrivals(&log.jobs, pes, WideJobs::Reject);
        }
    }
    Ok(())
}

fn control(input: &[u8]) -> Result<(), String> {
    if let Ok(ControlCommand::Submit(line)) = ControlCommand::parse(&text(input)) {
        if let Ok(job) = JobSpec::parse_line(&line) {
            usable_job(&job)?;
        }
    }
    Ok(())
}

fn job_file(input: &[u8]) -> Result<(), String> {
    if let Ok(jobs) = parse_jobs(&text(input), "<fuzz>") {
        for job in &jobs {
            usable_job(job)?;
            let line = job.to_line();
            match JobSpec::parse_line(&line) {
                Ok(again) if again == *job => {}
                Ok(again) => {
                    return Err(format!(
                        "job prints as `{line}`, which parses to a different job ({again:?} vs {job:?})"
                    ))
                }
                Err(e) => return Err(format!("job prints as `{line}`, which does not parse: {e}")),
            }
        }
    }
    Ok(())
}

fn cosched_wire(input: &[u8]) -> Result<(), String> {
    // The input as a connection's byte stream: frame after frame, until
    // one is refused or the input ends.
    let mut stream = input;
    while let Ok(frame) = read_frame(&mut stream) {
        wire_payload(&frame)?;
    }
    // And as one frame's payload, so that mutations of envelopes reach the
    // decoder without having to keep a length prefix right.
    wire_payload(input)
}

/// One frame's payload through everything that reads one.
fn wire_payload(payload: &[u8]) -> Result<(), String> {
    let _ = decode_greeting(payload);
    if let Ok(key) = SharedKey::from_bytes(&[0x4b; 32]) {
        let _ = key.open(payload);
    }
    let Ok(msg) = decode_envelope(payload, WIRE_TO, WIRE_SEQ) else {
        return Ok(());
    };
    for (to, seq) in [(WIRE_TO + 1, WIRE_SEQ), (WIRE_TO, WIRE_SEQ + 1)] {
        if decode_envelope(payload, to, seq).is_ok() {
            return Err(format!(
                "envelope {msg:?} accepted for session {WIRE_TO} seq {WIRE_SEQ} and for session \
                 {to} seq {seq} as well"
            ));
        }
    }
    let again = encode_envelope(WIRE_TO, WIRE_SEQ, &msg);
    match decode_envelope(&again, WIRE_TO, WIRE_SEQ) {
        Ok(back) if back == msg => Ok(()),
        Ok(back) => Err(format!(
            "message {msg:?} encodes as `{}`, which decodes to {back:?}",
            text(&again)
        )),
        Err(e) => Err(format!(
            "message {msg:?} encodes as `{}`, which does not decode: {e}",
            text(&again)
        )),
    }
}

fn cosched_register(input: &[u8]) -> Result<(), String> {
    use keel_cosched::cluster::register::{authorize, Registration, Reply};
    use keel_cosched::sys::PeerCred;
    if let Ok(reg) = Registration::parse(input) {
        let line = reg.encode();
        match Registration::parse(line.as_bytes()) {
            Ok(back) if back == reg => {}
            Ok(back) => {
                return Err(format!(
                    "{reg:?} encodes as `{line}`, which parses as {back:?}"
                ))
            }
            Err(e) => {
                return Err(format!(
                    "{reg:?} encodes as `{line}`, which does not parse: {e}"
                ))
            }
        }
        let own = PeerCred {
            pid: reg.pid,
            uid: reg.uid,
            gid: reg.gid,
        };
        if let Err(e) = authorize(&reg, &own) {
            return Err(format!("{reg:?} refused for its own process: {e}"));
        }
        let other = PeerCred {
            pid: reg.pid.wrapping_add(1),
            ..own
        };
        if authorize(&reg, &other).is_ok() {
            return Err(format!("{reg:?} authorized for process {}", other.pid));
        }
    }
    if let Ok(reply) = Reply::parse(&text(input)) {
        let line = reply.encode();
        match Reply::parse(&line) {
            Ok(back) if back == reply => {}
            Ok(back) => {
                return Err(format!(
                    "{reply:?} encodes as `{line}`, which parses as {back:?}"
                ))
            }
            Err(e) => {
                return Err(format!(
                    "{reply:?} encodes as `{line}`, which does not parse: {e}"
                ))
            }
        }
    }
    Ok(())
}

/// What the machine manager does with an accepted job before checking it
/// against the machine: it waits `arrival` seconds from now
/// (`Instant::now() + Duration::from_secs_f64(arrival)`, which panics past
/// `Duration`'s or `Instant`'s range) and records one state per rank.
fn usable_job(job: &JobSpec) -> Result<(), String> {
    let wait = Duration::try_from_secs_f64(job.arrival).map_err(|e| {
        format!(
            "job `{}` accepted with arrival={} s, which is no Duration ({e})",
            job.name, job.arrival
        )
    })?;
    if Instant::now().checked_add(wait).is_none() {
        return Err(format!(
            "job `{}` accepted with arrival={} s, past what an Instant can hold",
            job.name, job.arrival
        ));
    }
    if job.ranks > MAX_PLAUSIBLE_RANKS {
        return Err(format!(
            "job `{}` accepted with {} ranks, more than any machine's PEs ({MAX_PLAUSIBLE_RANKS}); \
             the manager allocates per rank before checking the width",
            job.name, job.ranks
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share of 400 grammar inputs of `target` that `accepts` takes.
    fn accepted(target: &str, accepts: impl Fn(&[u8]) -> bool) -> f64 {
        let grammar = (super::target(target).expect("a target").grammar)();
        let n = 400;
        let ok = (0..n).filter(|&s| accepts(&grammar.generate(s))).count();
        ok as f64 / n as f64
    }

    /// The seeds that are envelopes of the target's session decode, so
    /// that the corpus follows the protocol when it changes.
    #[test]
    fn cosched_wire_seeds_follow_the_protocol() {
        let seeds = crate::corpus::seeds("cosched-wire").expect("the corpus reads");
        let decoded = seeds
            .iter()
            .filter(|s| decode_envelope(s, WIRE_TO, WIRE_SEQ).is_ok())
            .count();
        assert!(
            decoded >= 8,
            "only {decoded} of {} seeds decode",
            seeds.len()
        );
    }

    /// A grammar whose inputs the parser always refuses tests only its
    /// error paths: each must reach the accepting side too, and the
    /// refusing side.
    #[test]
    fn every_grammar_reaches_both_sides_of_its_parser() {
        let shares = [
            (
                "policy-spec",
                accepted("policy-spec", |b| {
                    mapping::registry().build(&text(b)).is_ok()
                        || select::parse_setting(&text(b)).is_ok()
                        || cosched::parse(&text(b)).is_ok()
                }),
            ),
            (
                "keel-schedule",
                accepted("keel-schedule", |b| select::parse_setting(&text(b)).is_ok()),
            ),
            (
                "trace-json",
                accepted("trace-json", |b| {
                    parse_trace(TaskFormat::Json, "t", b, None, None).is_ok()
                }),
            ),
            ("trace-csv", accepted("trace-csv", |b| parse_csv(b).is_ok())),
            ("swf", accepted("swf", |b| parse_swf(&text(b)).is_ok())),
            (
                "control",
                accepted(
                    "control",
                    |b| matches!(ControlCommand::parse(&text(b)), Ok(ControlCommand::Submit(l)) if JobSpec::parse_line(&l).is_ok()),
                ),
            ),
            (
                "job-file",
                accepted("job-file", |b| parse_jobs(&text(b), "f").is_ok()),
            ),
            (
                "cosched-register",
                accepted("cosched-register", |b| {
                    keel_cosched::cluster::register::Registration::parse(b).is_ok()
                        || keel_cosched::cluster::register::Reply::parse(&text(b)).is_ok()
                }),
            ),
            (
                "cosched-wire",
                accepted("cosched-wire", |b| {
                    let ok = |p: &[u8]| decode_envelope(p, WIRE_TO, WIRE_SEQ).is_ok();
                    ok(b) || read_frame(&mut &b[..]).is_ok_and(|f| ok(&f))
                }),
            ),
        ];
        for (name, share) in shares {
            println!("{name}: {:.0} % accepted", share * 100.0);
            assert!(
                (0.02..=0.98).contains(&share),
                "{name}: {:.1} % of grammar inputs accepted",
                share * 100.0
            );
        }
    }
}
