//! Criterion micro-benchmarks of the engine's building blocks: memtable insert and lookup,
//! block encode and decode, bloom filter probe, table point lookup, and reopening a database
//! whose WAL holds a memtable's worth of writes.
//!
//! `cargo bench -p strata --bench core`

use std::sync::Arc;

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use strata::cache::BlockCache;
use strata::iter::InternalIterator;
use strata::memtable::MemTable;
use strata::sst::block::{Block, BlockBuilder};
use strata::sst::filter::{BloomFilter, FilterBuilder};
use strata::sst::index::IndexKind;
use strata::sst::{Table, TableBuilder, TableBuilderOptions};
use strata::stats::EngineStats;
use strata::storage::{LocalFs, Storage};
use strata::types::{self, ValueKind};
use strata::Compression;

fn key(i: u64) -> Vec<u8> {
    // Random-looking 16-byte keys, as db_bench makes them.
    format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).into_bytes()
}

fn memtable(c: &mut Criterion) {
    let mut g = c.benchmark_group("memtable");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("insert_10k_100B", |b| {
        b.iter_batched(
            || Arc::new(MemTable::new(1)),
            |m| {
                for i in 0..10_000u64 {
                    m.add(i + 1, ValueKind::Put, &key(i), &[7u8; 100]);
                }
                m
            },
            BatchSize::SmallInput,
        )
    });
    // Large values (a Redis string, a document): the memtable's cost is mostly moving the
    // bytes into its arena.
    g.throughput(Throughput::Bytes(2_000 * 4_096));
    g.bench_function("insert_2k_4KiB", |b| {
        let value = vec![7u8; 4_096];
        b.iter_batched(
            || Arc::new(MemTable::new(1)),
            |m| {
                for i in 0..2_000u64 {
                    m.add(i + 1, ValueKind::Put, &key(i), &value);
                }
                m
            },
            BatchSize::SmallInput,
        )
    });
    g.throughput(Throughput::Elements(10_000));
    let m = MemTable::new(1);
    for i in 0..100_000u64 {
        m.add(i + 1, ValueKind::Put, &key(i), &[7u8; 100]);
    }
    // A memtable far larger than the caches, as a 64 MiB write buffer is: each step of a
    // search is a cache miss, which is what the search's prefetching overlaps.
    let big = MemTable::new(1);
    for i in 0..1_000_000u64 {
        big.add(i + 1, ValueKind::Put, &key(i), &[7u8; 40]);
    }
    g.throughput(Throughput::Elements(1));
    let mut next = 1_000_000u64;
    g.bench_function("insert_into_1m_40B", |b| {
        b.iter(|| {
            next += 1;
            big.add(next, ValueKind::Put, &key(next), &[7u8; 40]);
        })
    });
    // The same, a group at a time (a write batch's keys): their searches overlap.
    const N: u64 = strata::memtable::INSERT_GROUP as u64;
    g.throughput(Throughput::Elements(N));
    g.bench_function("insert_group_into_1m_40B", |b| {
        b.iter(|| {
            let keys: Vec<Vec<u8>> = (next + 1..=next + N).map(key).collect();
            let group: Vec<(u64, ValueKind, &[u8], &[u8])> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (next + 1 + i as u64, ValueKind::Put, &k[..], &[7u8; 40][..]))
                .collect();
            big.add_group(&group);
            next += N;
        })
    });
    // The same with the whole-key filter and point index every engine memtable has (1.3 MiB
    // filter, 2^21 slots: a 64 MiB write buffer's defaults): each insert also sets filter bits
    // and publishes to a slot, two more cache misses, which the group prefetches.
    let filtered = MemTable::with_filters(1, 1_342_177, 1 << 21);
    for i in 0..1_000_000u64 {
        filtered.add(i + 1, ValueKind::Put, &key(i), &[7u8; 40]);
    }
    let mut next_f = 1_000_000u64;
    g.bench_function("insert_group_into_1m_40B_filtered", |b| {
        b.iter(|| {
            let keys: Vec<Vec<u8>> = (next_f + 1..=next_f + N).map(key).collect();
            let group: Vec<(u64, ValueKind, &[u8], &[u8])> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    (
                        next_f + 1 + i as u64,
                        ValueKind::Put,
                        &k[..],
                        &[7u8; 40][..],
                    )
                })
                .collect();
            filtered.add_group(&group);
            next_f += N;
        })
    });
    drop(filtered);
    g.throughput(Throughput::Elements(1));
    let mut j = 0u64;
    g.bench_function("get_hit_1m", |b| {
        b.iter(|| {
            j = (j + 7919) % 1_000_000;
            black_box(big.get(&key(j), u64::MAX >> 8))
        })
    });
    drop(big);
    // With a point index (as `Options::memtable_point_index_ratio` gives every memtable):
    // hits cost a slot and an entry; absent keys a slot.
    let indexed = MemTable::with_filters(1, 0, 1 << 21);
    for i in 0..1_000_000u64 {
        indexed.add(i + 1, ValueKind::Put, &key(i), &[7u8; 40]);
    }
    g.bench_function("get_hit_1m_point_index", |b| {
        b.iter(|| {
            j = (j + 7919) % 1_000_000;
            black_box(indexed.get(&key(j), u64::MAX >> 8))
        })
    });
    g.bench_function("get_miss_1m_point_index", |b| {
        b.iter(|| {
            j = (j + 7919) % 1_000_000;
            black_box(indexed.get(&key(j + 5_000_000), u64::MAX >> 8))
        })
    });
    drop(indexed);
    let keys: Vec<Vec<u8>> = (0..100_000u64).map(key).collect();
    let mut i = 0usize;
    g.bench_function("get_hit_100k", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            black_box(m.get(&keys[i], u64::MAX >> 8))
        })
    });
    g.finish();
}

fn build_block(n: u64) -> Vec<u8> {
    let mut b = BlockBuilder::new(16);
    for i in 0..n {
        let k = types::internal_key(format!("key{i:016}").as_bytes(), i + 1, 1);
        b.add(&k, &[9u8; 100]);
    }
    b.finish()
}

fn block(c: &mut Criterion) {
    let mut g = c.benchmark_group("block");
    g.throughput(Throughput::Elements(32));
    g.bench_function("encode_32x100B", |b| b.iter(|| black_box(build_block(32))));
    let raw = Bytes::from(build_block(32));
    g.bench_function("decode_scan_32", |b| {
        b.iter(|| {
            let blk = Block::new(raw.clone()).unwrap();
            let mut it = blk.iter(types::compare_internal);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += it.value().len();
                it.next();
            }
            black_box(n)
        })
    });
    let blk = Block::new(raw.clone()).unwrap();
    let target = types::lookup_key(b"key0000000000000019", u64::MAX >> 8);
    g.throughput(Throughput::Elements(1));
    g.bench_function("seek", |b| {
        b.iter(|| {
            let mut it = blk.iter(types::compare_internal);
            it.seek(&target);
            black_box(it.valid())
        })
    });
    g.finish();
}

fn bloom(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom");
    g.throughput(Throughput::Elements(1));
    // 100k keys: a 125 KB filter (in L2); 2M keys: 2.5 MB (the filters of a few L0 tables).
    for (name, n) in [("", 100_000u64), ("_2m", 2_000_000)] {
        let mut fb = FilterBuilder::new(10.0);
        for i in 0..n {
            fb.add_key(&key(i));
        }
        let f = BloomFilter::new(Bytes::from(fb.finish())).unwrap();
        // Scattered keys, so consecutive probes touch unrelated parts of the filter.
        let hits: Vec<Vec<u8>> = (0..4096u64).map(|i| key(i * 7919 % n)).collect();
        let misses: Vec<Vec<u8>> = (0..4096u64).map(|i| key(n + 1 + i * 7919)).collect();
        let mut i = 0usize;
        g.bench_function(format!("probe_hit{name}"), |b| {
            b.iter(|| {
                i = (i + 1) & 4095;
                black_box(f.may_contain(&hits[i]))
            })
        });
        g.bench_function(format!("probe_miss{name}"), |b| {
            b.iter(|| {
                i = (i + 1) & 4095;
                black_box(f.may_contain(&misses[i]))
            })
        });
    }
    g.finish();
}

fn table(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.sst");
    let n = 200_000u64;
    let mut keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    keys.sort();
    let opts = TableBuilderOptions {
        data_block_hash_ratio: 0.75,
        block_size: 4096,
        restart_interval: 16,
        bloom_bits_per_key: 10.0,
        compression: Compression::Lz4,
        capacity_index: IndexKind::Block,
        bytes_per_sync: 0,
    };
    let mut tb = TableBuilder::new(LocalFs.create(&path).unwrap(), opts);
    for (i, k) in keys.iter().enumerate() {
        tb.add(&types::internal_key(k, i as u64 + 1, 1), &[5u8; 100])
            .unwrap();
    }
    tb.finish().unwrap();
    let stats = Arc::new(EngineStats::default());
    let cache = Arc::new(BlockCache::new(64 << 20));
    let t = Table::open(1, LocalFs.open(&path).unwrap(), Some(cache), stats).unwrap();
    let mut g = c.benchmark_group("table");
    g.throughput(Throughput::Elements(1));
    let lookups: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .map(|k| (types::lookup_key(k, u64::MAX >> 8), k.clone()))
        .collect();
    let missing: Vec<(Vec<u8>, Vec<u8>)> = (0..4096u64)
        .map(|i| format!("nokey{i}").into_bytes())
        .map(|k| (types::lookup_key(&k, u64::MAX >> 8), k))
        .collect();
    let mut i = 0usize;
    g.bench_function("point_lookup_hit_cached", |b| {
        b.iter(|| {
            i = (i + 7919) % lookups.len();
            let (lk, k) = &lookups[i];
            black_box(t.get(lk, k).unwrap())
        })
    });
    g.bench_function("point_lookup_miss", |b| {
        b.iter(|| {
            i = (i + 1) & 4095;
            let (lk, k) = &missing[i];
            black_box(t.get(lk, k).unwrap())
        })
    });
    g.finish();
}

/// `Db::open` of a database closed with 300k unflushed puts of 100 B in its WAL (one record
/// each, ~40 MiB of log; one 64 MiB memtable): keeping the replayed memtable (`avoid_flush_during_recovery`, the
/// default) against writing it to L0 before `open` returns. Each iteration opens a fresh copy
/// of the closed database; only `open` is timed (the close waits for the kept memtable's
/// background flush, untimed).
fn reopen(c: &mut Criterion) {
    use std::time::{Duration, Instant};
    let base = tempfile::tempdir().unwrap();
    let pristine = base.path().join("pristine");
    {
        let db = strata::Db::open(&pristine, strata::Options::default()).unwrap();
        // One put per write, as an unbatched writer logs them: one record per operation.
        for i in 0..300_000u64 {
            db.put(key(i), [7u8; 100]).unwrap();
        }
        db.close().unwrap();
    }
    let copy = |to: &std::path::Path| {
        let _ = std::fs::remove_dir_all(to);
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(&pristine).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    };
    let mut g = c.benchmark_group("reopen_300k_puts");
    g.sample_size(10);
    for (name, avoid) in [("keep_memtable", true), ("flush_to_l0", false)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let dir = base.path().join("db");
                    copy(&dir);
                    let opts = strata::Options {
                        avoid_flush_during_recovery: avoid,
                        ..strata::Options::default()
                    };
                    let t = Instant::now();
                    let db = strata::Db::open(&dir, opts).unwrap();
                    took += t.elapsed();
                    db.close().unwrap();
                }
                took
            })
        });
    }
    g.finish();
}

criterion_group!(benches, memtable, block, bloom, table, reopen);
criterion_main!(benches);
