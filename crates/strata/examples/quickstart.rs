//! Quickstart, the README's main job: a tiered database on embedded defaults. The fast tier is
//! `./strata-data/quickstart/db` and the capacity tier a `file://` directory beside it
//! (`./strata-data/quickstart/capacity`, standing in for S3). It loads 1M keys (about 120 MB),
//! lets compaction push most of them down to the capacity tier, prints where the data lives,
//! then reads a skewed workload (90% of reads on 1% of the keys) three times and prints the
//! fast-tier hit rate of each round as HotRAP brings the hot records back to the fast tier.
//!
//! `cargo run --release --example quickstart [DIR] [NUM_KEYS]` (an existing DIR is replaced).

use std::path::Path;
use std::time::Instant;

use strata::storage::object::CapacityOptions;
use strata::{Db, DbStats, Options, ReadOptions, WriteBatch};

/// Key `i` of `n`, scattered over the key space (hashed), as a benchmark's keys are.
fn key(i: u64, n: u64) -> String {
    format!(
        "user{:012}",
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % (n * 10)
    )
}

/// The 100-byte value of key `i`: its number, then hex digits of hashes of it (so the
/// tables do not compress to nothing, as real values would not).
fn value(i: u64) -> String {
    let mut v = format!("{i:012}:");
    let mut h = Rng(i);
    while v.len() < 100 {
        v.push_str(&format!("{:016x}", h.next()));
    }
    v.truncate(100);
    v
}

/// SplitMix64: a small deterministic generator for the read workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn placement(s: &DbStats) -> String {
    let (fast, cap) = (s.tier.fast_table_bytes, s.tier.capacity_table_bytes);
    let levels: Vec<String> = s
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| format!("L{} {} tables {:.1} MiB", l.level, l.files, mib(l.bytes)))
        .collect();
    format!(
        "fast tier {:.1} MiB, capacity tier {:.1} MiB ({:.0}% on capacity); {}",
        mib(fast),
        mib(cap),
        100.0 * cap as f64 / (fast + cap).max(1) as f64,
        levels.join(", ")
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut args = std::env::args().skip(1);
    let root = args
        .next()
        .unwrap_or_else(|| "strata-data/quickstart".into());
    let n: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    if Path::new(&root).exists() {
        std::fs::remove_dir_all(&root)?;
    }
    std::fs::create_dir_all(&root)?;
    let root = std::fs::canonicalize(&root)?;
    let capacity_url = format!("file://{}", root.join("capacity").display());
    // Small memtables and a small base level so that a quickstart-sized database has the
    // shape of a big one: a few levels, the last (about 90% of the bytes) on the capacity tier.
    let options = || Options {
        capacity: Some(CapacityOptions::new(capacity_url.clone())),
        write_buffer_size: 4 << 20,
        target_file_size_base: 4 << 20,
        max_bytes_for_level_base: 8 << 20,
        ..Options::default()
    };
    let db = Db::open(root.join("db"), options())?;
    println!(
        "opened {} (capacity tier {capacity_url})",
        root.join("db").display()
    );

    let t = Instant::now();
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.put(key(i, n), value(i));
        if batch.len() == 100 {
            db.write(std::mem::take(&mut batch))?;
        }
    }
    db.write(batch)?;
    db.flush()?;
    db.wait_for_compactions()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "loaded {n} keys of 100-byte values in {secs:.1}s ({:.0} keys/s), compactions settled",
        n as f64 / secs
    );
    let s = db.stats();
    println!("where the data lives: {}", placement(&s));
    assert!(
        n < 100_000 || s.tier.capacity_table_bytes > s.tier.fast_table_bytes,
        "most of the data must be on the capacity tier"
    );

    // Skewed reads: 90% go to the hottest 1% of the keys, 10% anywhere.
    let hot = (n / 100).max(1);
    let reads = (n / 5).max(1);
    let mut rng = Rng(42);
    for round in 1..=3 {
        let before = db.stats();
        let t = Instant::now();
        let mut found = 0u64;
        for _ in 0..reads {
            let r = rng.next();
            let i = if r % 10 < 9 {
                (r >> 8) % hot
            } else {
                (r >> 8) % n
            };
            if db.get(key(i, n))?.as_deref() == Some(value(i).as_bytes()) {
                found += 1;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(found, reads, "every read must find the value written");
        let after = db.stats();
        let (fast, cap) = match (&before.hotrap, &after.hotrap) {
            (Some(b), Some(a)) => (
                a.reads_fast - b.reads_fast,
                a.reads_capacity - b.reads_capacity,
            ),
            _ => (0, 0),
        };
        println!(
            "skewed reads, round {round}: {reads} reads in {secs:.2}s ({:.0} reads/s); \
             fast-tier hit rate {:.1}% ({fast} served by the fast tier or memory, {cap} by the capacity tier)",
            reads as f64 / secs,
            100.0 * fast as f64 / (fast + cap).max(1) as f64
        );
    }

    let t = Instant::now();
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    let mut scanned = 0u64;
    while it.valid() {
        scanned += 1;
        it.next();
    }
    it.status()?;
    assert_eq!(scanned, n, "a full scan sees every key");
    println!(
        "scanned {scanned} keys across both tiers in {:.2}s",
        t.elapsed().as_secs_f64()
    );

    db.wait_for_compactions()?;
    let s = db.stats();
    println!(
        "after the reads: {}; {} capacity-tier GETs",
        placement(&s),
        s.tier.capacity_gets
    );
    if let Some(h) = &s.hotrap {
        println!(
            "HotRAP: {} records promoted by flush, {} by compaction, {} retained; hot set {:.1} MiB",
            h.promoted_by_flush,
            h.promoted_by_compaction,
            h.retained_records,
            mib(h.tracker.hot_set_bytes)
        );
    }
    db.close()?;
    println!(
        "\ndone in {:.1}s; inspect it with `strata inspect --db {} --capacity {capacity_url}`",
        started.elapsed().as_secs_f64(),
        root.join("db").display()
    );
    Ok(())
}
