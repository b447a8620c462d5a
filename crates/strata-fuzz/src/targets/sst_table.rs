//! Target `sst_table`: a whole table file opened with `Table::open` over an in-memory file,
//! then iterated forward and backward, sought and probed with `get`.
//!
//! Flag byte: bit 0 = reseal every checksum first (footer, index, meta-index, meta and data
//! blocks), so mutations reach the block decoders. Properties: open and iteration never panic,
//! iteration terminates within a bound set by the file size; when both directions succeed and
//! the keys are strictly increasing, backward iteration is forward reversed; `seek` and `get`
//! never panic, and `get` only returns entries for the user key asked, at or below the snapshot.

use std::sync::Arc;

use bytes::Bytes;
use strata::iter::InternalIterator;
use strata::sst::reader::Table;
use strata::stats::EngineStats;
use strata::types::{compare_internal, internal_key, lookup_key, parse_internal_key};
use strata::Compression;

use crate::util::{build_table, real_db, reseal_table, split_flag, table_opts, MemFile};

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    if flag & 1 != 0 {
        reseal_table(&mut d);
    }
    let file = Arc::new(MemFile(Bytes::from(d)));
    let Ok(t) = Table::open(1, file, None, Arc::new(EngineStats::default())) else {
        return;
    };
    let t = Arc::new(t);
    let _ = t.properties();
    for r in t.range_tombstones().iter().take(16) {
        let _ = t.max_covering_tombstone(&r.start, u64::MAX);
    }
    // Every index entry may point at the same block: the bound is quadratic in the size.
    let n = rest.len() / 3 + 2;
    let bound = n.saturating_mul(n);
    let mut it = t.iter(false);
    it.seek_to_first();
    let mut fwd = Vec::new();
    while it.valid() {
        fwd.push(it.key().to_vec());
        assert!(fwd.len() <= bound, "forward table iteration does not terminate");
        it.next();
    }
    let fwd_ok = it.status().is_ok();
    let mut it = t.iter(false);
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push(it.key().to_vec());
        assert!(back.len() <= bound, "backward table iteration does not terminate");
        it.prev();
    }
    let back_ok = it.status().is_ok();
    for k in fwd.iter().take(8) {
        let Ok(p) = parse_internal_key(k) else {
            continue;
        };
        let snapshot = p.seq;
        if let Ok(Some((seq, _, _))) = t.get(&lookup_key(p.user_key, snapshot), p.user_key) {
            assert!(seq <= snapshot, "get returned an entry above the snapshot");
        }
    }
    let sorted = fwd
        .windows(2)
        .all(|w| compare_internal(&w[0], &w[1]).is_lt());
    if fwd_ok && back_ok && sorted {
        back.reverse();
        assert_eq!(back, fwd, "backward iteration is not forward reversed");
    }
    // A damaged index may send a seek to the wrong block (nothing checks that index keys bound
    // their blocks), so only termination and the absence of panics are checked here.
    let mut it = t.iter(false);
    for k in fwd.iter().take(32) {
        it.seek(k);
        let _ = it.valid();
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for t in real_db().tables.iter().take(2) {
        out.push([&[1u8][..], t].concat());
    }
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..60u64)
        .map(|i| {
            let kind = if i % 7 == 0 { 0 } else { 1 };
            let v = if kind == 0 { vec![] } else { vec![b'x'; (i % 40) as usize] };
            (internal_key(format!("k{:03}", i / 2).as_bytes(), 1000 - i, kind), v)
        })
        .collect();
    let tombs = vec![(b"k005".to_vec(), b"k009".to_vec(), 2000)];
    for (c, ri) in [
        (Compression::None, 1),
        (Compression::Lz4, 4),
        (Compression::Zstd(3), 16),
    ] {
        out.push([&[1u8][..], &build_table(&entries, &tombs, table_opts(c, ri))].concat());
    }
    out.push([&[1u8][..], &build_table(&[], &tombs, table_opts(Compression::None, 1))].concat());
    // A capacity table with a MashMeta index (format version 2).
    let mut o = table_opts(Compression::Lz4, 4);
    o.capacity_index = strata::sst::index::IndexKind::MashMeta;
    out.push([&[1u8][..], &build_table(&entries, &tombs, o)].concat());
    out
}
