//! The RocksMash §4.3 persistent-cache experiment: LAP DataCache vs the naive (RocksDB-style)
//! persistent cache vs none, with the capacity tier emulated at a fixed latency per request.
//!
//! ```text
//! cargo run --release --example lap_bench -- [--keys N] [--reads N] [--threads N]
//!     [--latency-ms MS] [--update-pct P] [--compression lz4|none] [--naive-files N] [--dir DIR]
//!     [--kinds lap,naive,none]   (add `foyer` when built with `--features foyer`) [--hotrap BOOL]
//! ```
//!
//! Loads `keys` records of 1 KiB (16-byte keys; values half random, half zeros, so LZ4 halves
//! them and blocks vary in size, as real ones do) into a tree whose levels 0..=5 live on the fast
//! tier and whose last level lives on a `file://` capacity tier (about 10% of the data stays
//! local), then for each distribution (uniform, zipfian 0.99 scrambled), cache kind (LAP, naive,
//! none) and cache size (10%, 20%, 30% of the data) reopens the database with an empty cache,
//! warms it with `reads` operations and measures `reads` more: the data-cache hit ratio and the
//! throughput. `--update-pct` mixes in updates (the compaction churn that LAP's invalidation
//! is designed for). The memory block cache is off so every capacity-tier block read meets the
//! persistent cache. The naive cache's files are 4 MiB (its default) unless `--naive-files N`
//! splits each cache size into `N` files (finer granularity: a stronger baseline). HotRAP is off
//! unless `--hotrap true`: it would bring hot records back to the fast tier, so the cache under
//! test would see fewer of the repeats it exists for (RocksMash has no HotRAP). Prints a
//! Markdown table.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
use strata::storage::object::{CapacityOptions, Emulation};
use strata::{Compression, Db, Options};

struct Args {
    keys: u64,
    reads: u64,
    threads: u64,
    latency_ms: u64,
    update_pct: u64,
    compression: Compression,
    naive_files: u64,
    dir: String,
    kinds: Vec<PersistentCacheKind>,
    hotrap: bool,
}

fn kind(name: &str) -> PersistentCacheKind {
    match name {
        "lap" => PersistentCacheKind::Lap,
        "naive" => PersistentCacheKind::Naive,
        "none" => PersistentCacheKind::None,
        #[cfg(feature = "foyer")]
        "foyer" => PersistentCacheKind::Foyer,
        k => panic!("--kinds takes lap, naive, none (and foyer with --features foyer), not {k}"),
    }
}

fn kind_name(k: PersistentCacheKind) -> &'static str {
    match k {
        PersistentCacheKind::Lap => "LAP",
        PersistentCacheKind::Naive => "naive",
        PersistentCacheKind::None => "none",
        #[cfg(feature = "foyer")]
        PersistentCacheKind::Foyer => "foyer",
    }
}

fn args() -> Args {
    let mut a = Args {
        keys: 100_000,
        reads: 20_000,
        threads: 32,
        latency_ms: 5,
        update_pct: 0,
        compression: Compression::Lz4,
        naive_files: 0,
        dir: "strata-data/lap-bench".into(),
        kinds: vec![
            PersistentCacheKind::Lap,
            PersistentCacheKind::Naive,
            PersistentCacheKind::None,
        ],
        hotrap: false,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i + 1 < v.len() {
        let n = || v[i + 1].parse::<u64>().expect("a number");
        match v[i].as_str() {
            "--keys" => a.keys = n(),
            "--reads" => a.reads = n(),
            "--threads" => a.threads = n(),
            "--latency-ms" => a.latency_ms = n(),
            "--update-pct" => a.update_pct = n(),
            "--naive-files" => a.naive_files = n(),
            "--dir" => a.dir = v[i + 1].clone(),
            "--kinds" => a.kinds = v[i + 1].split(',').map(kind).collect(),
            "--hotrap" => a.hotrap = v[i + 1].parse().expect("--hotrap true|false"),
            "--compression" => {
                a.compression = match v[i + 1].as_str() {
                    "lz4" => Compression::Lz4,
                    "none" => Compression::None,
                    c => panic!("--compression lz4|none, not {c}"),
                }
            }
            f => panic!("unknown flag {f}"),
        }
        i += 2;
    }
    a
}

/// Record `i`'s 1 KiB value: 512 pseudo-random bytes, then zeros.
fn value(i: u64) -> Vec<u8> {
    let mut r = Rng(i.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let mut v: Vec<u8> = (0..512).map(|_| r.next() as u8).collect();
    v.resize(1024, 0);
    v
}

fn key(i: u64) -> Vec<u8> {
    format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).into_bytes()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// YCSB's scrambled zipfian generator (Gray et al.'s rejection-free method).
struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Self {
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        }
    }
    fn sample(&self, r: &mut Rng) -> u64 {
        let u = r.unit();
        let uz = u * self.zetan;
        let rank = if uz < 1.0 {
            0
        } else if uz < 1.0 + 0.5f64.powf(self.theta) {
            1
        } else {
            (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
        };
        // Scramble so hot keys spread over the key space (and over tables).
        xxhash_rust::xxh3::xxh3_64(&rank.min(self.n - 1).to_le_bytes()) % self.n
    }
}

fn options(
    dir: &str,
    latency: Duration,
    kind: PersistentCacheKind,
    cache_bytes: u64,
    compression: Compression,
    naive_files: u64,
    hotrap: bool,
) -> Options {
    let defaults = PersistentCacheOptions::default();
    let mut c = CapacityOptions::new(format!(
        "file://{}",
        std::path::Path::new(dir)
            .join("capacity")
            .canonicalize()
            .unwrap()
            .display()
    ));
    c.emulation = Some(Emulation {
        latency,
        ..Default::default()
    });
    Options {
        capacity: Some(c),
        fast_levels: Some(5),
        max_bytes_for_level_base: 4 << 20,
        target_file_size_base: 8 << 20,
        write_buffer_size: 4 << 20,
        block_cache_capacity: 0,
        compression_per_level: vec![compression],
        persistent_cache: PersistentCacheOptions {
            kind,
            capacity: cache_bytes.max(1),
            file_size: match naive_files {
                0 => defaults.file_size,
                n => (cache_bytes / n).max(4096),
            },
            ..defaults
        },
        hotrap: strata::tier::hot::HotRapOptions {
            enabled: hotrap,
            ..Default::default()
        },
        ..Options::default()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut a = args();
    a.dir = format!(
        "{}/{}",
        a.dir,
        match a.compression {
            Compression::None => "none",
            _ => "lz4",
        }
    );
    let db_dir = std::path::Path::new(&a.dir).join("db");
    std::fs::create_dir_all(std::path::Path::new(&a.dir).join("capacity"))?;
    // No cache, no emulated latency: for loading and for measuring the data.
    let plain = || {
        options(
            &a.dir,
            Duration::ZERO,
            PersistentCacheKind::None,
            0,
            a.compression,
            0,
            a.hotrap,
        )
    };
    if !db_dir.join("CURRENT").exists() {
        eprintln!("loading {} records of 1 KiB ...", a.keys);
        let t = Instant::now();
        let db = Db::open(&db_dir, plain())?;
        let mut order: Vec<u64> = (0..a.keys).collect();
        let mut r = Rng(42);
        for i in (1..order.len()).rev() {
            order.swap(i, (r.next() % (i as u64 + 1)) as usize);
        }
        for chunk in order.chunks(100) {
            let mut b = strata::WriteBatch::new();
            for &i in chunk {
                b.put(key(i), value(i));
            }
            db.write(b)?;
        }
        db.flush()?;
        db.wait_for_compactions()?;
        eprintln!(
            "loaded in {:.1}s\n{}",
            t.elapsed().as_secs_f64(),
            db.stats()
        );
        db.close()?;
    }
    // Cache sizes are fractions of the data as stored (compressed, in tables).
    let data_bytes = {
        let db = Db::open(&db_dir, plain())?;
        let t = db.stats().tier;
        db.close()?;
        t.fast_table_bytes + t.capacity_table_bytes
    };
    eprintln!("data in tables: {:.1} MiB", data_bytes as f64 / 1048576.0);
    println!(
        "| distribution | cache | size | hit ratio | ops/s | capacity GETs | fast-tier share |"
    );
    println!("|---|---|---|---|---|---|---|");
    for dist in ["uniform", "zipfian"] {
        let zipf = Arc::new(Zipf::new(a.keys, 0.99));
        for pct in [10u64, 20, 30] {
            for &kind in &a.kinds {
                if kind == PersistentCacheKind::None && pct != 10 {
                    continue;
                }
                let _ = std::fs::remove_dir_all(db_dir.join("lap"));
                let _ = std::fs::remove_dir_all(db_dir.join("pcache"));
                let o = options(
                    &a.dir,
                    Duration::from_millis(a.latency_ms),
                    kind,
                    data_bytes * pct / 100,
                    a.compression,
                    a.naive_files,
                    a.hotrap,
                );
                let db = Db::open(&db_dir, o)?;
                let run = |n: u64, seed: u64| -> Result<f64, strata::Error> {
                    let done = Arc::new(AtomicU64::new(0));
                    let t = Instant::now();
                    std::thread::scope(|s| {
                        let mut hs = Vec::new();
                        for th in 0..a.threads {
                            let (db, zipf, done) = (db.clone(), zipf.clone(), done.clone());
                            hs.push(s.spawn(move || -> Result<(), strata::Error> {
                                let mut r = Rng(seed ^ ((th + 1) * 0x9e37_79b9));
                                while done.fetch_add(1, Ordering::Relaxed) < n {
                                    let i = match dist {
                                        "uniform" => r.next() % a.keys,
                                        _ => zipf.sample(&mut r),
                                    };
                                    if r.next() % 100 < a.update_pct {
                                        db.put(key(i), value(i))?;
                                    } else {
                                        db.get(key(i))?;
                                    }
                                }
                                Ok(())
                            }));
                        }
                        for h in hs {
                            h.join().expect("worker")?;
                        }
                        Ok(n as f64 / t.elapsed().as_secs_f64())
                    })
                };
                run(a.reads, 1)?;
                let before = db.stats().tier;
                let ops = run(a.reads, 2)?;
                let s = db.stats();
                let after = &s.tier;
                let hits = after.pcache_hits - before.pcache_hits;
                let misses = after.pcache_misses - before.pcache_misses;
                let gets = after.capacity_gets - before.capacity_gets;
                let ratio = if hits + misses > 0 {
                    hits as f64 / (hits + misses) as f64
                } else {
                    0.0
                };
                let fast_share = after.fast_table_bytes as f64
                    / (after.fast_table_bytes + after.capacity_table_bytes).max(1) as f64;
                println!(
                    "| {dist} | {} | {pct}% | {:.1}% | {:.0} | {gets} | {:.0}% |",
                    kind_name(kind),
                    ratio * 100.0,
                    ops,
                    fast_share * 100.0
                );
                db.close()?;
            }
        }
    }
    Ok(())
}
