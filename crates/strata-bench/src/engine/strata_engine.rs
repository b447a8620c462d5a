//! [`StrataEngine`]: Strata (`strata::Db`) behind [`KvEngine`], configured from
//! [`EngineConfig`]. The database lives in the fast directory; the capacity tier is reached by
//! URL with Strata's own `EmulatedStore` for latency and bandwidth. Depends only on the
//! `strata` crate and this module's parent.

use strata::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
use strata::storage::object::{CapacityOptions, Emulation};
use strata::{Compression, Db, Options, ReadOptions, WriteBatch, WriteOptions};

use super::{
    CompressionKind, EngineConfig, EngineCounters, EngineKind, KvEngine, PcacheKind, StyleArg,
};

/// See the module docs.
pub struct StrataEngine {
    db: Db,
    write_opts: WriteOptions,
}

/// Strata's options for `cfg`.
pub fn options(cfg: &EngineConfig) -> Options {
    let mut o = Options {
        write_buffer_size: cfg.write_buffer_bytes as usize,
        max_write_buffer_number: cfg.max_write_buffers,
        block_cache_capacity: cfg.block_cache_bytes as usize,
        row_cache_capacity: cfg.row_cache_bytes as usize,
        bloom_bits_per_key: cfg.bloom_bits,
        data_block_hash_ratio: cfg.data_block_hash_ratio,
        block_size: cfg.block_size as usize,
        bytes_per_sync: cfg.bytes_per_sync,
        max_background_compactions: cfg.max_background_compactions,
        compression_per_level: compression_per_level(cfg.compression, cfg.min_level_to_compress),
        capacity_levels: cfg.capacity_levels,
        fast_levels: cfg.fast_levels,
        fast_tier_budget: cfg.fast_tier_budget,
        capacity_request_budget: cfg
            .capacity_request_budget
            .as_deref()
            .and_then(|b| b.parse().ok()),
        hotrap: strata::tier::hot::HotRapOptions {
            enabled: cfg.hotrap,
            ..Default::default()
        },
        ..Options::default()
    };
    if let Some(b) = cfg.max_bytes_for_level_base {
        o.max_bytes_for_level_base = b;
    }
    if cfg.compaction_style == StyleArg::SplitForest {
        o.compaction_style = strata::CompactionStyle::SplitForest;
    }
    o.capacity_index = match cfg.capacity_index {
        super::CapacityIndexArg::Mashmeta => strata::sst::index::IndexKind::MashMeta,
        super::CapacityIndexArg::Block => strata::sst::index::IndexKind::Block,
        super::CapacityIndexArg::Auto => strata::sst::index::IndexKind::Auto,
    };
    o.wal_location = cfg.wal_location.clone();
    o.extended_wal = cfg.extended_wal;
    o.avoid_flush_during_recovery = cfg.avoid_flush_during_recovery;
    o.wal_emulation = cfg.wal_emulation.map(|e| Emulation {
        latency: e.latency,
        bandwidth: e.bandwidth,
        ..Default::default()
    });
    if cfg.placement_policy == super::PlacementArg::Logstore {
        o.placement_policy = strata::tier::PlacementPolicy::LogStore;
        o.logstore.defer_fast_bytes = cfg.defer_fast_bytes;
    }
    if let Some(t) = cfg.trees_per_level {
        o.forest.trees_per_level = t;
    }
    if let Some(t) = cfg.cleaning_threshold {
        o.forest.cleaning_threshold = t;
    }
    if let Some(t) = cfg.search_threads {
        o.forest.search_threads = t;
    }
    if let Some(t) = cfg.target_file_size_base {
        o.target_file_size_base = t;
    }
    o.max_open_files = cfg.max_open_files;
    if let Some(url) = &cfg.capacity {
        let mut c = CapacityOptions::new(url.clone());
        c.emulation = cfg.emulation.map(|e| Emulation {
            latency: e.latency,
            bandwidth: e.bandwidth,
            ..Default::default()
        });
        o.capacity = Some(c);
        o.persistent_cache = PersistentCacheOptions {
            kind: match cfg.persistent_cache_kind {
                _ if cfg.persistent_cache_bytes == 0 => PersistentCacheKind::None,
                PcacheKind::Lap => PersistentCacheKind::Lap,
                PcacheKind::Naive => PersistentCacheKind::Naive,
                #[cfg(feature = "foyer")]
                PcacheKind::Foyer => PersistentCacheKind::Foyer,
                PcacheKind::None => PersistentCacheKind::None,
            },
            capacity: cfg.persistent_cache_bytes,
            ..Default::default()
        };
    }
    o
}

fn compression_per_level(kind: CompressionKind, min_level: usize) -> Vec<Compression> {
    let c = match kind {
        CompressionKind::None => Compression::None,
        CompressionKind::Lz4 => Compression::Lz4,
        CompressionKind::Zstd => Compression::Zstd(3),
    };
    let mut v = vec![Compression::None; min_level];
    v.push(c);
    v
}

impl StrataEngine {
    pub fn open(cfg: &EngineConfig) -> anyhow::Result<Self> {
        let mut o = options(cfg);
        if let Some(name) = &cfg.merge_operator {
            o.merge_operator = Some(
                strata::merge::from_name(name)
                    .ok_or_else(|| anyhow::anyhow!("unknown merge operator {name:?}"))?,
            );
        }
        if let Some(url) = &cfg.compaction_service {
            let token = cfg
                .compaction_token
                .as_deref()
                .ok_or_else(|| anyhow::anyhow!("--compaction-service needs --compaction-token"))?;
            o.compaction_service =
                Some(strata_compaction::RemoteService::connect(url, token, None)?);
            o.compaction_mode = cfg
                .compaction_mode
                .parse()
                .map_err(|e: String| anyhow::anyhow!(e))?;
        }
        let db = Db::open(&cfg.fast_dir, o)?;
        Ok(StrataEngine {
            db,
            write_opts: WriteOptions {
                sync: cfg.sync,
                ..Default::default()
            },
        })
    }

    /// The database, for callers that want Strata's full statistics.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl KvEngine for StrataEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Strata
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        Ok(self.db.write_opt(b, &self.write_opts)?)
    }

    fn put_batch(&self, pairs: &[(&[u8], &[u8])]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in pairs {
            b.put(k, v);
        }
        Ok(self.db.write_opt(b, &self.write_opts)?)
    }

    fn delete(&self, key: &[u8]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        Ok(self.db.write_opt(b, &self.write_opts)?)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.db.get(key)?.is_some())
    }

    fn merge(&self, key: &[u8], operand: &[u8]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        Ok(self.db.write_opt(b, &self.write_opts)?)
    }

    fn update(&self, key: &[u8], value: &[u8], txn: bool) -> anyhow::Result<bool> {
        if !txn {
            return self.get_then_put(key, value);
        }
        let mut t = self.db.transaction();
        t.get_for_update(key)?;
        t.put(key, value);
        match t.commit_opt(&self.write_opts) {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    strata::ErrorKind::Busy | strata::ErrorKind::TryAgain
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn multi_get(&self, keys: &[&[u8]]) -> anyhow::Result<usize> {
        let mut found = 0;
        for r in self.db.multi_get(&ReadOptions::default(), keys) {
            found += usize::from(r?.is_some());
        }
        Ok(found)
    }

    fn scan(&self, start: &[u8], n: usize, last: &mut Vec<u8>) -> anyhow::Result<usize> {
        let mut it = self.db.iter(ReadOptions::default())?;
        it.seek(start);
        let mut got = 0;
        while got < n && it.valid() {
            std::hint::black_box(it.value());
            if got + 1 == n {
                last.clear();
                last.extend_from_slice(it.key());
            }
            got += 1;
            it.next();
        }
        it.status()?;
        Ok(got)
    }

    fn settle(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        self.db.wait_for_compactions()?;
        Ok(())
    }

    fn counters(&self) -> EngineCounters {
        let s = self.db.stats();
        let t = &s.tier;
        EngineCounters {
            user_bytes_written: Some(s.user_bytes_written),
            flush_bytes: Some(s.flush_bytes),
            compaction_write_bytes: Some(s.compaction_write_bytes),
            compaction_read_bytes: Some(s.compaction_read_bytes),
            block_cache_hits: Some(s.block_cache_hits),
            block_cache_misses: Some(s.block_cache_misses),
            fast_block_reads: Some(t.fast_reads),
            pcache_hits: Some(t.pcache_hits),
            pcache_misses: Some(t.pcache_misses),
            promotion_hits: s.hotrap.map(|h| h.cache_hits),
            capacity_gets: Some(t.capacity_gets),
            capacity_get_bytes: Some(t.capacity_get_bytes),
            capacity_puts: Some(t.capacity_puts),
            capacity_put_bytes: Some(t.capacity_put_bytes),
            capacity_deletes: Some(t.capacity_deletes),
            capacity_lists: Some(t.capacity_lists),
            capacity_requests: Some(
                t.object_store_requests()
                    .by_kind()
                    .map(|(k, n)| (k.name().to_string(), n))
                    .collect(),
            ),
            fast_table_bytes: Some(t.fast_table_bytes),
            capacity_table_bytes: Some(t.capacity_table_bytes),
            stall_micros: Some(s.stall_micros),
        }
    }

    fn stats_text(&self) -> String {
        self.db.stats().to_string()
    }

    fn stats_map(&self) -> serde_json::Map<String, serde_json::Value> {
        let s = self.db.stats();
        let t = &s.tier;
        let v = serde_json::json!({
            "memtable_bytes": s.memtable_bytes,
            "memtable_point_index_bytes": s.memtable_index_bytes,
            "gets": s.gets,
            "get_found": s.get_found,
            "bloom_checked": s.bloom_checked,
            "bloom_useful": s.bloom_useful,
            "bloom_false_positive": s.bloom_false_positive,
            "trie_checked": s.trie_checked,
            "trie_rejected": s.trie_rejected,
            "block_cache_hits": s.block_cache_hits,
            "block_cache_misses": s.block_cache_misses,
            "write_amp": s.write_amp,
            "stall_micros": s.stall_micros,
            "total_sst_bytes": s.total_sst_bytes,
            "fast_table_bytes": t.fast_table_bytes,
            "capacity_table_bytes": t.capacity_table_bytes,
            "capacity_gets": t.capacity_gets,
            "capacity_get_bytes": t.capacity_get_bytes,
            "capacity_puts": t.capacity_puts,
            "capacity_requests_total": t.object_store_requests().total(),
            "capacity_budget_waits": t.capacity_budget.waits,
            "capacity_budget_wait_secs": t.capacity_budget.wait_secs,
            "capacity_pending_upload_bytes": t.capacity_pending_upload_bytes,
            "capacity_meta_tables": t.capacity_meta_tables,
            "capacity_meta_bytes": t.capacity_meta_bytes,
            "capacity_meta_known_tables": t.capacity_meta_known_tables,
            "capacity_index_bytes": t.capacity_index_bytes,
            "capacity_filter_bytes": t.capacity_filter_bytes,
            "capacity_trie_bytes": t.capacity_trie_bytes,
            "fast_meta_known_tables": t.fast_meta_known_tables,
            "fast_index_bytes": t.fast_index_bytes,
            "fast_filter_bytes": t.fast_filter_bytes,
            "meta_local_reads": t.meta_local_reads,
            "pcache_hits": t.pcache_hits,
            "pcache_misses": t.pcache_misses,
            "remote_compaction_jobs": s.remote_compaction.as_ref().map(|r| r.remote_jobs),
            "local_compaction_jobs": s.remote_compaction.as_ref().map(|r| r.local_jobs),
            "remote_compaction": s.remote_compaction,
        });
        match v {
            serde_json::Value::Object(m) => m,
            _ => serde_json::Map::new(),
        }
    }

    fn compaction(&self) -> Option<serde_json::Value> {
        let s = self.db.stats();
        let f = &s.forest;
        let live = s.total_sst_bytes.max(1);
        Some(serde_json::json!({
            "style": self.db.options().compaction_style.name(),
            "sorted_runs": s.levels.iter().map(|l| l.sorted_runs).sum::<usize>(),
            "table_probes_per_get": s.table_probes as f64 / s.gets.max(1) as f64,
            "peak_extra_bytes": s.compaction_peak_extra_bytes,
            "space_amp_peak": (live + s.compaction_peak_extra_bytes) as f64 / live as f64,
            "merges": f.merges,
            "moved_tables": f.moved_tables,
            "moved_bytes": f.moved_bytes,
            "checkpoints": f.checkpoints,
            "early_cleaned_bytes": f.early_cleaned_bytes,
            "journal_resumes": f.resumes,
            "parallel_searches": f.parallel_searches,
        }))
    }

    fn hotrap(&self) -> Option<serde_json::Value> {
        let h = self.db.stats().hotrap?;
        serde_json::to_value(h).ok()
    }

    fn logstore(&self) -> Option<serde_json::Value> {
        let s = self.db.stats();
        let l = s.logstore?;
        let mut v = serde_json::to_value(l).ok()?;
        // The per-level temperature histograms (tables by decade of reads).
        v["levels"] = s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| {
                serde_json::json!({
                    "level": l.level,
                    "tables_by_reads": l.temperature_histogram,
                    "reads": l.temperature,
                })
            })
            .collect();
        Some(v)
    }

    fn settings(&self) -> Vec<(String, String)> {
        let o = self.db.options();
        let mut v = vec![
            ("engine".into(), "strata".into()),
            ("write_buffer_size".into(), o.write_buffer_size.to_string()),
            (
                "max_write_buffer_number".into(),
                o.max_write_buffer_number.to_string(),
            ),
            (
                "block_cache_capacity".into(),
                o.block_cache_capacity.to_string(),
            ),
            (
                "bloom_bits_per_key".into(),
                o.bloom_bits_per_key.to_string(),
            ),
            (
                "data_block_hash_ratio".into(),
                o.data_block_hash_ratio.to_string(),
            ),
            (
                "row_cache_capacity".into(),
                o.row_cache_capacity.to_string(),
            ),
            ("block_size".into(), o.block_size.to_string()),
            ("bytes_per_sync".into(), o.bytes_per_sync.to_string()),
            (
                "memtable_bloom_ratio".into(),
                o.memtable_bloom_ratio.to_string(),
            ),
            (
                "memtable_point_index_ratio".into(),
                o.memtable_point_index_ratio.to_string(),
            ),
            (
                "compression_per_level".into(),
                o.compression_per_level
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            (
                "max_background_compactions".into(),
                o.max_background_compactions.to_string(),
            ),
            (
                "max_bytes_for_level_base".into(),
                o.max_bytes_for_level_base.to_string(),
            ),
            (
                "target_file_size_base".into(),
                o.target_file_size_base.to_string(),
            ),
            (
                "level0_triggers".into(),
                format!(
                    "{}/{}/{}",
                    o.level0_file_num_compaction_trigger,
                    o.level0_slowdown_writes_trigger,
                    o.level0_stop_writes_trigger
                ),
            ),
            (
                "dynamic_level_bytes".into(),
                o.level_compaction_dynamic_level_bytes.to_string(),
            ),
            ("max_open_files".into(), o.max_open_files.to_string()),
            (
                "compaction_style".into(),
                o.compaction_style.name().to_string(),
            ),
            ("wal".into(), "on".into()),
            ("sync".into(), self.write_opts.sync.to_string()),
        ];
        if let Some(c) = &o.capacity {
            v.push(("capacity".into(), c.url.clone()));
            match o.fast_levels {
                Some(k) => v.push(("fast_levels".into(), k.to_string())),
                None => v.push(("capacity_levels".into(), o.capacity_levels.to_string())),
            }
            v.push(("hotrap".into(), o.hotrap.enabled.to_string()));
            v.push((
                "placement_policy".into(),
                o.placement_policy.name().to_string(),
            ));
            v.push(("capacity_index".into(), o.capacity_index.name().to_string()));
            if let Some(b) = o.capacity_request_budget {
                v.push(("capacity_request_budget".into(), b.to_string()));
            }
            if let Some(b) = o.fast_tier_budget {
                v.push(("fast_tier_budget".into(), b.to_string()));
            }
            if let Some(e) = &c.emulation {
                v.push((
                    "capacity_emulation".into(),
                    format!(
                        "latency {:?}, bandwidth {}",
                        e.latency,
                        e.bandwidth
                            .map(|b| format!("{} B/s", b))
                            .unwrap_or_else(|| "unlimited".into())
                    ),
                ));
            }
            v.push((
                "persistent_cache".into(),
                format!(
                    "{:?} {} bytes",
                    o.persistent_cache.kind, o.persistent_cache.capacity
                ),
            ));
        }
        v
    }

    fn close(&self) -> anyhow::Result<()> {
        self.db.clone().close()?;
        Ok(())
    }
}
