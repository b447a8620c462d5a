//! MashMeta (RocksMash §3.3) against a block index + 10-bit bloom filter, with `fst` as a peer:
//! metadata bytes per table and point-lookup CPU, for `strata bench`'s key shapes (an 8-byte
//! big-endian index padded with '0' to 16 or 24 bytes; `sequential` = a dense random subset of
//! an index range, as one table of a level holds after `fillrandom`; `hashed` = indices scattered
//! over the whole key space). 100 000 keys of 100-byte values per table, 4 KiB blocks; the block
//! cache holds every block, so lookups measure CPU. Before timing, it prints each table's
//! metadata bytes and how many data blocks absent keys made each index read (the capacity-tier
//! requests a MetaCache'd table would send).
//!
//! `cargo bench -p strata --bench mashmeta`

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use strata::cache::BlockCache;
use strata::sst::index::IndexKind;
use strata::sst::{Table, TableBuilder, TableBuilderOptions};
use strata::stats::EngineStats;
use strata::storage::{LocalFs, Storage};
use strata::types;
use strata::Compression;

const KEYS: u64 = 100_000;
const VALUE: usize = 100;

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

fn key(v: u64, size: usize) -> Vec<u8> {
    let mut k = v.to_be_bytes().to_vec();
    k.resize(size, b'0');
    k
}

/// Sorted distinct keys of one table and as many absent keys among them.
fn key_set(size: usize, hashed: bool) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut v: Vec<u64> = (0..KEYS * 16 / 10)
        .map(|i| {
            let r = mix(i + 17);
            if hashed {
                r
            } else {
                5_000_000 + r % (KEYS * 16 / 10)
            }
        })
        .collect();
    v.sort();
    v.dedup();
    v.truncate(KEYS as usize);
    let keys: Vec<Vec<u8>> = v.iter().map(|&x| key(x, size)).collect();
    // strata bench's missing keys: the last padding byte is '.'.
    let missing = keys
        .iter()
        .map(|k| {
            let mut m = k.clone();
            *m.last_mut().expect("non-empty") = b'.';
            m
        })
        .collect();
    (keys, missing)
}

/// Every 97th key with its lookup key (1031 of 100 000).
fn probe_keys(keys: &[Vec<u8>]) -> Vec<(Vec<u8>, Vec<u8>)> {
    keys.iter()
        .step_by(97)
        .map(|k| (types::lookup_key(k, u64::MAX >> 8), k.clone()))
        .collect()
}

struct Built {
    table: Arc<Table>,
    stats: Arc<EngineStats>,
    meta_bytes: u64,
    index_bytes: u64,
    filter_bytes: u64,
}

fn build(dir: &std::path::Path, kind: IndexKind, keys: &[Vec<u8>]) -> Built {
    let p = dir.join(format!("{}-{}.sst", kind.name(), keys[0].len()));
    let opts = TableBuilderOptions {
        data_block_hash_ratio: 0.75,
        block_size: 4096,
        restart_interval: 16,
        bloom_bits_per_key: 10.0,
        compression: Compression::None,
        capacity_index: kind,
        bytes_per_sync: 0,
    };
    let mut b = TableBuilder::new(LocalFs.create(&p).expect("create"), opts);
    b.set_index(kind);
    b.capture_meta_tail();
    for (i, k) in keys.iter().enumerate() {
        b.add(&types::internal_key(k, 1 + i as u64, 1), &[7u8; VALUE])
            .expect("add");
    }
    let s = b.finish().expect("finish");
    let tail = s.meta_tail.as_ref().map_or(0, |t| t.1.len() as u64);
    let stats = Arc::new(EngineStats::default());
    let cache = Arc::new(BlockCache::new(256 << 20));
    let f = LocalFs.open(&p).expect("open");
    let table = Arc::new(Table::open(1, f, Some(cache), stats.clone()).expect("table"));
    Built {
        table,
        stats,
        meta_bytes: tail,
        index_bytes: s.props.index_size,
        filter_bytes: s.props.filter_size,
    }
}

fn lookups(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("mashmeta");
    g.sample_size(20)
        .measurement_time(std::time::Duration::from_secs(3))
        .warm_up_time(std::time::Duration::from_secs(1));
    eprintln!(
        "{:>4} {:>10} {:>9} {:>12} {:>10} {:>10} {:>10} {:>14}",
        "key", "order", "index", "meta bytes", "index", "filter", "B/key", "miss reads"
    );
    for size in [16usize, 24] {
        for hashed in [false, true] {
            let order = if hashed { "hashed" } else { "sequential" };
            let (keys, missing) = key_set(size, hashed);
            let fst_bytes = {
                let mut b = fst::MapBuilder::memory();
                for (i, k) in keys.iter().enumerate() {
                    b.insert(k, (i / 35) as u64).expect("fst insert");
                }
                b.into_inner().expect("fst")
            };
            let fst_map = fst::Map::new(fst_bytes).expect("fst map");
            for kind in [IndexKind::Block, IndexKind::MashMeta] {
                let t = build(dir.path(), kind, &keys);
                // Warm the block cache, then count the data blocks absent keys read.
                for k in &keys {
                    let l = types::lookup_key(k, u64::MAX >> 8);
                    assert!(t.table.get(&l, k).expect("get").is_some());
                }
                let blocks_read = || {
                    use std::sync::atomic::Ordering::Relaxed;
                    t.stats.block_cache_hits.load(Relaxed) + t.stats.block_reads.load(Relaxed)
                };
                let before = blocks_read();
                for k in &missing {
                    let l = types::lookup_key(k, u64::MAX >> 8);
                    assert!(t.table.get(&l, k).expect("get").is_none());
                }
                let after = blocks_read();
                eprintln!(
                    "{:>4} {:>10} {:>9} {:>12} {:>10} {:>10} {:>10.2} {:>14}",
                    size,
                    order,
                    kind.name(),
                    t.meta_bytes,
                    t.index_bytes,
                    t.filter_bytes,
                    (t.index_bytes + t.filter_bytes) as f64 / keys.len() as f64,
                    after - before
                );
                let table = t.table.clone();
                let probes = probe_keys(&keys);
                let gets = |b: &mut criterion::Bencher, probes: &[(Vec<u8>, Vec<u8>)]| {
                    b.iter(|| {
                        for (l, k) in probes {
                            black_box(table.get(l, k).expect("get"));
                        }
                    })
                };
                g.bench_function(format!("hit/{}/{size}B/{order}", kind.name()), |b| {
                    gets(b, &probes)
                });
                g.bench_function(format!("index/{}/{size}B/{order}", kind.name()), |b| {
                    let mut cur = table.index().cursor();
                    b.iter(|| {
                        for (l, _) in &probes {
                            cur.seek(l);
                            black_box(cur.valid());
                        }
                    })
                });
                let absent = probe_keys(&missing);
                g.bench_function(format!("miss/{}/{size}B/{order}", kind.name()), |b| {
                    gets(b, &absent)
                });
            }
            eprintln!(
                "{:>4} {:>10} {:>9} {:>12} {:>10} {:>10} {:>10.2} {:>14}",
                size,
                order,
                "fst",
                fst_map.as_fst().size(),
                fst_map.as_fst().size(),
                0,
                fst_map.as_fst().size() as f64 / keys.len() as f64,
                "-"
            );
            let probes: Vec<Vec<u8>> = keys.iter().step_by(97).cloned().collect();
            g.bench_function(format!("index/fst/{size}B/{order}"), |b| {
                b.iter(|| {
                    for k in &probes {
                        black_box(fst_map.get(k));
                    }
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
