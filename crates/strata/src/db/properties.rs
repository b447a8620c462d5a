//! `Db::stats()` and named properties (documented in `docs/properties.md`), of the default
//! column family or of another (`Db::stats_cf`, `Db::property_cf`): what describes a tree
//! (levels, memtables, tiers, HotRAP, LogStore) is the family's, the counters are the
//! database's.

use std::sync::Arc;

use super::family::Family;
use super::pick::picker_options;
use super::DbInner;
use crate::compaction::level_targets;
use crate::stats::DbStats;

/// Bytes waiting to move to the capacity tier: what `feeding`, the last fast-tier level (whose
/// compactions write the capacity tier), holds beyond its target; it grows while uploads fail.
/// L0 has no byte target and never counts.
fn pending_upload_bytes(levels: &[crate::stats::LevelStats], feeding: usize) -> u64 {
    match levels.get(feeding) {
        Some(l) if feeding > 0 => l.bytes.saturating_sub(l.target_bytes),
        _ => 0,
    }
}

pub(crate) fn stats(inner: &Arc<DbInner>, fam: &Family) -> DbStats {
    let mut s = inner.stats.snapshot();
    let sv = fam.super_version();
    let v = &sv.version;
    let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
    let lt = level_targets(&sizes, &picker_options(&fam.opts));
    s.levels.truncate(v.num_levels());
    for (l, ls) in s.levels.iter_mut().enumerate() {
        let level = &v.levels[l];
        ls.files = level.num_files();
        ls.sorted_runs = level.runs.iter().filter(|r| !r.files.is_empty()).count();
        ls.bytes = sizes[l];
        ls.target_bytes = if l == 0 { 0 } else { lt.targets[l] };
        ls.write_amp = if l == 0 || ls.read_bytes == 0 {
            0.0
        } else {
            ls.write_bytes as f64 / ls.read_bytes as f64
        };
    }
    if let Some(ls) = &fam.logstore {
        for (l, ls) in s.levels.iter_mut().enumerate() {
            ls.temperature_histogram = super::temperature::histogram(v, l);
            ls.temperature = v.levels[l].files().map(|f| f.temperature.get()).sum();
        }
        s.logstore = Some(super::temperature::stats(ls));
    }
    if let Some(c) = inner.tables.store().capacity() {
        s.tier.capacity_budget = c.budget_stats();
    }
    s.tier.capacity_gc_pending_tables = inner.deferred.lock().len() as u64;
    if inner.opts.capacity.is_some() {
        let deepest = sizes.iter().rposition(|&b| b > 0).unwrap_or(0);
        let feeding = super::pick::placement(&fam.opts).last_fast_level(deepest, deepest);
        s.tier.capacity_pending_upload_bytes = pending_upload_bytes(&s.levels, feeding);
    }
    s.extended_wal = super::extended::stats(inner);
    s.remote_compaction = inner.remote.as_ref().map(|r| r.stats());
    s.total_sst_bytes = sizes.iter().sum();
    for f in v.all_files() {
        match f.tier {
            crate::tier::Tier::Fast => s.tier.fast_table_bytes += f.size,
            crate::tier::Tier::Capacity => s.tier.capacity_table_bytes += f.size,
        }
    }
    if let Some(m) = inner.tables.store().meta_totals() {
        s.tier.capacity_meta_tables = m.tables;
        s.tier.capacity_meta_bytes = m.bytes;
        s.tier.capacity_meta_known_tables = m.known_tables;
        s.tier.capacity_index_bytes = m.index_bytes;
        s.tier.capacity_filter_bytes = m.filter_bytes;
        s.tier.capacity_trie_bytes = m.trie_bytes;
    }
    let (n, k) = inner.tables.fast_meta();
    s.tier.fast_meta_known_tables = n;
    s.tier.fast_index_bytes = k.index;
    s.tier.fast_filter_bytes = k.filter;
    if let Some(c) = inner.tables.store().data_cache() {
        s.tier.pcache_usage = c.usage();
        s.tier.pcache_capacity = c.capacity();
    }
    s.memtable_bytes = (sv.mem.approximate_size()
        + sv.imms.iter().map(|m| m.approximate_size()).sum::<usize>())
        as u64;
    s.memtable_index_bytes = (sv.mem.point_index_bytes()
        + sv.imms.iter().map(|m| m.point_index_bytes()).sum::<usize>())
        as u64;
    s.immutable_memtables = sv.imms.len();
    s.live_snapshots = inner.snapshots.count();
    s.hotrap = fam.hot.as_ref().map(|h| h.stats());
    if let Some(c) = &inner.block_cache {
        s.block_cache_usage = c.usage();
        s.block_cache_capacity = c.capacity();
    }
    if let Some(c) = inner.tables.rows() {
        s.row_cache_usage = c.usage();
        s.row_cache_capacity = c.capacity();
    }
    s
}

pub(crate) fn property(inner: &Arc<DbInner>, fam: &Family, name: &str) -> Option<String> {
    let name = name.strip_prefix("strata.")?;
    let sv = fam.super_version();
    let v = &sv.version;
    if let Some(l) = name.strip_prefix("num-files-at-level") {
        let l: usize = l.parse().ok()?;
        return v.levels.get(l).map(|lv| lv.num_files().to_string());
    }
    Some(match name {
        "stats" => stats(inner, fam).to_string(),
        "levelstats" => {
            let mut out = String::from("Level Files Size(bytes)\n");
            for (l, lv) in v.levels.iter().enumerate() {
                out.push_str(&format!(
                    "{l:>5} {:>5} {:>11}\n",
                    lv.num_files(),
                    lv.bytes()
                ));
            }
            out
        }
        "num-immutable-mem-table" => sv.imms.len().to_string(),
        "tier-stats" => stats(inner, fam).tier.to_string(),
        "cur-size-active-mem-table" => sv.mem.approximate_size().to_string(),
        "cur-size-all-mem-tables" => (sv.mem.approximate_size()
            + sv.imms.iter().map(|m| m.approximate_size()).sum::<usize>())
        .to_string(),
        "estimate-num-keys" => {
            let mut n: u64 =
                sv.mem.num_entries() + sv.imms.iter().map(|m| m.num_entries()).sum::<u64>();
            let mut dels: u64 =
                sv.mem.num_deletes() + sv.imms.iter().map(|m| m.num_deletes()).sum::<u64>();
            for f in v.all_files() {
                n += f.num_entries;
                dels += f.num_deletions;
            }
            n.saturating_sub(2 * dels).to_string()
        }
        "total-sst-files-size" => v.all_files().map(|f| f.size).sum::<u64>().to_string(),
        "num-snapshots" => inner.snapshots.count().to_string(),
        "background-errors" => inner
            .stats
            .background_errors
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string(),
        "base-level" => {
            let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
            level_targets(&sizes, &picker_options(&fam.opts))
                .base_level
                .to_string()
        }
        "block-cache-usage" => inner
            .block_cache
            .as_ref()
            .map_or(0, |c| c.usage())
            .to_string(),
        "block-cache-capacity" => inner
            .block_cache
            .as_ref()
            .map_or(0, |c| c.capacity())
            .to_string(),
        "latest-sequence-number" => inner
            .last_seq
            .load(std::sync::atomic::Ordering::Acquire)
            .to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::pending_upload_bytes;
    use crate::stats::LevelStats;

    #[test]
    fn pending_upload_is_the_feeding_levels_excess() {
        let level = |bytes, target_bytes| LevelStats {
            bytes,
            target_bytes,
            ..Default::default()
        };
        let levels = vec![
            level(50, 0),
            level(300, 100),
            level(90, 1000),
            level(5000, 9000),
        ];
        // (feeding level, pending): L0 never counts; a level under its target holds nothing
        // back; a level past the last is none.
        for (feeding, want) in [(0, 0), (1, 200), (2, 0), (3, 0), (9, 0)] {
            assert_eq!(
                pending_upload_bytes(&levels, feeding),
                want,
                "feeding L{feeding}"
            );
        }
    }
}
