//! The `cosched-wire` grammar: frames of envelopes and greetings of the
//! cluster protocol, built from real messages so that most reach the
//! decoder's checks, with values at its bounds.

use proptest::prelude::*;

use keel_cosched::cluster::wire::{
    encode_envelope, Cell, Msg, StepId, TaskEnd, MAX_CELLS, MAX_FRAME_BYTES, MAX_TEXT_BYTES,
};

use super::{number, word, Grammar};
use crate::targets::{WIRE_SEQ, WIRE_TO};

/// Text fields of wire messages: plausible names, and the bounds the
/// decoder enforces (empty, a control character, one byte too many).
fn wire_text() -> BoxedStrategy<String> {
    prop_oneof![
        6 => "[a-z][a-z0-9.:=-]{0,12}",
        1 => Just(String::new()),
        1 => Just("node\u{1}01".to_string()),
        // Two-byte characters: exactly MAX_TEXT_BYTES bytes, or 2 more.
        1 => prop::sample::select(vec![MAX_TEXT_BYTES, MAX_TEXT_BYTES + 1])
            .prop_map(|n| "é".repeat(n / 2 + n % 2)),
        1 => word(),
    ]
    .boxed()
}

/// Counts: small ones, and those at the decoder's bounds (0, 1,
/// MAX_CELLS and one past it, the largest).
fn wire_count() -> BoxedStrategy<u32> {
    let edge = MAX_CELLS as u32;
    let edges = vec![0, 1, edge - 1, edge, edge + 1, u32::MAX];
    prop_oneof![4 => 1u32..64, 1 => prop::sample::select(edges)].boxed()
}

/// Messages of every kind, some out of the decoder's bounds.
fn wire_msg() -> BoxedStrategy<Msg> {
    let step = (0u32..100_000, 0u32..4).prop_map(|(job, step)| StepId { job, step });
    let cell = (step.clone(), 0u32..64).prop_map(|(step, rank)| Cell { step, rank });
    let cells = prop_oneof![
        8 => prop::collection::vec(prop::option::of(cell), 0..8),
        1 => prop::sample::select(vec![MAX_CELLS, MAX_CELLS + 1]).prop_map(|n| vec![None; n]),
    ];
    let end = prop_oneof![Just(TaskEnd::Exited), Just(TaskEnd::Released)];
    let (t, n, u) = (wire_text, wire_count, any::<u64>);
    prop_oneof![
        (t(), n(), t()).prop_map(|(node, pes, boot_id)| Msg::Hello { node, pes, boot_id }),
        (n(), t(), prop_oneof![Just(0u64), u()]).prop_map(|(node_index, policy, slot_ns)| {
            Msg::Welcome {
                node_index,
                policy,
                slot_ns,
            }
        }),
        t().prop_map(|reason| Msg::Refused { reason }),
        (u(), u()).prop_map(|(id, sent_ns)| Msg::Ping { id, sent_ns }),
        (u(), u(), u(), u()).prop_map(|(id, ping_sent_ns, received_ns, sent_ns)| Msg::Pong {
            id,
            ping_sent_ns,
            received_ns,
            sent_ns
        }),
        (u(), n(), u(), cells).prop_map(|(slot, row, switch_at_ns, cells)| Msg::Heartbeat {
            slot,
            row,
            switch_at_ns,
            cells
        }),
        (step.clone(), n(), n(), n()).prop_map(|(step, rank, size, pe)| Msg::TaskUp {
            step,
            rank,
            size,
            pe
        }),
        (step.clone(), n(), end).prop_map(|(step, rank, end)| Msg::TaskDown { step, rank, end }),
        (step, n(), prop::sample::select(vec!["cs", "f", "dc"]), u()).prop_map(
            |(step, rank, class, slot)| Msg::Classified {
                step,
                rank,
                class: class.into(),
                slot
            }
        ),
        (u(), u(), any::<i64>()).prop_map(|(slot, local_ns, mm_ns)| Msg::Enacted {
            slot,
            local_ns,
            mm_ns
        }),
        t().prop_map(|text| Msg::Notice { text }),
    ]
    .boxed()
}

/// One frame's payload: an envelope (mostly for the target's session and
/// sequence number), one with a field changed, added or an extreme number
/// put in, or a greeting.
fn wire_payload() -> BoxedStrategy<String> {
    let addr = |good: u64| prop_oneof![8 => Just(good), 1 => Just(good + 1), 1 => any::<u64>()];
    let envelope = (addr(WIRE_TO), addr(WIRE_SEQ), wire_msg()).prop_map(|(to, seq, msg)| {
        String::from_utf8_lossy(&encode_envelope(to, seq, &msg)).into_owned()
    });
    let field = prop::sample::select(vec![
        "\"x\":1",
        "\"to\":42",
        "\"seq\":1",
        "\"type\":\"hello\"",
        "\"type\":\"bogus\"",
        "\"v\":1",
    ]);
    let tweak = (
        envelope.clone(),
        field,
        number(),
        any::<prop::sample::Index>(),
        0u8..3,
    )
        .prop_map(|(mut text, field, number, at, how)| {
            let digits: Vec<usize> = text
                .match_indices(|c: char| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            match how {
                0 => text.insert_str(1, &format!("{field},")),
                1 if !digits.is_empty() => {
                    let start = digits[at.index(digits.len())];
                    let end = text[start..]
                        .find(|c: char| !c.is_ascii_digit())
                        .map_or(text.len(), |e| start + e);
                    text.replace_range(start..end, &number);
                }
                _ => {
                    // A cut inside a multi-byte character would panic.
                    let mut cut = at.index(text.len() + 1);
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                }
            }
            text
        });
    let greeting = (
        prop_oneof![Just("1".to_string()), number()],
        prop::sample::select(vec!["\"nm\"", "\"mm\"", "\"x\"", "1"]),
        number(),
    )
        .prop_map(|(v, role, nonce)| format!("{{\"v\":{v},\"role\":{role},\"nonce\":{nonce}}}"));
    prop_oneof![6 => envelope, 3 => tweak, 1 => greeting].boxed()
}

/// The `cosched-wire` grammar: a payload as it is (the target decodes the
/// whole input as one), or 1 to 3 framed (length-prefixed) payloads, now
/// and then with a false length.
pub fn cosched_wire() -> Grammar {
    let frame = (wire_payload(), prop::option::weighted(0.1, any::<u32>())).prop_map(|(p, len)| {
        let len = len.map_or(p.len() as u32, |l| l % (MAX_FRAME_BYTES as u32 + 2));
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(p.as_bytes());
        bytes
    });
    let strategy = prop_oneof![
        1 => wire_payload().prop_map(String::into_bytes),
        1 => prop::collection::vec(frame, 1..4).prop_map(|f| f.concat()),
    ];
    Grammar::new(strategy.boxed())
}
