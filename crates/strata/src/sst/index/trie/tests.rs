//! MashMeta against a sorted `Vec` oracle: exact membership, ranks and blocks on random key
//! sets (shared prefixes, empty keys, binary keys, prefixes of other keys), the paper's example,
//! and damaged encodings. Seeded (`STRATA_SEED` replays a run).

use strata_test_support::{seed, Rng};

use super::*;

/// Builds a trie over `keys` (sorted, distinct), `per_block` keys per data block, each key
/// with `versions[i]` versions (so a key's versions may continue into the next block).
fn build(keys: &[Vec<u8>], per_block: usize) -> (MashMeta, Vec<usize>) {
    let mut b = MashMetaBuilder::new();
    let mut key_block = Vec::new();
    let mut in_block = 0;
    let (mut offset, mut blocks) = (0, 0);
    for k in keys {
        b.add(k);
        b.add(k); // a second version of the same key is ignored
        key_block.push(blocks);
        in_block += 1;
        if in_block == per_block {
            let size = 100 + (offset % 7);
            b.finish_block(BlockHandle { offset, size });
            offset += size + 5;
            blocks += 1;
            in_block = 0;
        }
    }
    if in_block > 0 || keys.is_empty() {
        b.finish_block(BlockHandle { offset, size: 50 });
    }
    let enc = b.finish();
    let m = MashMeta::decode(&enc).expect("a built block decodes");
    assert_eq!(m.encoded_len(), enc.len());
    (m, key_block)
}

fn check(keys: &[Vec<u8>], per_block: usize, probes: &[Vec<u8>]) {
    let (m, key_block) = build(keys, per_block);
    assert_eq!(m.num_keys(), keys.len());
    assert_eq!(m.keys(), keys, "keys round-trip");
    for (r, k) in keys.iter().enumerate() {
        assert_eq!(m.probe(k), Probe::Found(r), "key {k:?}");
        assert_eq!(m.find_block(k), Some(key_block[r]), "block of {k:?}");
    }
    for p in probes {
        let want = match keys.binary_search(p) {
            Ok(r) => Probe::Found(r),
            Err(r) => Probe::Absent(r),
        };
        assert_eq!(m.probe(p), want, "probe {p:?} in {keys:?}");
        let seek = keys.partition_point(|k| k < p);
        assert_eq!(m.seek_block(p), key_block.get(seek).copied(), "seek {p:?}");
    }
}

fn random_key(rng: &mut Rng, alphabet: u64, max_len: usize) -> Vec<u8> {
    let len = rng.index(max_len + 1);
    (0..len).map(|_| b'a' + rng.below(alphabet) as u8).collect()
}

#[test]
fn paper_example() {
    let keys: Vec<Vec<u8>> = ["hello", "hunda", "hundred", "hunk", "huntee", "hunter"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let probes: Vec<Vec<u8>> = [
        "", "h", "hun", "hund", "hundreds", "hunte", "huntez", "z", "a",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    check(&keys, 2, &probes);
    let (m, _) = build(&keys, 2);
    assert_eq!(
        m.find_block(b"hundred"),
        Some(1),
        "the paper's second block"
    );
}

#[test]
fn small_and_degenerate_sets() {
    let probes: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], b"a".to_vec(), vec![255; 3]];
    check(&[], 4, &probes);
    check(&[vec![]], 4, &probes);
    check(&[vec![], vec![0]], 1, &probes);
    check(&[b"a".to_vec()], 4, &probes);
    check(&[vec![0], vec![0, 0], vec![0, 0, 0]], 1, &probes);
    check(
        &[b"ab".to_vec(), b"abc".to_vec(), b"abd".to_vec()],
        2,
        &probes,
    );
    check(&[vec![255], vec![255, 255]], 1, &probes);
    // A long shared chain beyond the prefix: built without recursion.
    let long: Vec<Vec<u8>> = vec![vec![1], [vec![1], vec![7; 100_000]].concat(), vec![2]];
    check(&long, 1, &probes);
}

#[test]
fn random_sets_match_a_sorted_oracle() {
    let seed = seed("mashmeta random sets");
    let mut rng = Rng::new(seed);
    for round in 0..300 {
        let alphabet = [2, 4, 26, 256][round % 4];
        let max_len = [3, 8, 24][round % 3];
        let n = rng.index(400);
        let mut keys: Vec<Vec<u8>> = (0..n)
            .map(|_| random_key(&mut rng, alphabet.min(256 - 97), max_len))
            .collect();
        if alphabet == 256 {
            for k in &mut keys {
                for b in k.iter_mut() {
                    *b = rng.below(256) as u8;
                }
            }
        }
        keys.sort();
        keys.dedup();
        let mut probes: Vec<Vec<u8>> = (0..200)
            .map(|_| random_key(&mut rng, alphabet.min(159), max_len + 1))
            .collect();
        // Near misses: each key with a byte added, removed or bumped.
        for k in keys.iter().take(50) {
            probes.push([k.clone(), vec![0]].concat());
            if let Some((last, head)) = k.split_last() {
                probes.push(head.to_vec());
                probes.push([head.to_vec(), vec![last.wrapping_add(1)]].concat());
            }
        }
        check(&keys, 1 + rng.index(8), &probes);
    }
}

#[test]
fn fixed_length_keys_share_their_tail_once() {
    // strata bench's keys: 8-byte big-endian index, then '0' padding.
    let seed = seed("mashmeta fixed length");
    let mut rng = Rng::new(seed);
    for round in 0..100 {
        let len = 8 + rng.index(17);
        let base = rng.below(1 << 40);
        let mut idx: Vec<u64> = (0..1 + rng.index(500))
            .map(|_| base + rng.below(5000))
            .collect();
        idx.sort();
        idx.dedup();
        let key = |i: u64| {
            let mut k = i.to_be_bytes().to_vec();
            k.resize(len, b'0');
            k
        };
        let keys: Vec<Vec<u8>> = idx.iter().map(|&i| key(i)).collect();
        let mut probes: Vec<Vec<u8>> = (0..100).map(|_| key(base + rng.below(5100))).collect();
        for k in keys.iter().take(30) {
            let mut m = k.clone();
            *m.last_mut().unwrap() = b'.'; // strata bench's missing key
            probes.push(m);
            let mut z = k.clone();
            *z.last_mut().unwrap() = b'1';
            probes.push(z);
            probes.push(k[..len - 1].to_vec());
            probes.push([k.clone(), vec![0]].concat());
        }
        check(&keys, 1 + round % 40, &probes);
        if keys.len() > 100 {
            let (m, _) = build(&keys, 40);
            // The padding is stored once: well under the 8 bytes of index per key.
            assert!(
                m.encoded_len() < keys.len() * 4,
                "{} bytes",
                m.encoded_len()
            );
        }
    }
}

#[test]
fn decimal_keys_in_one_table_are_compact() {
    // 8192 keys from a dense numeric range, as one table of a level holds them: the trie is a
    // small fraction of the keys' bytes (16 B each).
    let keys: Vec<Vec<u8>> = (0..8192u64)
        .map(|i| format!("{:016}", 1_000_000 + i * 3).into_bytes())
        .collect();
    let (m, _) = build(&keys, 4);
    let per_key = m.encoded_len() as f64 / keys.len() as f64;
    assert!(per_key < 3.0, "{per_key} bytes per key");
    check(
        &keys,
        4,
        &[b"0000000001000001".to_vec(), b"0000000001024573".to_vec()],
    );
}

#[test]
fn damaged_blocks_are_corruption_never_panics() {
    let seed = seed("mashmeta damage");
    let mut rng = Rng::new(seed);
    let keys: Vec<Vec<u8>> = (0..300u32)
        .map(|i| format!("key{:05}", i * 7).into_bytes())
        .collect();
    let mut b = MashMetaBuilder::new();
    for (i, k) in keys.iter().enumerate() {
        b.add(k);
        if i % 5 == 4 {
            b.finish_block(BlockHandle {
                offset: i as u64 * 100,
                size: 95,
            });
        }
    }
    b.finish_block(BlockHandle {
        offset: 30_000,
        size: 95,
    });
    let good = b.finish();
    for _ in 0..3000 {
        let mut bad = good.clone();
        match rng.below(3) {
            0 => {
                let i = rng.index(bad.len());
                bad[i] ^= 1 << rng.below(8);
            }
            1 => bad.truncate(rng.index(bad.len())),
            _ => {
                let i = rng.index(bad.len());
                bad.insert(i, rng.below(256) as u8);
            }
        }
        // Either rejected, or a structure whose queries stay in bounds.
        if let Ok(m) = MashMeta::decode(&bad) {
            for k in keys.iter().step_by(17) {
                if let Some(b) = m.find_block(k) {
                    assert!(b < m.num_blocks());
                }
                let _ = m.seek_block(k);
            }
            let _ = m.keys();
        }
    }
    assert!(MashMeta::decode(&[2]).unwrap_err().is_corruption());
    assert!(MashMeta::decode(&[]).unwrap_err().is_corruption());
}

/// A whole table with a MashMeta index reads like the same entries with a block index: gets at
/// every snapshot, forward and backward scans, seeks and seeks-for-prev, with many versions per
/// key so that versions of one key span data blocks.
#[test]
fn tables_read_the_same_with_either_index() {
    use std::sync::Arc;

    use crate::iter::InternalIterator;
    use crate::sst::index::IndexKind;
    use crate::sst::{Table, TableBuilder, TableBuilderOptions};
    use crate::stats::EngineStats;
    use crate::storage::{LocalFs, Storage};
    use crate::types::{self, ValueKind};
    use crate::Compression;

    let seed = seed("mashmeta tables");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut seq = 10_000u64;
    for i in 0..400u64 {
        let k = format!("k{:06}", i * 3).into_bytes();
        for _ in 0..1 + rng.index(if i % 50 == 0 { 60 } else { 3 }) {
            let kind = if rng.one_in(5) {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            entries.push((
                types::internal_key(&k, seq, kind as u8),
                vec![b'v'; rng.index(40)],
            ));
            seq -= 1;
        }
    }
    let open = |kind: IndexKind| {
        let p = dir.path().join(format!("{}.sst", kind.name()));
        let opts = TableBuilderOptions {
            data_block_hash_ratio: 0.75,
            block_size: 200,
            restart_interval: 4,
            bloom_bits_per_key: 10.0,
            compression: Compression::None,
            capacity_index: kind,
            bytes_per_sync: 0,
        };
        let mut b = TableBuilder::new(LocalFs.create(&p).unwrap(), opts);
        b.set_index(kind);
        for (k, v) in &entries {
            b.add(k, v).unwrap();
        }
        b.finish().unwrap();
        let f = LocalFs.open(&p).unwrap();
        Arc::new(Table::open(1, f, None, Arc::new(EngineStats::default())).unwrap())
    };
    let (block, trie) = (open(IndexKind::Block), open(IndexKind::MashMeta));
    assert!(matches!(
        trie.index(),
        crate::sst::index::TableIndex::Trie(_)
    ));
    let scan = |t: &Arc<Table>, back: bool| {
        let mut it = t.iter(false);
        let mut out = Vec::new();
        if back {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        while it.valid() {
            out.push(it.key().to_vec());
            if back {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().unwrap();
        out
    };
    let all: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
    assert_eq!(scan(&trie, false), all);
    let mut rev = all.clone();
    rev.reverse();
    assert_eq!(scan(&trie, true), rev);
    for _ in 0..3000 {
        let uk = format!("k{:06}", rng.index(1300)).into_bytes();
        let snap = 10_000 - rng.below(entries.len() as u64 + 10);
        let lookup = types::lookup_key(&uk, snap);
        assert_eq!(
            trie.get(&lookup, &uk).unwrap(),
            block.get(&lookup, &uk).unwrap(),
            "get {} at {snap}",
            String::from_utf8_lossy(&uk)
        );
        let (mut a, mut b) = (trie.iter(false), block.iter(false));
        let forward = rng.one_in(2);
        if forward {
            a.seek(&lookup);
            b.seek(&lookup);
        } else {
            a.seek_for_prev(&lookup);
            b.seek_for_prev(&lookup);
        }
        for step in 0..6 {
            let ctx = format!("step {step} seek (forward {forward}) to {lookup:?}");
            assert_eq!(a.valid(), b.valid(), "{ctx}");
            if !a.valid() {
                break;
            }
            assert_eq!(a.key(), b.key(), "{ctx}");
            if step % 2 == 0 {
                a.prev();
                b.prev();
            } else {
                a.next();
                b.next();
            }
        }
    }
}

/// `IndexKind::Auto` writes the trie for keys with shared prefixes and the block index + bloom
/// filter for high-entropy keys, whichever is smaller, and either reads back.
#[test]
fn auto_picks_the_smaller_index() {
    use std::sync::Arc;

    use crate::sst::index::{IndexKind, TableIndex};
    use crate::sst::{Table, TableBuilder, TableBuilderOptions};
    use crate::stats::EngineStats;
    use crate::storage::{LocalFs, Storage};
    use crate::types;
    use crate::Compression;

    let dir = tempfile::tempdir().unwrap();
    for hashed in [false, true] {
        let mut keys: Vec<Vec<u8>> = (0..20_000u64)
            .map(|i| {
                let v = if hashed {
                    i.wrapping_mul(0x9e3779b97f4a7c15)
                } else {
                    1_000_000 + i * 2
                };
                let mut k = v.to_be_bytes().to_vec();
                k.resize(16, b'0');
                k
            })
            .collect();
        keys.sort();
        let p = dir.path().join(format!("{hashed}.sst"));
        let opts = TableBuilderOptions {
            data_block_hash_ratio: 0.0,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: Compression::None,
            capacity_index: IndexKind::Auto,
            bytes_per_sync: 0,
        };
        let mut b = TableBuilder::new(LocalFs.create(&p).unwrap(), opts);
        b.set_index(IndexKind::Auto);
        for (i, k) in keys.iter().enumerate() {
            b.add(&types::internal_key(k, i as u64 + 1, 1), &[1u8; 100])
                .unwrap();
        }
        let s = b.finish().unwrap();
        let t = Table::open(
            1,
            LocalFs.open(&p).unwrap(),
            None,
            Arc::new(EngineStats::default()),
        )
        .unwrap();
        match t.index() {
            TableIndex::Trie(_) => {
                assert!(
                    !hashed,
                    "a trie over hashed keys is larger than index + filter"
                );
                assert_eq!((s.props.index_type, s.props.filter_size), (1, 0));
            }
            TableIndex::Blocks(_) => {
                assert!(hashed, "sequential keys should get the trie");
                assert!(s.props.filter_size > 0);
            }
        }
        for k in keys.iter().step_by(101) {
            let l = types::lookup_key(k, u64::MAX >> 8);
            assert!(t.get(&l, k).unwrap().is_some());
        }
    }
}

/// Found in review: a block declaring keys of one length whose trie holds middles of different
/// lengths ("a" and "ab", the first ending at an inner node) decoded, then listed keys out of
/// order and probed them wrongly. It is corruption now.
#[test]
fn fixed_length_trie_with_keys_of_other_lengths_is_corruption() {
    let bytes = [
        1, 2, 3, 1, 0, // version, keys, nodes, blocks, prefix length
        3, 1, b'z', // fixed length 3, common suffix "z"
        0, 2, 0, // suffix bytes, label bytes, dense nodes
        0x0b, b'a', b'b', 0x06, 0x03, 0, 10,
    ];
    let e = MashMeta::decode(&bytes).unwrap_err();
    assert!(e.to_string().contains("wrong length"), "{e}");
    // The same shape without a fixed length is a valid trie of "a" and "ab".
    let mut ok = bytes.to_vec();
    ok.splice(5..8, [0]);
    let m = MashMeta::decode(&ok).unwrap();
    assert_eq!(m.keys(), vec![b"a".to_vec(), b"ab".to_vec()]);
    assert_eq!(m.probe(b"ab"), Probe::Found(1));
}

/// `inspect::for_each_entry` (and so `strata inspect verify`) checks a trie against the data: a
/// trie of other keys with the same shape, sealed with a valid checksum, is reported.
#[test]
fn verify_catches_a_trie_that_disagrees_with_the_data() {
    use std::sync::Arc;

    use crate::sst::format::{Footer, FOOTER_SIZE};
    use crate::sst::index::IndexKind;
    use crate::sst::{Table, TableBuilder, TableBuilderOptions};
    use crate::stats::EngineStats;
    use crate::storage::{LocalFs, Storage};
    use crate::types;
    use crate::Compression;

    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.sst");
    let opts = TableBuilderOptions {
        data_block_hash_ratio: 0.75,
        block_size: 256,
        restart_interval: 4,
        bloom_bits_per_key: 10.0,
        compression: Compression::None,
        capacity_index: IndexKind::MashMeta,
        bytes_per_sync: 0,
    };
    let mut b = TableBuilder::new(LocalFs.create(&p).unwrap(), opts);
    b.set_index(IndexKind::MashMeta);
    let key = |c: u8, i: u32| format!("{}{i:04}", c as char).into_bytes();
    for i in 0..200 {
        b.add(
            &types::internal_key(&key(b'a', i), 1000 + i as u64, 1),
            &[9; 30],
        )
        .unwrap();
    }
    b.finish().unwrap();
    let open = || {
        let t = Table::open(
            1,
            LocalFs.open(&p).unwrap(),
            None,
            Arc::new(EngineStats::default()),
        );
        Arc::new(t.unwrap())
    };
    crate::inspect::for_each_entry(&open(), None, |_| true).expect("a sound table verifies");

    // The same trie shape over keys starting with 'b', with the same blocks.
    let mut bytes = std::fs::read(&p).unwrap();
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_SIZE..], bytes.len() as u64).unwrap();
    let (off, len) = (footer.index.offset as usize, footer.index.size as usize);
    let m = MashMeta::decode(&bytes[off..off + len]).unwrap();
    let mut other = MashMetaBuilder::new();
    for (r, k) in m.keys().iter().enumerate() {
        while other.num_blocks() < m.block_of_key(r) {
            other.finish_block(m.block(other.num_blocks()));
        }
        other.add(&[&[b'b'][..], &k[1..]].concat());
    }
    while other.num_blocks() < m.num_blocks() {
        other.finish_block(m.block(other.num_blocks()));
    }
    let forged = other.finish();
    assert_eq!(forged.len(), len, "same shape, same length");
    bytes[off..off + len].copy_from_slice(&forged);
    let crc = crate::wal::mask_crc(crc32c::crc32c_append(crc32c::crc32c(&forged), &[0]));
    bytes[off + len + 1..off + len + 5].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let e = crate::inspect::for_each_entry(&open(), None, |_| true).unwrap_err();
    assert!(e.to_string().contains("disagrees with the data"), "{e}");
}
