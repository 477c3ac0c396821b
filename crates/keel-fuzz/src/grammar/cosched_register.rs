//! The `cosched-register` grammar: request lines of the node manager's
//! registration socket as the SPANK plugin writes them, with keys in any
//! order, values at their bounds, keys missing or doubled; and reply lines.

use proptest::prelude::*;

use keel_cosched::cluster::register::{KEYS, MAX_POLICY_LEN, MAX_REQUEST_BYTES, REQUEST_MAGIC};

use super::{number, word, Grammar};

/// A value: a plausible one, a bound of its type, or anything.
fn value() -> BoxedStrategy<String> {
    prop_oneof![
        6 => (0u32..64).prop_map(|n| n.to_string()),
        2 => prop::sample::select(vec![
            "0", "1", "2147483647", "2147483648", "4294967295", "4294967296", "-1", "+1", "01", "",
        ])
        .prop_map(str::to_string),
        1 => number(),
        1 => word(),
    ]
    .boxed()
}

/// A policy: a valid name, one at the length bound or past it, or junk.
fn policy() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec!["fcs", "gs", "gs:t-slice=0.05", "local", "sb", "fcfs"])
            .prop_map(str::to_string),
        1 => prop::sample::select(vec![MAX_POLICY_LEN, MAX_POLICY_LEN + 1]).prop_map(|n| "a".repeat(n)),
        1 => word(),
    ]
    .boxed()
}

/// A request line: the keys of a real registration, shuffled, now and
/// then one dropped, doubled or unknown.
fn request() -> BoxedStrategy<String> {
    // The numbers, without the optional `policy` (drawn on its own).
    let keys = &KEYS[..KEYS.len() - 1];
    let fields = (
        prop::collection::vec(value(), keys.len()),
        prop::option::weighted(0.5, policy()),
        Just(keys.to_vec()).prop_shuffle(),
        prop::option::weighted(0.15, 0usize..11),
        prop::option::weighted(0.1, word()),
    );
    let line = (
        fields,
        prop::sample::select(vec!["1", "1", "1", "2", "0"]),
        prop::sample::select(vec!["\n", "\n", "", "\r\n", "\n\n"]),
        prop::option::weighted(0.05, Just(REQUEST_MAGIC.to_uppercase())),
    );
    line.prop_map(
        move |((values, policy, order, drop, extra), version, end, magic)| {
            let mut parts = vec![
                magic.unwrap_or_else(|| REQUEST_MAGIC.to_string()),
                version.to_string(),
            ];
            for (i, key) in order.iter().enumerate() {
                let at = keys.iter().position(|k| k == key).unwrap_or(0);
                match drop {
                    Some(d) if d == i => continue,
                    Some(d) if d + 1 == i => parts.push(format!("{key}={}", values[at])),
                    _ => {}
                }
                parts.push(format!("{key}={}", values[at]));
            }
            if let Some(p) = policy {
                parts.push(format!("policy={p}"));
            }
            if let Some(w) = extra {
                parts.push(format!("{w}=1"));
            }
            let mut line = parts.join(" ");
            line.push_str(end);
            line
        },
    )
    .boxed()
}

/// A reply line.
fn reply() -> BoxedStrategy<String> {
    prop_oneof![
        2 => "/[a-z0-9/._-]{1,40}".prop_map(|p| format!("ok page={p}\n")),
        1 => word().prop_map(|w| format!("refused {w}\n")),
        1 => word().prop_map(|w| format!("ok page={w}\n")),
        1 => Just(format!("ok page=/{}\n", "p".repeat(MAX_REQUEST_BYTES * 5))),
    ]
    .boxed()
}

/// The `cosched-register` grammar: mostly requests, some replies.
pub fn cosched_register() -> Grammar {
    Grammar::text(prop_oneof![4 => request(), 1 => reply()].boxed())
}
