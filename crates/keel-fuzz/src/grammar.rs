//! Proptest grammars: well-formed-ish inputs for each target, leaning on
//! the values parsers get wrong (huge, negative, `-0`, NaN, `1e308`,
//! integers one past a type's range), deep nesting, and quoting.
//!
//! Strategies only generate here (no shrinking): [`Grammar::generate`]
//! draws one value from a proptest runner seeded with the case's seed.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use keel_policy::{cosched, dls, farm, mapping};

mod cosched_register;
mod cosched_wire;
pub use cosched_register::cosched_register;
pub use cosched_wire::cosched_wire;

/// A target's input generator.
pub struct Grammar {
    strategy: BoxedStrategy<Vec<u8>>,
    config: Config,
}

impl Grammar {
    fn new(strategy: BoxedStrategy<Vec<u8>>) -> Grammar {
        Grammar {
            strategy,
            config: Config {
                failure_persistence: None,
                ..Config::default()
            },
        }
    }

    fn text(strategy: BoxedStrategy<String>) -> Grammar {
        Grammar::new(strategy.prop_map(String::into_bytes).boxed())
    }

    /// The input drawn with `seed`.
    pub fn generate(&self, seed: u64) -> Vec<u8> {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        bytes[8..16].copy_from_slice(&(!seed).to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        let mut runner = TestRunner::new_with_rng(self.config.clone(), rng);
        match self.strategy.new_tree(&mut runner) {
            Ok(tree) => tree.current(),
            // Only filters can reject, and the grammars use none.
            Err(_) => Vec::new(),
        }
    }
}

/// Numbers as text: small, extreme, random integers and floats.
pub const EXTREME_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "1",
    "-1",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "infinity",
    "1e308",
    "1e309",
    "-1e308",
    "4.9e-324",
    "1e-400",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "1000000000000",
    "1e20",
    "1e9",
    "0.5",
    "1.0000000000000002",
    "00001",
    "+5",
    "1_000",
    "0x10",
    " 7 ",
    "",
];

fn number() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (0u64..100).prop_map(|n| n.to_string()),
        3 => prop::sample::select(EXTREME_NUMBERS).prop_map(str::to_string),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|x| format!("{x}")),
        1 => any::<f64>().prop_map(|x| format!("{x:e}")),
        1 => (0u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
    ]
    .boxed()
}

fn word() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z][a-z0-9-]{0,10}",
        1 => "[A-Za-z0-9_.:;!?é ]{0,6}",
        1 => any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ]
    .boxed()
}

const SPEC_KEYS: &[&str] = &[
    "chunk",
    "chunks",
    "cut",
    "nodes",
    "outer",
    "inner",
    "tolerance",
    "divisor",
    "min-block",
    "near-end",
    "capacity",
    "label",
    "method",
    "seed",
    "expert-chunk",
    "pin",
    "late",
    "alpha",
    "initial",
    "awf-b",
    "spin",
    "t-slice",
    "t-spin",
    "cslots-min",
    "dc-thresh",
    "cs-thresh",
    "f-thresh",
    "tslots-max",
];

fn policy_names() -> Vec<String> {
    let mut names = mapping::registry().names();
    names.extend(dls::registry().names());
    names.extend(cosched::registry().names());
    names.extend(farm::registry().names());
    for extra in ["auto", "none", "all", "idle", "history", "history-idle"] {
        names.push(extra.to_string());
    }
    names
}

fn name(names: &[String]) -> BoxedStrategy<String> {
    prop_oneof![6 => prop::sample::select(names.to_vec()), 1 => word()].boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select(SPEC_KEYS).prop_map(str::to_string),
        1 => word(),
    ]
    .boxed()
}

fn token(names: &[String]) -> BoxedStrategy<String> {
    prop_oneof![4 => number(), 2 => name(names), 1 => word()].boxed()
}

fn render_spec(name: String, params: Vec<(String, String)>, sep: &str) -> String {
    if params.is_empty() {
        return name;
    }
    let params: Vec<String> = params
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{name}:{}", params.join(sep))
}

/// Spec strings: `name:key=value,...`, nested up to four levels, with odd
/// separators now and then.
pub fn spec_text() -> BoxedStrategy<String> {
    let names = policy_names();
    let sep = prop_oneof![8 => Just(","), 1 => Just(" , "), 1 => Just(",,")];
    let leaf = (
        name(&names),
        prop::collection::vec((key(), token(&names)), 0..4),
        sep.clone(),
    )
        .prop_map(|(n, p, s)| render_spec(n, p, s));
    let names_inner = names.clone();
    leaf.prop_recursive(4, 24, 4, move |inner| {
        let value = prop_oneof![
            2 => token(&names_inner),
            1 => inner.prop_map(|s| format!("({s})")),
        ];
        (
            name(&names_inner),
            prop::collection::vec((key(), value), 0..4),
            sep.clone(),
        )
            .prop_map(|(n, p, s)| render_spec(n, p, s))
    })
    .boxed()
}

/// `key=(` nested `depth` times around a name: the spec parser's recursion.
pub fn deep_spec(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 13 + 8);
    for _ in 0..depth {
        s.push_str("hier:outer=(");
    }
    s.push_str("greedy");
    for _ in 0..depth {
        s.push(')');
    }
    s
}

fn deep() -> BoxedStrategy<String> {
    prop_oneof![
        3 => 1usize..64,
        1 => 64usize..5000,
    ]
    .prop_map(deep_spec)
    .boxed()
}

/// The `policy-spec` grammar.
pub fn policy_spec() -> Grammar {
    Grammar::text(prop_oneof![12 => spec_text(), 1 => deep()].boxed())
}

/// The `keel-schedule` grammar: `auto[,method]`, `auto:key=value,...`,
/// `schedule[,chunk]`, and spec strings.
pub fn keel_schedule() -> Grammar {
    let schedules = dls::registry().names();
    let method = prop::sample::select(&["keel", "expert", "exhaustive", "random", "bogus", ""][..]);
    let sched = prop::sample::select(schedules);
    let strategy = prop_oneof![
        2 => method.clone().prop_map(|m| if m.is_empty() { "auto".to_string() } else { format!("auto,{m}") }),
        3 => (method, number(), number(), sched.clone()).prop_map(|(m, s, e, p)| {
            format!("auto:method={m},seed={s},expert-chunk={e},pin={p}")
        }),
        4 => (sched.clone(), number()).prop_map(|(s, c)| format!("{s},{c}")),
        1 => sched.prop_map(|s| s.to_ascii_uppercase()),
        3 => spec_text(),
    ];
    Grammar::text(strategy.boxed())
}

fn json_number() -> BoxedStrategy<String> {
    prop_oneof![
        6 => number(),
        1 => Just("null".to_string()),
        1 => Just("true".to_string()),
        1 => Just("\"1\"".to_string()),
        1 => Just("[]".to_string()),
        1 => Just("1e400".to_string()),
        1 => Just(usize::MAX.to_string()),
    ]
    .boxed()
}

fn json_array(item: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop::collection::vec(item, 0..12)
        .prop_map(|v| format!("[{}]", v.join(",")))
        .boxed()
}

/// The `trace-json` grammar: objects with some of the trace's fields (and
/// unknown ones), values of the right or wrong type and size.
pub fn trace_json() -> Grammar {
    let bools = prop_oneof![
        4 => Just("true".to_string()),
        4 => Just("false".to_string()),
        1 => Just("1".to_string()),
        1 => Just("null".to_string()),
    ]
    .boxed();
    let field = prop_oneof![
        3 => json_array(json_number()).prop_map(|v| format!("\"task_loads\":{v}")),
        1 => json_array(json_number()).prop_map(|v| format!("\"pu_loads\":{v}")),
        1 => json_array(json_number()).prop_map(|v| format!("\"pu_speeds\":{v}")),
        1 => json_array(bools.clone()).prop_map(|v| format!("\"pu_available\":{v}")),
        1 => json_array(bools).prop_map(|v| format!("\"migratable\":{v}")),
        2 => json_array(json_number()).prop_map(|v| format!("\"current_mapping\":{v}")),
        2 => json_number().prop_map(|v| format!("\"num_pus\":{v}")),
        1 => word().prop_map(|w| format!("\"{w}\":1")),
    ];
    let loose = prop::collection::vec(field, 0..6).prop_map(|f| format!("{{{}}}", f.join(",")));
    Grammar::text(prop_oneof![loose, consistent_trace_json()].boxed())
}

/// A JSON trace whose fields agree (tasks, PUs), with now and then one
/// value replaced by an extreme number.
fn consistent_trace_json() -> BoxedStrategy<String> {
    (1usize..8, 1usize..5)
        .prop_flat_map(|(n, p)| {
            (
                prop::collection::vec(0u32..100, n),
                prop::option::of(prop::collection::vec(any::<bool>(), n)),
                prop::option::of(prop::collection::vec(prop::option::of(0..p), n)),
                prop::option::of(prop::collection::vec(1u32..4, p)),
                prop::option::of(number()),
                Just(p),
            )
        })
        .prop_map(|(loads, migratable, current, speeds, extreme, p)| {
            let list = |v: Vec<String>| format!("[{}]", v.join(","));
            let mut fields = vec![format!(
                "\"task_loads\":{}",
                list(loads.iter().map(|l| format!("{}.5", l)).collect())
            )];
            if let Some(m) = migratable {
                fields.push(format!(
                    "\"migratable\":{}",
                    list(m.iter().map(bool::to_string).collect())
                ));
            }
            if let Some(c) = current {
                let c = c
                    .iter()
                    .map(|x| x.map_or("null".to_string(), |x| x.to_string()));
                fields.push(format!("\"current_mapping\":{}", list(c.collect())));
            }
            match speeds {
                Some(s) => fields.push(format!(
                    "\"pu_speeds\":{}",
                    list(s.iter().map(u32::to_string).collect())
                )),
                None => fields.push(format!("\"num_pus\":{p}")),
            }
            let mut text = format!("{{{}}}", fields.join(","));
            if let Some(x) = extreme {
                // Replace the first digit run by an extreme number.
                if let Some(at) = text.find(|c: char| c.is_ascii_digit()) {
                    let end = text[at..]
                        .find(|c: char| !c.is_ascii_digit() && c != '.')
                        .map_or(text.len(), |e| at + e);
                    text.replace_range(at..end, &x);
                }
            }
            text
        })
        .boxed()
}

fn csv_cell() -> BoxedStrategy<String> {
    prop_oneof![
        6 => number(),
        2 => prop::sample::select(&["true", "false", "yes", "no", "1", "0", "-"][..]).prop_map(str::to_string),
        1 => Just("\"1,2\"".to_string()),
        1 => Just("\"unterminated".to_string()),
        1 => Just("#x".to_string()),
        1 => word(),
    ]
    .boxed()
}

fn csv_table(columns: &'static [&'static str]) -> BoxedStrategy<String> {
    let header = prop::collection::vec(
        prop_oneof![8 => prop::sample::select(columns), 1 => Just("bogus"), 1 => Just("")],
        0..5,
    )
    .prop_map(|h| h.join(","));
    let row = prop::collection::vec(csv_cell(), 0..5).prop_map(|r| r.join(","));
    let newline = prop_oneof![6 => Just("\n"), 1 => Just("\r\n")];
    (header, prop::collection::vec(row, 0..12), newline)
        .prop_map(|(h, rows, nl)| {
            let mut text = h;
            for row in rows {
                text.push_str(nl);
                text.push_str(&row);
            }
            text
        })
        .boxed()
}

/// The `trace-csv` grammar: a task table with known, repeated and unknown
/// columns and ragged rows, sometimes followed by a PU table.
pub fn trace_csv() -> Grammar {
    const TASK: &[&str] = &["load", "migratable", "current_pu", "LOAD", " load "];
    const PU: &[&str] = &["background", "speed", "available", "Speed"];
    let loose = (csv_table(TASK), prop::option::of(csv_table(PU))).prop_map(|(t, p)| {
        let mut bytes = t.into_bytes();
        if let Some(p) = p {
            bytes.extend_from_slice(crate::targets::CSV_PU_SEPARATOR);
            bytes.extend_from_slice(p.as_bytes());
        }
        bytes
    });
    Grammar::new(prop_oneof![loose, consistent_trace_csv()].boxed())
}

/// A CSV task table whose rows fit its header (and a fitting PU table),
/// with now and then one cell replaced by an extreme number.
fn consistent_trace_csv() -> BoxedStrategy<Vec<u8>> {
    let row = (0u32..100, any::<bool>(), prop::option::of(0u32..2));
    (
        prop::collection::vec(row, 1..10),
        any::<bool>(),
        prop::option::of(number()),
    )
        .prop_map(|(rows, with_pus, extreme)| {
            let mut text = "load,migratable,current_pu".to_string();
            for (load, migratable, pu) in rows {
                let pu = pu.map_or(String::new(), |p| p.to_string());
                text.push_str(&format!("\n{load}.25,{migratable},{pu}"));
            }
            if let Some(x) = extreme {
                if let Some(at) = text.find('\n') {
                    let end = text[at + 1..].find(',').map_or(text.len(), |e| at + 1 + e);
                    text.replace_range(at + 1..end, &x);
                }
            }
            if with_pus {
                text.push_str("\n%%\nbackground,speed,available\n0,1,true\n0.5,2,false");
            }
            text.into_bytes()
        })
        .boxed()
}

const SWF_HEADER_KEYS: &[&str] = &[
    "Version",
    "MaxProcs",
    "MaxNodes",
    "UnixStartTime",
    "MaxJobs",
    "Computer",
    "Note",
];

/// The `swf` grammar: header comments, then job lines of 16 to 19 fields
/// (mostly -1 and small numbers, now and then an extreme one).
pub fn swf() -> Grammar {
    let header =
        (prop::sample::select(SWF_HEADER_KEYS), number()).prop_map(|(k, v)| format!("; {k}: {v}"));
    let field = prop_oneof![4 => Just("-1".to_string()), 4 => (0u64..200).prop_map(|n| n.to_string()), 2 => number()];
    let job = prop::collection::vec(field, 16..20).prop_map(|f| f.join(" "));
    let line = prop_oneof![8 => job, 1 => Just("; comment".to_string()), 1 => Just(String::new())];
    let strategy = (
        prop::collection::vec(header, 0..4),
        prop::collection::vec(line, 0..10),
    )
        .prop_map(|(h, jobs)| {
            let mut lines = h;
            lines.extend(jobs);
            lines.join("\n")
        });
    Grammar::text(strategy.boxed())
}

fn command_arg() -> BoxedStrategy<String> {
    prop_oneof![
        6 => "[a-z@/][a-z0-9./-]{0,10}",
        1 => Just("\"quoted \\\" arg\"".to_string()),
        1 => Just("'single quoted'".to_string()),
        1 => Just("\"unterminated".to_string()),
        1 => Just("#comment".to_string()),
        1 => Just("--".to_string()),
        1 => word(),
    ]
    .boxed()
}

/// One job line: `NAME RANKS [pes=..] [arrival=..] -- COMMAND [ARG ...]`,
/// well formed (but for an extreme arrival now and then) or with every
/// part sometimes missing or malformed.
pub fn job_line() -> BoxedStrategy<String> {
    prop_oneof![1 => good_job_line(), 1 => loose_job_line()].boxed()
}

fn good_job_line() -> BoxedStrategy<String> {
    let arrival = prop_oneof![
        4 => (0u32..100).prop_map(|a| format!("{a}.5")),
        1 => number(),
    ];
    (
        "[a-z][a-z0-9._-]{0,8}",
        1usize..5,
        any::<bool>(),
        prop::option::of(arrival),
        prop::collection::vec(command_arg(), 1..4),
    )
        .prop_map(|(name, ranks, pes, arrival, args)| {
            let mut parts = vec![name, ranks.to_string()];
            if pes {
                let list: Vec<String> = (0..ranks).rev().map(|p| p.to_string()).collect();
                parts.push(format!("pes={}", list.join(",")));
            }
            parts.extend(arrival.map(|a| format!("arrival={a}")));
            parts.push("--".to_string());
            parts.extend(args);
            parts.join(" ")
        })
        .boxed()
}

fn loose_job_line() -> BoxedStrategy<String> {
    let job_name = prop_oneof![6 => "[a-z][a-z0-9._-]{0,8}", 1 => word()];
    let pes = prop::option::of(
        prop::collection::vec(
            prop_oneof![3 => (0u64..8).prop_map(|n| n.to_string()), 1 => number()],
            0..5,
        )
        .prop_map(|p| format!("pes={}", p.join(","))),
    );
    let arrival = prop::option::of(number().prop_map(|a| format!("arrival={a}")));
    let other = prop::option::of((key(), number()).prop_map(|(k, v)| format!("{k}={v}")));
    let dashes = prop_oneof![8 => Just("--"), 1 => Just(""), 1 => Just("- -")];
    (
        job_name,
        prop_oneof![3 => (1u64..5).prop_map(|n| n.to_string()), 1 => number()],
        pes,
        arrival,
        other,
        dashes,
        prop::collection::vec(command_arg(), 0..4),
    )
        .prop_map(|(n, r, pes, arrival, other, dashes, args)| {
            let mut parts = vec![n, r];
            parts.extend(pes);
            parts.extend(arrival);
            parts.extend(other);
            parts.push(dashes.to_string());
            parts.extend(args);
            parts.join(" ")
        })
        .boxed()
}

/// The `control` grammar: a verb and an argument (job id, job line, or
/// noise).
pub fn control() -> Grammar {
    let verb = prop_oneof![
        3 => Just("submit"),
        1 => prop::sample::select(
            &["list", "status", "kill", "shutdown", "LIST", "", "submit\t"][..],
        ),
    ];
    let rest = prop_oneof![
        2 => number(),
        4 => job_line(),
        1 => word(),
        1 => Just(String::new()),
    ];
    let strategy = (verb, rest).prop_map(|(v, r)| format!("{v} {r}"));
    Grammar::text(strategy.boxed())
}

/// The `job-file` grammar: job lines, comments and blank lines.
pub fn job_file() -> Grammar {
    let line = prop_oneof![
        8 => job_line(),
        1 => Just("# a comment".to_string()),
        1 => Just(String::new()),
        1 => Just("   ".to_string()),
    ];
    let strategy = prop::collection::vec(line, 0..8).prop_map(|l| l.join("\n"));
    Grammar::text(strategy.boxed())
}

/// The self-test target's grammar: each way of failing, and passing.
pub fn self_test() -> Grammar {
    let strategy = prop::sample::select(&["ok", "panic", "check", "overflow", "alloc", "hang"][..]);
    Grammar::text(strategy.prop_map(str::to_string).boxed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_varied() {
        let g = policy_spec();
        assert_eq!(g.generate(5), g.generate(5));
        let distinct: std::collections::HashSet<Vec<u8>> = (0..50).map(|s| g.generate(s)).collect();
        assert!(
            distinct.len() > 25,
            "only {} distinct specs",
            distinct.len()
        );
    }

    #[test]
    fn deep_spec_nests_as_asked() {
        let s = deep_spec(3);
        assert_eq!(s, "hier:outer=(hier:outer=(hier:outer=(greedy)))");
    }
}
