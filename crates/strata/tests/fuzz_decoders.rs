//! Mutation fuzzing (on stable Rust) of every decoder of untrusted bytes: log files, write
//! batches, manifest records, blocks and whole tables. Valid inputs are mutated (bit flips,
//! byte overwrites, truncation, insertion, splicing) and fed to the decoders, which must
//! return data or an error and never panic, hang or allocate absurdly.
//! `STRATA_SEED` replays a seed; `STRATA_FUZZ_ITERS` sets iterations per target.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use common::{seeds, with_seed, Rng};
use strata::iter::InternalIterator;
use strata::range_del::RangeTombstone;
use strata::sst::block::{Block, BlockBuilder};
use strata::sst::{Table, TableBuilder, TableBuilderOptions};
use strata::stats::EngineStats;
use strata::storage::{LocalFs, RandomAccessFile, Storage};
use strata::types::{self, compare_internal};
use strata::version::{FileMeta, VersionEdit};
use strata::wal::{LogReader, LogWriter};
use strata::{Compression, WriteBatch};

struct MemFile(Bytes);

impl RandomAccessFile for MemFile {
    fn read_at(&self, offset: u64, len: usize) -> strata::Result<Bytes> {
        let end = (offset as usize).checked_add(len);
        match end {
            Some(e) if e <= self.0.len() => Ok(self.0.slice(offset as usize..e)),
            _ => Err(strata::Error::from(strata::error::ErrorRepr::Io {
                path: "mem".into(),
                source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short read"),
            })),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            v.push(rng.next_u64() as u8);
            continue;
        }
        let i = rng.below(v.len() as u64) as usize;
        match rng.below(6) {
            0 => v[i] ^= 1 << rng.below(8),
            1 => v[i] = rng.next_u64() as u8,
            2 => v.truncate(i),
            3 => v.insert(i, rng.next_u64() as u8),
            4 => {
                let n = rng.below(16) as usize;
                let j = rng.below(v.len() as u64) as usize;
                for k in 0..n.min(v.len() - i.max(j)) {
                    v[i + k] = v[j + k];
                }
            }
            _ => {
                let n = (rng.below(8) as usize).min(v.len() - i);
                v[i..i + n].fill(0xff);
            }
        }
    }
    v
}

fn iters() -> u64 {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

fn log_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.log");
    let mut w = LogWriter::new(LocalFs.create(&p).unwrap(), 1);
    for i in 0..40u32 {
        let mut b = WriteBatch::new();
        b.put(format!("k{i}"), vec![i as u8; (i as usize * 331) % 5000]);
        b.delete(format!("d{i}"));
        w.add_record(b.clone().encode_for_test(i as u64 + 1))
            .unwrap();
    }
    w.sync().unwrap();
    std::fs::read(&p).unwrap()
}

trait EncodeForTest {
    fn encode_for_test(self, seq: u64) -> &'static [u8];
}

impl EncodeForTest for WriteBatch {
    fn encode_for_test(self, seq: u64) -> &'static [u8] {
        // Round-trip through the public decoder to build the encoded record.
        let mut rec = Vec::new();
        rec.extend_from_slice(&seq.to_le_bytes());
        rec.extend_from_slice(&(self.len() as u32).to_le_bytes());
        for op in self.iter() {
            match op {
                strata::batch::BatchOp::Put(k, v) => {
                    rec.push(1);
                    push_lp(&mut rec, k);
                    push_lp(&mut rec, v);
                }
                strata::batch::BatchOp::Delete(k) => {
                    rec.push(0);
                    push_lp(&mut rec, k);
                }
                strata::batch::BatchOp::DeleteRange(s, e) => {
                    rec.push(2);
                    push_lp(&mut rec, s);
                    push_lp(&mut rec, e);
                }
                strata::batch::BatchOp::Merge(k, v) => {
                    rec.push(3);
                    push_lp(&mut rec, k);
                    push_lp(&mut rec, v);
                }
            }
        }
        let (s, b) = WriteBatch::decode(&rec).unwrap();
        assert_eq!((s, b.len()), (seq, self.len()));
        Box::leak(rec.into_boxed_slice())
    }
}

fn push_lp(v: &mut Vec<u8>, s: &[u8]) {
    let mut n = s.len() as u64;
    while n >= 0x80 {
        v.push((n as u8) | 0x80);
        n >>= 7;
    }
    v.push(n as u8);
    v.extend_from_slice(s);
}

fn table_bytes(compression: Compression) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.sst");
    let opts = TableBuilderOptions {
        data_block_hash_ratio: 0.75,
        block_size: 256,
        restart_interval: 4,
        bloom_bits_per_key: 10.0,
        compression,
        capacity_index: strata::sst::index::IndexKind::Block,
        bytes_per_sync: 0,
    };
    let mut tb = TableBuilder::new(LocalFs.create(&p).unwrap(), opts);
    for i in 0..300u32 {
        let k = types::internal_key(format!("key{i:05}").as_bytes(), 1000 - i as u64, 1);
        tb.add(
            &k,
            format!("value{i}-{}", "v".repeat(i as usize % 40)).as_bytes(),
        )
        .unwrap();
    }
    tb.add_range_tombstone(RangeTombstone::new("key00010", "key00020", 5));
    tb.finish().unwrap();
    std::fs::read(&p).unwrap()
}

fn exercise_table(bytes: Vec<u8>) {
    let stats = Arc::new(EngineStats::default());
    let Ok(t) = Table::open(1, Arc::new(MemFile(Bytes::from(bytes))), None, stats) else {
        return;
    };
    let t = Arc::new(t);
    let mut it = t.iter(false);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        n += 1;
        it.next();
    }
    let _ = it.status();
    it.seek_to_last();
    while it.valid() && n < 20_000 {
        n += 1;
        it.prev();
    }
    for i in (0..300u32).step_by(37) {
        let uk = format!("key{i:05}");
        let _ = t.get(&types::lookup_key(uk.as_bytes(), 5000), uk.as_bytes());
        let _ = t.max_covering_tombstone(uk.as_bytes(), 5000);
    }
}

fn run(seed: u64) {
    let mut rng = Rng::new(seed);
    let n = iters();

    let log = log_bytes();
    // Damaged logs are scanned for later valid records, the slowest decoder: fewer rounds.
    for _ in 0..n / 4 {
        let m = mutate(&mut rng, &log);
        for tail in [false, true] {
            let mut r = LogReader::new(&m, "fuzz.log", tail);
            let mut count = 0;
            while let Ok(Some(rec)) = r.next_record() {
                let _ = WriteBatch::decode(&rec);
                count += 1;
                assert!(count < 100_000, "reader does not terminate");
            }
        }
    }

    let mut b = WriteBatch::new();
    b.put("a", "1");
    b.delete_range("b", "c");
    b.delete("z");
    let rec = b.encode_for_test(7).to_vec();
    for _ in 0..n {
        let _ = WriteBatch::decode(&mutate(&mut rng, &rec));
    }

    let edit = VersionEdit {
        format: Some("strata.manifest.v1".into()),
        log_number: Some(4),
        next_file_number: Some(10),
        last_sequence: Some(99),
        num_levels: Some(7),
        deleted: vec![(1, 3)],
        added: vec![(
            2,
            FileMeta {
                id: 8,
                size: 4096,
                smallest: b"a".to_vec(),
                largest: b"q".to_vec(),
                largest_exclusive: true,
                smallest_seq: 1,
                largest_seq: 90,
                num_entries: 10,
                num_deletions: 2,
                num_range_deletions: 1,
                tier: strata::tier::Tier::Capacity,
            },
        )],
        run_cuts: vec![(3, 12, b"k".to_vec(), 13)],
        style: Some(strata::CompactionStyle::SplitForest),
        ..Default::default()
    }
    .encode();
    for _ in 0..n {
        let _ = VersionEdit::decode(&mutate(&mut rng, &edit));
    }

    let mut bb = BlockBuilder::new(3);
    for i in 0..50u32 {
        bb.add(
            &types::internal_key(format!("k{i:03}").as_bytes(), 9, 1),
            &[i as u8; 7],
        );
    }
    let block = bb.finish();
    for _ in 0..n {
        if let Ok(b) = Block::new(Bytes::from(mutate(&mut rng, &block))) {
            let mut it = b.iter(compare_internal);
            it.seek_to_first();
            let mut k = 0;
            while it.valid() && k < 1000 {
                it.next();
                k += 1;
            }
            it.seek(&types::lookup_key(b"k025", 9));
            it.seek_to_last();
            it.prev();
            let _ = it.status();
        }
    }

    for c in [Compression::None, Compression::Lz4, Compression::Zstd(3)] {
        let t = table_bytes(c);
        for _ in 0..n / 4 {
            exercise_table(mutate(&mut rng, &t));
        }
    }
}

#[test]
fn decoders_survive_mutated_input() {
    for seed in seeds(1) {
        with_seed("fuzz_decoders", seed, move || run(seed));
    }
}
