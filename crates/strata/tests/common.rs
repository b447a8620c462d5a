//! Helpers shared by the integration tests: a seeded PRNG, small-footprint options, and the
//! seed selection convention (`STRATA_SEED=<n>` replays one seed).
#![allow(dead_code)]

use strata::{Compression, Options};

#[allow(unused_imports)]
pub use strata_test_support::Rng;

/// Options that make flushes, compactions and multi-level trees happen with little data.
pub fn small_options(rng: &mut Rng) -> Options {
    Options {
        write_buffer_size: 8 * 1024 + rng.below(24 * 1024) as usize,
        level0_file_num_compaction_trigger: 2 + rng.below(3) as usize,
        level0_slowdown_writes_trigger: 8,
        level0_stop_writes_trigger: 12,
        max_bytes_for_level_base: 16 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 4096 + rng.below(8192),
        block_size: 128 + rng.below(1024) as usize,
        block_restart_interval: 1 + rng.below(16) as usize,
        bloom_bits_per_key: [0.0, 4.0, 10.0][rng.below(3) as usize],
        compression_per_level: vec![
            [Compression::None, Compression::Lz4, Compression::Zstd(3)][rng.below(3) as usize],
            Compression::Lz4,
            Compression::Zstd(1),
        ],
        block_cache_capacity: [0, 64 * 1024, 4 << 20][rng.below(3) as usize],
        level_compaction_dynamic_level_bytes: rng.chance(70),
        num_levels: 4 + rng.below(4) as usize,
        capacity_index: [
            strata::sst::index::IndexKind::Auto,
            strata::sst::index::IndexKind::MashMeta,
            strata::sst::index::IndexKind::Block,
        ][rng.below(3) as usize],
        data_block_hash_ratio: [0.0, 0.25, 0.75][rng.below(3) as usize],
        row_cache_capacity: [0, 0, 16 * 1024, 4 << 20][rng.below(4) as usize],
        ..Options::default()
    }
}

/// The seeds to run: `STRATA_SEED` alone if set, else `n` seeds derived from the clock.
pub fn seeds(n: u64) -> Vec<u64> {
    if let Ok(s) = std::env::var("STRATA_SEED") {
        return vec![s.parse().expect("STRATA_SEED must be a u64")];
    }
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    (0..n)
        .map(|i| base.wrapping_add(i.wrapping_mul(7919)))
        .collect()
}

/// Runs `f(seed)` and, if it panics, prints how to replay the failing seed.
pub fn with_seed(name: &str, seed: u64, f: impl FnOnce() + std::panic::UnwindSafe) {
    if let Err(p) = std::panic::catch_unwind(f) {
        eprintln!("\n*** {name} failed with seed {seed}; replay with STRATA_SEED={seed} cargo test --test {name}\n");
        std::panic::resume_unwind(p);
    }
}

/// Every key and value of `db`'s default column family, by a full forward scan.
pub fn contents(db: &strata::Db) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    scan_all(db.iter(strata::ReadOptions::default()).unwrap())
}

/// Every key and value of column family `cf`, by a full forward scan.
pub fn contents_cf(
    db: &strata::Db,
    cf: &strata::ColumnFamily,
) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    scan_all(db.iter_cf(cf, strata::ReadOptions::default()).unwrap())
}

fn scan_all(mut it: strata::DbIterator) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    it.seek_to_first();
    let mut out = std::collections::BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

pub fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// A deterministic stand-in for RALT in engine tests: a key is hot once it has been read
/// `min_reads` times and `pred` holds for it. Keeps exact per-key sizes, so range sums and
/// hot-key scans are exact.
pub struct OracleTracker {
    pub min_reads: u32,
    pub pred: fn(&[u8]) -> bool,
    seen: parking_lot::Mutex<std::collections::BTreeMap<Vec<u8>, (u32, u32)>>,
}

impl OracleTracker {
    pub fn new(min_reads: u32, pred: fn(&[u8]) -> bool) -> Self {
        OracleTracker {
            min_reads,
            pred,
            seen: Default::default(),
        }
    }
}

impl OracleTracker {
    /// Accesses recorded for `key`.
    pub fn reads(&self, key: &[u8]) -> u32 {
        self.seen.lock().get(key).map_or(0, |e| e.0)
    }
}

impl strata::tier::hot::HotTracker for OracleTracker {
    fn record_access(&self, key: &[u8], value_size: u32) {
        let mut m = self.seen.lock();
        let e = m.entry(key.to_vec()).or_insert((0, 0));
        e.0 += 1;
        e.1 = value_size;
    }
    fn is_hot(&self, key: &[u8]) -> bool {
        (self.pred)(key)
            && self
                .seen
                .lock()
                .get(key)
                .is_some_and(|e| e.0 >= self.min_reads)
    }
    fn hot_bytes_in_range(&self, lo: &[u8], hi: &[u8]) -> u64 {
        self.seen
            .lock()
            .range(lo.to_vec()..=hi.to_vec())
            .filter(|(k, e)| (self.pred)(k) && e.0 >= self.min_reads)
            .map(|(k, e)| (k.len() + e.1 as usize) as u64)
            .sum()
    }
    fn hot_keys_in_range(&self, lo: &[u8], hi: &[u8]) -> strata::Result<Vec<Vec<u8>>> {
        Ok(self
            .seen
            .lock()
            .range(lo.to_vec()..=hi.to_vec())
            .filter(|(k, e)| (self.pred)(k) && e.0 >= self.min_reads)
            .map(|(k, _)| k.clone())
            .collect())
    }
    fn needs_maintenance(&self) -> bool {
        false
    }
    fn maintain(&self) -> strata::Result<()> {
        Ok(())
    }
    fn stats(&self) -> strata::tier::hot::TrackerStats {
        Default::default()
    }
}

/// Small database options for the column-family tests (many flushes and compactions).
pub fn cf_db_options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        target_file_size_base: 16 << 10,
        level0_file_num_compaction_trigger: 2,
        ..Default::default()
    }
}

/// `cf_db_options`' values as a family's options.
pub fn cf_options_small() -> strata::CfOptions {
    strata::CfOptions::from_options(&cf_db_options())
}
