//! Target `server_collection`: the server's collection decoders — the metadata record
//! (`strata_server::collections::meta::decode`), the sub-key parser (`subkey::parse`), the
//! stored-score decoder, the stream records (`stream::decode_*`) and the sub-key GC decision
//! (`gc::stale_against`).
//!
//! Properties: a metadata record that decodes re-encodes to exactly its input bytes and obeys
//! its invariants (size > 0 except for streams; for lists tail - head == size); a parsed
//! sub-key rebuilds to exactly its input; the score index encoding round-trips and keeps
//! order; a stream record that decodes re-encodes to its input; the GC decision never panics.
//! The input's first byte picks the collection type.

use strata_server::collections::{gc, meta, score, stream, subkey};
use strata_server::value::{encode, ValueType};

const TYPES: [ValueType; 8] = [
    ValueType::Hash,
    ValueType::List,
    ValueType::Set,
    ValueType::ZSet,
    ValueType::Stream,
    ValueType::Hash,
    ValueType::List,
    ValueType::Stream,
];

pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let t = TYPES[(pick & 7) as usize];
    if let Ok(m) = meta::decode(t, rest) {
        assert!(m.size > 0 || t == ValueType::Stream, "decoded a size of 0");
        if t == ValueType::List {
            assert_eq!(m.tail.checked_sub(m.head), Some(m.size), "list bounds");
        }
        assert_eq!(meta::encode(t, &m), rest, "metadata round trip");
        // As a stored value: the GC decides without panicking, and keeps the live version.
        let stored = encode(t, None, rest);
        assert!(!gc::stale_against(&stored, m.version, 0));
    }
    let _ = gc::stale_against(rest, 7, 1);
    if let Ok((node, pairs)) = stream::decode_entry(rest) {
        assert_eq!(stream::encode_entry(node, &pairs), rest, "stream entry round trip");
    }
    if let Ok(g) = stream::decode_group(rest) {
        assert_eq!(stream::encode_group(&g), rest, "stream group round trip");
    }
    if let Ok(p) = stream::decode_pending(rest) {
        assert_eq!(stream::encode_pending(&p), rest, "stream pending round trip");
    }
    if let Ok(c) = stream::decode_consumer(rest) {
        assert_eq!(stream::encode_consumer(&c), rest, "stream consumer round trip");
    }
    if let Some(sk) = subkey::parse(rest) {
        assert_eq!(
            subkey::element(sk.user_key, sk.version, sk.kind, sk.rest),
            rest,
            "sub-key round trip"
        );
    }
    if rest.len() >= 16 {
        let a = f64::from_le_bytes(rest[..8].try_into().unwrap_or_default());
        let b = f64::from_le_bytes(rest[8..16].try_into().unwrap_or_default());
        if !a.is_nan() && !b.is_nan() {
            let (ea, eb) = (score::encode(a), score::encode(b));
            let a0 = if a == 0.0 { 0.0 } else { a };
            assert_eq!(score::decode(ea).to_bits(), a0.to_bits(), "score round trip");
            if a < b {
                assert!(ea < eb, "score order");
            }
        }
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let m = meta::Meta {
        version: 1_700_000_000_000_000,
        size: 3,
        head: 0,
        tail: 0,
        ..Default::default()
    };
    let l = meta::Meta {
        version: 42,
        size: 2,
        head: meta::LIST_START - 1,
        tail: meta::LIST_START + 1,
        ..Default::default()
    };
    let s = meta::Meta {
        version: 43,
        size: 1,
        stream: meta::StreamMeta {
            last_id: stream::StreamId::new(5, 1),
            first_id: stream::StreamId::new(5, 1),
            entries_added: 2,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut out = vec![
        [&[0u8][..], &meta::encode(ValueType::Hash, &m)].concat(),
        [&[1u8][..], &meta::encode(ValueType::List, &l)].concat(),
        [&[2u8][..], &meta::encode(ValueType::Set, &m)].concat(),
        [&[3u8][..], &meta::encode(ValueType::ZSet, &m)].concat(),
        [&[4u8][..], &meta::encode(ValueType::Stream, &s)].concat(),
        [&[4u8][..], &stream::encode_entry(1, &[&b"f"[..], b"v"])].concat(),
        [
            &[4u8][..],
            &stream::encode_group(&stream::Group {
                entries_read: Some(3),
                ..Default::default()
            }),
        ]
        .concat(),
    ];
    out.push([&[0u8][..], &subkey::element(b"key", 9, subkey::ELEM, b"field")].concat());
    let mut idx = score::encode(-2.5).to_vec();
    idx.extend_from_slice(b"member");
    out.push([&[3u8][..], &subkey::element(b"z", 9, subkey::SCORE, &idx)].concat());
    out.push([&[3u8][..], &1.5f64.to_le_bytes()[..], &(-7.0f64).to_le_bytes()[..]].concat());
    out
}
