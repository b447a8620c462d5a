//! From a command line to a ready engine configuration: [`engine_config`] maps the flags to the
//! engine-neutral [`EngineConfig`] (resolving relative `file://` URLs), [`engine_dirs`] lists the
//! directories an engine keeps state in, and [`wipe`] empties them (and a `memory://` capacity
//! store) before a fresh run.
//!
//! Invariants: only the directories named by the command line are ever removed; an `s3://`
//! capacity tier is never wiped (use a fresh prefix). Depends on `args` and `engine`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::TryStreamExt;
use object_store::ObjectStoreExt;

use crate::args::BenchArgs;
use crate::engine::{EmulationConfig, EngineConfig, EngineKind};
use crate::golden::remove_dir;

/// Makes `file://relative/dir` absolute (against the current directory).
pub fn resolve_capacity_url(url: &str) -> anyhow::Result<String> {
    match url.strip_prefix("file://") {
        Some(rest) if !rest.starts_with('/') => {
            let abs = std::env::current_dir()?.join(rest);
            Ok(format!("file://{}", abs.display()))
        }
        _ => Ok(url.to_string()),
    }
}

/// The engine configuration the command line asks for.
pub fn engine_config(args: &BenchArgs) -> anyhow::Result<EngineConfig> {
    let db_dir = args.db_dir();
    let capacity = args
        .capacity
        .as_deref()
        .map(resolve_capacity_url)
        .transpose()?;
    let emulated = args.capacity_latency_ms > 0.0 || args.capacity_mbps.is_some();
    anyhow::ensure!(
        capacity.is_some() || !emulated,
        "--capacity-latency-ms and --capacity-mbps need --capacity"
    );
    Ok(EngineConfig {
        fast_dir: args.fast_dir.clone().unwrap_or_else(|| db_dir.clone()),
        db_dir,
        capacity,
        emulation: emulated.then(|| EmulationConfig {
            latency: Duration::from_secs_f64(args.capacity_latency_ms / 1000.0),
            bandwidth: args.capacity_mbps.map(|m| (m * 1e6) as u64),
        }),
        capacity_levels: args.capacity_levels,
        fast_levels: args.fast_levels,
        hotrap: args.hotrap,
        placement_policy: args.placement_policy,
        defer_fast_bytes: args.defer_fast_bytes,
        capacity_index: args.capacity_index,
        wal_location: args.wal_location.clone(),
        extended_wal: args.extended_wal,
        avoid_flush_during_recovery: args.avoid_flush_during_recovery,
        compaction_service: args.compaction_service.clone(),
        compaction_token: args.compaction_token.clone(),
        compaction_mode: args.compaction_mode.clone(),
        wal_emulation: (args.wal_latency_ms > 0.0).then(|| EmulationConfig {
            latency: Duration::from_secs_f64(args.wal_latency_ms / 1000.0),
            bandwidth: None,
        }),
        compaction_style: args.compaction_style,
        trees_per_level: args.trees_per_level,
        cleaning_threshold: args.cleaning_threshold,
        search_threads: args.search_threads,
        fast_tier_budget: args.fast_tier_budget,
        capacity_request_budget: args.capacity_request_budget.clone(),
        block_cache_bytes: args.cache_size,
        row_cache_bytes: args.row_cache_size,
        write_buffer_bytes: args.write_buffer_size,
        max_write_buffers: args.max_write_buffer_number,
        persistent_cache_bytes: args.persistent_cache_size,
        persistent_cache_kind: args.persistent_cache_kind,
        bloom_bits: args.bloom_bits,
        merge_operator: args.merge_operator.as_deref().map(|n| match n {
            "uint64add" | "u64add" => strata::merge::U64Add::NAME.to_string(),
            other => other.to_string(),
        }),
        data_block_hash_ratio: args.data_block_hash_ratio,
        block_size: args.block_size,
        bytes_per_sync: args.bytes_per_sync,
        compression: args.compression_type,
        min_level_to_compress: args.min_level_to_compress,
        max_background_compactions: args.max_background_compactions,
        max_bytes_for_level_base: args.max_bytes_for_level_base,
        target_file_size_base: args.target_file_size_base,
        max_open_files: args.max_open_files,
        sync: args.sync,
        statistics: args.statistics,
        transactions: args.benchmarks.iter().any(|b| {
            b.parse::<crate::workloads::Benchmark>()
                == Ok(crate::workloads::Benchmark::RandomTransaction)
        }),
    })
}

/// The local directories `kind` keeps state in under `cfg` (the database, the fast tier, a
/// `file://` capacity tier), without duplicates.
pub fn engine_dirs(kind: EngineKind, cfg: &EngineConfig) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if kind != EngineKind::Strata || cfg.db_dir == cfg.fast_dir {
        v.push(cfg.db_dir.clone());
    }
    if !v.contains(&cfg.fast_dir) {
        v.push(cfg.fast_dir.clone());
    }
    if let Some(c) = cfg.capacity_dir() {
        if !v.contains(&c) {
            v.push(c);
        }
    }
    // Strata's log location is part of its state (wiped and copied with it).
    if let (EngineKind::Strata, Some(w)) = (kind, &cfg.wal_location) {
        let s = w.to_string_lossy();
        let w = match s.strip_prefix("file://") {
            Some(p) => PathBuf::from(p),
            None if s.contains("://") => return v,
            None => w.clone(),
        };
        if !v.contains(&w) {
            v.push(w);
        }
    }
    v
}

/// Removes the engine's state: its directories and the objects of a `memory://` store.
pub fn wipe(kind: EngineKind, cfg: &EngineConfig) -> anyhow::Result<()> {
    for d in engine_dirs(kind, cfg) {
        remove_dir(&d)?;
    }
    if let Some(url) = &cfg.capacity {
        if url.starts_with("memory://") {
            let (store, prefix) = strata::storage::object::store_from_url(url)?;
            futures::executor::block_on(async {
                let metas: Vec<_> = store.list(Some(&prefix)).try_collect().await?;
                for m in metas {
                    store.delete(&m.location).await?;
                }
                Ok::<_, object_store::Error>(())
            })?;
        } else if url.starts_with("s3://") {
            eprintln!("note: {url} is not wiped; use a fresh prefix for a fresh database");
        }
    }
    Ok(())
}

/// Creates the directories a fresh run needs.
pub fn create_dirs(kind: EngineKind, cfg: &EngineConfig) -> anyhow::Result<()> {
    for d in engine_dirs(kind, cfg) {
        std::fs::create_dir_all(&d)?;
    }
    if let Some(parent) = cfg.db_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    Ok(())
}

/// Whether `path` looks like a database (a non-empty directory).
pub fn has_data(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_and_dirs() {
        let a = BenchArgs::parse_from([
            "x",
            "--db",
            "/tmp/a",
            "--capacity",
            "file:///tmp/cap",
            "--capacity-latency-ms",
            "5",
            "--capacity-mbps",
            "100",
        ])
        .unwrap();
        let c = engine_config(&a).unwrap();
        assert_eq!(c.fast_dir, PathBuf::from("/tmp/a"));
        let e = c.emulation.unwrap();
        assert_eq!(e.latency, Duration::from_millis(5));
        assert_eq!(e.bandwidth, Some(100_000_000));
        assert_eq!(
            engine_dirs(EngineKind::Strata, &c),
            vec![PathBuf::from("/tmp/a"), PathBuf::from("/tmp/cap")]
        );
        let rel = resolve_capacity_url("file://rel/dir").unwrap();
        assert!(
            rel.starts_with("file:///") && rel.ends_with("/rel/dir"),
            "{rel}"
        );
        let bad = BenchArgs::parse_from(["x", "--capacity-latency-ms", "5"]).unwrap();
        assert!(engine_config(&bad).is_err());
    }

    #[test]
    fn wipes_memory_stores() {
        let a = BenchArgs::parse_from([
            "x",
            "--db",
            "/tmp/strata-bench-wipe-test",
            "--capacity",
            "memory://wipe-test",
        ])
        .unwrap();
        let c = engine_config(&a).unwrap();
        let (store, _) = strata::storage::object::store_from_url("memory://wipe-test").unwrap();
        futures::executor::block_on(store.put(&"a/b".into(), vec![1u8].into())).unwrap();
        wipe(EngineKind::Strata, &c).unwrap();
        let left: Vec<_> =
            futures::executor::block_on(store.list(None).try_collect::<Vec<_>>()).unwrap();
        assert!(left.is_empty());
    }
}
