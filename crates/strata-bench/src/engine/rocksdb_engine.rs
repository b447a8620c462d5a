//! [`RocksDbEngine`]: RocksDB (the `rocksdb` crate) behind [`KvEngine`], configured from the
//! same [`EngineConfig`] as Strata: equal memtable and block cache bytes, bloom bits, block
//! size, compression by level, level sizing and background threads (see docs/bench-peers.md).
//! A tiered run places the fast levels in the fast directory and the deeper levels in the
//! capacity directory with `db_paths` (a `file://` capacity tier only; RocksDB cannot emulate
//! object-store latency). A run with transactions (`randomtransaction`) opens the database as
//! an `OptimisticTransactionDB` (every other operation goes to it unchanged). Compiled only
//! with the `rocksdb` cargo feature.

use std::path::{Path, PathBuf};

use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DBPath, DataBlockIndexType,
    OptimisticTransactionDB, Options, WaitForCompactOptions, WriteBatchWithTransaction,
    WriteOptions, DB,
};

use super::{CompressionKind, EngineConfig, EngineCounters, EngineKind, KvEngine};

const NUM_LEVELS: usize = 7;
const LEVEL0_TRIGGERS: (i32, i32, i32) = (4, 20, 36);
const DEFAULT_LEVEL_BASE: u64 = 256 << 20;
const DEFAULT_FILE_SIZE: u64 = 64 << 20;

/// The open database: plain, or an `OptimisticTransactionDB` for runs with transactions.
enum Handle {
    Plain(DB),
    Optimistic(OptimisticTransactionDB),
}

/// Evaluates `$body` with `$db` bound to whichever handle is open (the two share RocksDB's
/// `DBCommon` methods; each arm is typed on its own, so a write batch's type follows `$db`).
macro_rules! with_db {
    ($handle:expr, $db:ident => $body:expr) => {
        match $handle {
            Handle::Plain($db) => $body,
            Handle::Optimistic($db) => $body,
        }
    };
}

/// See the module docs.
pub struct RocksDbEngine {
    db: Handle,
    opts: Options,
    write_opts: WriteOptions,
    statistics: bool,
    /// Table directories when tiered: (fast, capacity).
    tiers: Option<(PathBuf, PathBuf)>,
    settings: Vec<(String, String)>,
    _cache: Option<Cache>,
}

fn compression(kind: CompressionKind) -> DBCompressionType {
    match kind {
        CompressionKind::None => DBCompressionType::None,
        CompressionKind::Lz4 => DBCompressionType::Lz4,
        CompressionKind::Zstd => DBCompressionType::Zstd,
    }
}

impl RocksDbEngine {
    pub fn open(cfg: &EngineConfig) -> anyhow::Result<Self> {
        let mut o = Options::default();
        let mut settings: Vec<(String, String)> = vec![("engine".into(), "rocksdb".into())];
        let mut set = |k: &str, v: String| settings.push((k.to_string(), v));
        o.create_if_missing(true);
        o.set_write_buffer_size(cfg.write_buffer_bytes as usize);
        set("write_buffer_size", cfg.write_buffer_bytes.to_string());
        // The memtable Bloom filter Strata has on by default (off by default in RocksDB).
        let memtable_bloom = strata::Options::default().memtable_bloom_ratio;
        o.set_memtable_whole_key_filtering(true);
        o.set_memtable_prefix_bloom_ratio(memtable_bloom);
        set(
            "memtable_bloom",
            format!("memtable_prefix_bloom_size_ratio={memtable_bloom} memtable_whole_key_filtering=true"),
        );
        o.set_max_write_buffer_number(cfg.max_write_buffers as i32);
        set("max_write_buffer_number", cfg.max_write_buffers.to_string());
        o.set_num_levels(NUM_LEVELS as i32);
        o.set_level_zero_file_num_compaction_trigger(LEVEL0_TRIGGERS.0);
        o.set_level_zero_slowdown_writes_trigger(LEVEL0_TRIGGERS.1);
        o.set_level_zero_stop_writes_trigger(LEVEL0_TRIGGERS.2);
        set(
            "level0_triggers",
            format!(
                "{}/{}/{}",
                LEVEL0_TRIGGERS.0, LEVEL0_TRIGGERS.1, LEVEL0_TRIGGERS.2
            ),
        );
        let base = cfg.max_bytes_for_level_base.unwrap_or(DEFAULT_LEVEL_BASE);
        o.set_max_bytes_for_level_base(base);
        o.set_max_bytes_for_level_multiplier(10.0);
        set("max_bytes_for_level_base", base.to_string());
        let file = cfg.target_file_size_base.unwrap_or(DEFAULT_FILE_SIZE);
        o.set_target_file_size_base(file);
        set("target_file_size_base", file.to_string());
        o.set_level_compaction_dynamic_level_bytes(true);
        if cfg.compaction_style == super::StyleArg::SplitForest {
            // RocksDB's forest-like style: size-tiered (universal) compaction.
            o.set_compaction_style(rocksdb::DBCompactionStyle::Universal);
            set("compaction_style", "universal".into());
        } else {
            set("compaction_style", "level".into());
        }
        // One flush thread plus the compaction threads, as Strata runs.
        let jobs = cfg.max_background_compactions + 1;
        o.set_max_background_jobs(jobs as i32);
        set("max_background_jobs", jobs.to_string());
        o.set_bytes_per_sync(cfg.bytes_per_sync);
        set("bytes_per_sync", cfg.bytes_per_sync.to_string());
        let open_files = i32::try_from(cfg.max_open_files).unwrap_or(i32::MAX);
        o.set_max_open_files(open_files);
        set("max_open_files", open_files.to_string());
        let levels: Vec<DBCompressionType> = (0..NUM_LEVELS)
            .map(|l| {
                if l < cfg.min_level_to_compress {
                    DBCompressionType::None
                } else {
                    compression(cfg.compression)
                }
            })
            .collect();
        o.set_compression_per_level(&levels);
        set(
            "compression_per_level",
            levels
                .iter()
                .map(|c| format!("{c:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(","),
        );

        let mut t = BlockBasedOptions::default();
        t.set_block_size(cfg.block_size as usize);
        set("block_size", cfg.block_size.to_string());
        let cache = (cfg.block_cache_bytes > 0)
            .then(|| Cache::new_lru_cache(cfg.block_cache_bytes as usize));
        match &cache {
            Some(c) => t.set_block_cache(c),
            None => t.disable_cache(),
        }
        set(
            "block_cache",
            format!("LRU {} bytes", cfg.block_cache_bytes),
        );
        if cfg.row_cache_bytes > 0 {
            o.set_row_cache(&Cache::new_lru_cache(cfg.row_cache_bytes as usize));
        }
        set("row_cache", format!("LRU {} bytes", cfg.row_cache_bytes));
        if cfg.bloom_bits > 0.0 {
            t.set_bloom_filter(cfg.bloom_bits, false);
        }
        set("bloom_bits_per_key", cfg.bloom_bits.to_string());
        if cfg.data_block_hash_ratio > 0.0 {
            t.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
            t.set_data_block_hash_ratio(cfg.data_block_hash_ratio);
            set(
                "data_block_index_type",
                format!(
                    "kDataBlockBinaryAndHash, util ratio {}",
                    cfg.data_block_hash_ratio
                ),
            );
        } else {
            set("data_block_index_type", "kDataBlockBinarySearch".into());
        }
        set(
            "cache_index_and_filter_blocks",
            "false (held by table readers, as Strata does)".into(),
        );
        o.set_block_based_table_factory(&t);
        if cfg.statistics {
            o.enable_statistics();
        }
        set("statistics", cfg.statistics.to_string());

        let mut tiers = None;
        if let Some(cap) = cfg.capacity_dir() {
            // RocksDB's path choice assumes static level sizes: L0 ≈ L1 = base, ×10 per level.
            let fast_target = cfg.fast_tier_budget.unwrap_or_else(|| {
                base + (1..=cfg.fast_levels.unwrap_or(1))
                    .map(|l| base * 10u64.pow(l as u32 - 1))
                    .sum::<u64>()
            });
            std::fs::create_dir_all(&cfg.fast_dir)?;
            std::fs::create_dir_all(&cap)?;
            o.set_db_paths(&[
                DBPath::new(&cfg.fast_dir, fast_target)?,
                DBPath::new(&cap, u64::MAX / 4)?,
            ]);
            set(
                "db_paths",
                format!(
                    "{} ({fast_target} bytes), {}",
                    cfg.fast_dir.display(),
                    cap.display()
                ),
            );
            tiers = Some((cfg.fast_dir.clone(), cap));
        } else if cfg.capacity.is_some() {
            anyhow::bail!(
                "RocksDB reaches a capacity tier only as a directory: use --capacity file:///dir"
            );
        } else if cfg.fast_dir != cfg.db_dir {
            o.set_db_paths(&[DBPath::new(&cfg.fast_dir, u64::MAX / 4)?]);
            set("db_paths", cfg.fast_dir.display().to_string());
        }
        let mut w = WriteOptions::default();
        w.set_sync(cfg.sync);
        set("wal", "on".into());
        set("sync", cfg.sync.to_string());
        set("transactions", cfg.transactions.to_string());
        let db = if cfg.transactions {
            Handle::Optimistic(OptimisticTransactionDB::open(&o, &cfg.db_dir)?)
        } else {
            Handle::Plain(DB::open(&o, &cfg.db_dir)?)
        };
        Ok(RocksDbEngine {
            db,
            opts: o,
            write_opts: w,
            statistics: cfg.statistics,
            tiers,
            settings,
            _cache: cache,
        })
    }

    fn ticker(&self, t: Ticker) -> Option<u64> {
        self.statistics.then(|| self.opts.get_ticker_count(t))
    }
}

/// A write batch of `pairs`, of the kind the open handle takes (`TXN`: an
/// `OptimisticTransactionDB`'s).
fn batch<const TXN: bool>(pairs: &[(&[u8], &[u8])]) -> WriteBatchWithTransaction<TXN> {
    let mut b = WriteBatchWithTransaction::default();
    for (k, v) in pairs {
        b.put(k, v);
    }
    b
}

/// Bytes of `.sst` files directly in `dir`.
fn sst_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

impl KvEngine for RocksDbEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Rocksdb
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        Ok(with_db!(&self.db, db => db.put_opt(key, value, &self.write_opts))?)
    }

    fn put_batch(&self, pairs: &[(&[u8], &[u8])]) -> anyhow::Result<()> {
        Ok(with_db!(&self.db, db => db.write_opt(batch(pairs), &self.write_opts))?)
    }

    fn delete(&self, key: &[u8]) -> anyhow::Result<()> {
        Ok(with_db!(&self.db, db => db.delete_opt(key, &self.write_opts))?)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(with_db!(&self.db, db => db.get_pinned(key))?
            .map(|v| std::hint::black_box(v.len()))
            .is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> anyhow::Result<usize> {
        with_db!(&self.db, db => {
            let cf = db
                .cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
                .ok_or_else(|| anyhow::anyhow!("RocksDB has no default column family"))?;
            let mut found = 0;
            for r in db.batched_multi_get_cf(cf, keys, false) {
                found += usize::from(r?.map(|v| std::hint::black_box(v.len())).is_some());
            }
            Ok(found)
        })
    }

    /// `txn`: in an optimistic transaction (`get_for_update`, `put`, `commit`, RocksDB's
    /// default parallel validation); a commit refused as `Busy` or `TryAgain` is a conflict.
    fn update(&self, key: &[u8], value: &[u8], txn: bool) -> anyhow::Result<bool> {
        if !txn {
            return self.get_then_put(key, value);
        }
        let Handle::Optimistic(db) = &self.db else {
            anyhow::bail!("RocksDB opened without transactions (the run had no randomtransaction)");
        };
        let t = db.transaction_opt(
            &self.write_opts,
            &rocksdb::OptimisticTransactionOptions::default(),
        );
        std::hint::black_box(t.get_pinned_for_update(key, true)?.map(|v| v.len()));
        t.put(key, value)?;
        match t.commit() {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    rocksdb::ErrorKind::Busy | rocksdb::ErrorKind::TryAgain
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn scan(&self, start: &[u8], n: usize, last: &mut Vec<u8>) -> anyhow::Result<usize> {
        with_db!(&self.db, db => {
            let mut it = db.raw_iterator();
            it.seek(start);
            let mut got = 0;
            while got < n && it.valid() {
                std::hint::black_box(it.value());
                if got + 1 == n {
                    last.clear();
                    last.extend_from_slice(it.key().unwrap_or_default());
                }
                got += 1;
                it.next();
            }
            it.status()?;
            Ok(got)
        })
    }

    fn settle(&self) -> anyhow::Result<()> {
        with_db!(&self.db, db => {
            db.flush()?;
            let mut w = WaitForCompactOptions::default();
            w.set_flush(true);
            db.wait_for_compact(&w)?;
        });
        Ok(())
    }

    fn counters(&self) -> EngineCounters {
        let (fast, capacity) = match &self.tiers {
            Some((f, c)) => (Some(sst_bytes(f)), Some(sst_bytes(c))),
            None => (
                with_db!(&self.db, db => db.property_int_value("rocksdb.live-sst-files-size"))
                    .ok()
                    .flatten(),
                None,
            ),
        };
        EngineCounters {
            user_bytes_written: self.ticker(Ticker::BytesWritten),
            flush_bytes: self.ticker(Ticker::FlushWriteBytes),
            compaction_write_bytes: self.ticker(Ticker::CompactWriteBytes),
            compaction_read_bytes: self.ticker(Ticker::CompactReadBytes),
            block_cache_hits: self.ticker(Ticker::BlockCacheHit),
            block_cache_misses: self.ticker(Ticker::BlockCacheMiss),
            stall_micros: self.ticker(Ticker::StallMicros),
            fast_table_bytes: fast,
            capacity_table_bytes: capacity,
            ..Default::default()
        }
    }

    fn stats_text(&self) -> String {
        with_db!(&self.db, db => db.property_value("rocksdb.levelstats"))
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }

    fn close(&self) -> anyhow::Result<()> {
        with_db!(&self.db, db => {
            db.flush_wal(true)?;
            db.cancel_all_background_work(true);
        });
        Ok(())
    }
}
