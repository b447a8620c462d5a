//! INFO: the `server`, `clients`, `memory`, `persistence`, `stats`, `replication`, `cpu`,
//! `cluster` (`cluster_enabled:0`), `keyspace` and `strata` sections, in
//! Redis's `key:value` text format (CRLF line ends, `# Section` headers, blank line between).
//!
//! The `strata` section carries the engine's own figures (`Db::stats()` and `Db::property`):
//! per-level shape and compaction counters, write amplification, caches, stalls and memtables. The
//! fast tier (the data directory) and, when configured, the capacity tier and its caches are
//! reported side by side. Invariants: rendering is read-only; the keyspace
//! section's key count is exact when the engine's estimate is at most [`EXACT_KEYSPACE_LIMIT`] (a
//! bounded scan) and the estimate otherwise (the `strata` section says which, as
//! `keyspace_keys_exact`). Blocking (reads the engine): run on the pool. Depends on
//! `server::Shared`, `store`, `stats`, `commands::connection` (version).

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use crate::commands::connection::REDIS_VERSION;
use crate::pubsub::Kind;
use crate::server::Shared;
use crate::stats::ServerStats;
use crate::store::StoreResult;

/// Above this many (estimated) keys, INFO keyspace reports the engine's estimate.
pub const EXACT_KEYSPACE_LIMIT: u64 = 100_000;

/// Sections shown by `INFO` / `INFO default`.
pub const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "cluster",
    "keyspace",
    "strata",
];

/// Every section, in the order they are shown: the default ones and `commandstats` (shown
/// by `INFO all`, `INFO everything` or by name, as in redis).
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "commandstats",
    "cluster",
    "keyspace",
    "strata",
];

/// Live keys, keys with a TTL, average TTL of those (ms), and whether the count is exact.
pub struct KeyspaceFigures {
    pub keys: u64,
    pub expires: u64,
    pub avg_ttl: u64,
    pub exact: bool,
}

pub fn keyspace_figures(shared: &Shared, now: u64) -> StoreResult<KeyspaceFigures> {
    let estimate: u64 = shared
        .store
        .db()
        .and_then(|db| db.property("strata.estimate-num-keys"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if estimate > EXACT_KEYSPACE_LIMIT {
        return Ok(KeyspaceFigures {
            keys: estimate,
            expires: 0,
            avg_ttl: 0,
            exact: false,
        });
    }
    let (mut keys, mut expires, mut ttl_sum) = (0u64, 0u64, 0u128);
    shared
        .store
        .scan(None, usize::MAX, now, |_, _, expire_at| {
            keys += 1;
            if let Some(at) = expire_at {
                expires += 1;
                ttl_sum += u128::from(at.saturating_sub(now));
            }
        })?;
    Ok(KeyspaceFigures {
        keys,
        expires,
        avg_ttl: if expires > 0 {
            (ttl_sum / u128::from(expires)) as u64
        } else {
            0
        },
        exact: true,
    })
}

struct Section<'a> {
    out: &'a mut String,
}

impl Section<'_> {
    fn kv(&mut self, k: &str, v: impl std::fmt::Display) {
        let _ = write!(self.out, "{k}:{v}\r\n");
    }
}

/// Renders the requested sections (already lowercased; `all`/`everything`/`default` expand).
pub fn render(shared: &Shared, requested: &[String], now: u64) -> StoreResult<String> {
    let mut wanted: Vec<&str> = Vec::new();
    if requested.is_empty() {
        wanted.extend(DEFAULT_SECTIONS);
    }
    for r in requested {
        match r.as_str() {
            "all" | "everything" => wanted.extend(ALL_SECTIONS),
            "default" => wanted.extend(DEFAULT_SECTIONS),
            s => {
                if let Some(known) = ALL_SECTIONS.iter().find(|d| **d == s) {
                    wanted.push(known);
                }
            }
        }
    }
    let mut out = String::new();
    for name in ALL_SECTIONS {
        if !wanted.contains(name) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let title = match *name {
            "server" => "Server",
            "clients" => "Clients",
            "memory" => "Memory",
            "replication" => "Replication",
            "cpu" => "CPU",
            "cluster" => "Cluster",
            "persistence" => "Persistence",
            "stats" => "Stats",
            "keyspace" => "Keyspace",
            "commandstats" => "Commandstats",
            _ => "Strata",
        };
        let _ = write!(out, "# {title}\r\n");
        let mut s = Section { out: &mut out };
        match *name {
            "server" => server(shared, &mut s, now),
            "clients" => clients(shared, &mut s),
            "memory" => memory(shared, &mut s),
            "replication" => replication(shared, &mut s),
            "cpu" => cpu(&mut s),
            "cluster" => s.kv("cluster_enabled", 0),
            "persistence" => persistence(shared, &mut s),
            "stats" => stats(shared, &mut s),
            "keyspace" => keyspace(shared, &mut s, now)?,
            "commandstats" => commandstats(shared, &mut s),
            _ => strata(shared, &mut s),
        }
    }
    Ok(out)
}

/// `cmdstat_<name>:calls=,usec=,usec_per_call=,rejected_calls=,failed_calls=` for every
/// command that ran or was refused since the start (or `CONFIG RESETSTAT`).
fn commandstats(shared: &Shared, s: &mut Section<'_>) {
    for (i, spec) in crate::commands::all_commands().enumerate() {
        let t = shared.command_stats.totals(i);
        if t.calls == 0 && t.rejected == 0 {
            continue;
        }
        let per_call = if t.calls == 0 {
            0.0
        } else {
            t.usec as f64 / t.calls as f64
        };
        s.kv(
            &format!("cmdstat_{}", spec.name),
            format!(
                "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                t.calls, t.usec, t.rejected, t.failed
            ),
        );
    }
}

fn server(shared: &Shared, s: &mut Section<'_>, now: u64) {
    let up = shared.started.elapsed().as_secs();
    s.kv("redis_version", REDIS_VERSION);
    s.kv("strata_version", env!("CARGO_PKG_VERSION"));
    s.kv("redis_mode", "standalone");
    s.kv(
        "os",
        format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    );
    s.kv("arch_bits", usize::BITS);
    s.kv("process_id", std::process::id());
    s.kv("run_id", &shared.run_id);
    s.kv("tcp_port", shared.local_addr.port());
    s.kv("server_time_usec", now * 1000);
    s.kv("uptime_in_seconds", up);
    s.kv("uptime_in_days", up / 86_400);
    s.kv(
        "executable",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    s.kv(
        "config_file",
        shared
            .config_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
}

fn clients(shared: &Shared, s: &mut Section<'_>) {
    s.kv("connected_clients", shared.clients.count());
    s.kv("maxclients", shared.limits.maxclients());
    s.kv("blocked_clients", shared.blocking.blocked_clients());
    s.kv(
        "pubsub_clients",
        shared
            .clients
            .list()
            .iter()
            .filter(|c| c.is_subscriber())
            .count(),
    );
}

/// Resident set size of this process in bytes (Linux `/proc/self/statm`; 0 elsewhere).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}G", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.2}M", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else {
        format!("{bytes}B")
    }
}

/// `used_memory` is the process's resident size: the server has no allocator statistics, so
/// it reports what the operating system sees; the engine's own buffers are listed beside it.
fn memory(shared: &Shared, s: &mut Section<'_>) {
    let st = engine_stats(shared);
    let rss = rss_bytes();
    s.kv("used_memory", rss);
    s.kv("used_memory_human", human(rss));
    s.kv("used_memory_rss", rss);
    s.kv("used_memory_rss_human", human(rss));
    s.kv("maxmemory", 0);
    s.kv("maxmemory_human", "0B");
    s.kv("maxmemory_policy", "noeviction");
    s.kv("mem_allocator", "system");
    s.kv("memtable_bytes", st.memtable_bytes);
    s.kv("block_cache_usage", st.block_cache_usage);
    s.kv("row_cache_usage", st.row_cache_usage);
}

/// The writer's statistics; zeros on a replica (its reads' counters are in `replication`).
fn engine_stats(shared: &Shared) -> strata::DbStats {
    shared.store.db().map(|db| db.stats()).unwrap_or_default()
}

/// A replica (`replicaof`) reports the log location it follows as `master_host` and where it
/// stands; a writer reports itself as redis' master with no connected replicas (Strata's
/// replicas follow the log location, not a connection).
fn replication(shared: &Shared, s: &mut Section<'_>) {
    if let Some((of, st)) = shared.store.replica_status() {
        s.kv("role", "slave");
        s.kv("master_host", of);
        s.kv("master_port", 0);
        let up = st.last_error.is_none() && st.replica_lag_ms.is_some();
        s.kv("master_link_status", if up { "up" } else { "down" });
        s.kv(
            "master_last_io_seconds_ago",
            st.replica_lag_ms.map(|ms| (ms / 1000) as i64).unwrap_or(-1),
        );
        s.kv("master_sync_in_progress", 0);
        s.kv("slave_read_only", 1);
        s.kv("slave_repl_offset", st.applied_sequence);
        s.kv("applied_sequence", st.applied_sequence);
        s.kv(
            "replica_lag_ms",
            st.replica_lag_ms.map(|ms| ms as i64).unwrap_or(-1),
        );
        s.kv("last_refresh_unix_ms", st.last_refresh_unix_ms.unwrap_or(0));
        s.kv("replica_refreshes", st.refreshes);
        s.kv("replica_refresh_errors", st.refresh_errors);
        if let Some(e) = &st.last_error {
            s.kv("replica_last_error", e.replace(['\r', '\n'], " "));
        }
        s.kv("replica_log_requests", st.log_requests);
        s.kv("replica_log_lists", st.log_lists);
        s.kv("replica_capacity_requests", st.capacity_requests);
        s.kv("replica_fetched_bytes", st.fetched_bytes);
        s.kv("replica_tables_rebuilt", st.tables_rebuilt);
        s.kv("connected_slaves", 0);
        return;
    }
    s.kv("role", "master");
    s.kv("applied_sequence", shared.store.latest_sequence());
    s.kv("connected_slaves", 0);
    s.kv("master_failover_state", "no-failover");
    s.kv("master_replid", "0000000000000000000000000000000000000000");
    s.kv("master_repl_offset", 0);
    s.kv("repl_backlog_active", 0);
}

/// CPU seconds of this process (Linux `/proc/self/stat`, clock ticks of 1/100 s).
fn cpu(s: &mut Section<'_>) {
    let (user, sys) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|t| {
            // Fields after the command name, which is in parentheses and may hold spaces.
            let rest = t.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((
                f.get(11)?.parse::<u64>().ok()?,
                f.get(12)?.parse::<u64>().ok()?,
            ))
        })
        .unwrap_or((0, 0));
    s.kv("used_cpu_sys", format!("{:.6}", sys as f64 / 100.0));
    s.kv("used_cpu_user", format!("{:.6}", user as f64 / 100.0));
    s.kv("used_cpu_sys_children", "0.000000");
    s.kv("used_cpu_user_children", "0.000000");
}

fn persistence(shared: &Shared, s: &mut Section<'_>) {
    let st = engine_stats(shared);
    s.kv("loading", 0);
    // Every write goes through the engine's write-ahead log, which plays the AOF's role.
    s.kv("aof_enabled", 1);
    s.kv("appendfsync", shared.store.sync_policy().name());
    for (k, v) in shared.saves.info_fields(shared.store.latest_sequence()) {
        s.kv(k, v);
    }
    s.kv("aof_rewrite_in_progress", 0);
    s.kv("wal_bytes", st.wal_bytes);
    s.kv("wal_syncs", st.wal_syncs);
    s.kv("wal_write_groups", st.write_groups);
    s.kv("memtable_bytes", st.memtable_bytes);
    s.kv("memtable_point_index_bytes", st.memtable_index_bytes);
    s.kv("immutable_memtables", st.immutable_memtables);
    s.kv("flushes", st.flushes);
    s.kv("flush_bytes", st.flush_bytes);
    s.kv("background_errors", st.background_errors);
    s.kv("dir", shared.config.dir.display());
}

fn stats(shared: &Shared, s: &mut Section<'_>) {
    let st = &shared.stats;
    let g = ServerStats::get;
    s.kv("total_connections_received", g(&st.connections_received));
    s.kv("total_commands_processed", g(&st.commands_processed));
    s.kv("instantaneous_ops_per_sec", g(&st.instantaneous_ops));
    s.kv("total_net_input_bytes", g(&st.net_input_bytes));
    s.kv("total_net_output_bytes", g(&st.net_output_bytes));
    s.kv("rejected_connections", g(&st.rejected_connections));
    s.kv("expired_keys", shared.expired_removed.load(Relaxed));
    s.kv("evicted_keys", 0);
    s.kv("keyspace_hits", g(&st.keyspace_hits));
    s.kv("pubsub_channels", shared.pubsub.count(Kind::Channel));
    s.kv("pubsub_patterns", shared.pubsub.count(Kind::Pattern));
    s.kv("pubsub_shardchannels", shared.pubsub.count(Kind::Shard));
    s.kv(
        "client_output_buffer_limit_disconnections",
        shared.pubsub.disconnections.load(Relaxed),
    );
    s.kv("keyspace_misses", g(&st.keyspace_misses));
    s.kv("total_error_replies", g(&st.error_replies));
    s.kv("protocol_errors", g(&st.protocol_errors));
    s.kv("scan_cursors", shared.cursors.len());
}

fn keyspace(shared: &Shared, s: &mut Section<'_>, now: u64) -> StoreResult<()> {
    let k = keyspace_figures(shared, now)?;
    if k.keys > 0 {
        s.kv(
            "db0",
            format!(
                "keys={},expires={},avg_ttl={}",
                k.keys, k.expires, k.avg_ttl
            ),
        );
    }
    Ok(())
}

fn strata(shared: &Shared, s: &mut Section<'_>) {
    let Some(db) = shared.store.db() else {
        // A replica's engine figures are in `replication`.
        s.kv("engine", "replica");
        return;
    };
    let st = db.stats();
    let t = &st.tier;
    let has_capacity = db.capacity_tier().is_some();
    s.kv(
        "tiers",
        if has_capacity {
            "fast,capacity"
        } else {
            "fast"
        },
    );
    s.kv(
        "keyspace_keys_exact",
        u8::from(
            db.property("strata.estimate-num-keys")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
                <= EXACT_KEYSPACE_LIMIT,
        ),
    );
    s.kv(
        "capacity_tier",
        if has_capacity { "object_store" } else { "none" },
    );
    s.kv("fast_tier_sst_bytes", t.fast_table_bytes);
    s.kv("capacity_tier_sst_bytes", t.capacity_table_bytes);
    s.kv("fast_tier_hit_rate", format!("{:.4}", t.fast_hit_rate));
    s.kv("fast_tier_reads", t.fast_reads);
    s.kv("capacity_gets", t.capacity_gets);
    s.kv("capacity_get_bytes", t.capacity_get_bytes);
    s.kv("capacity_puts", t.capacity_puts);
    s.kv("capacity_put_bytes", t.capacity_put_bytes);
    s.kv("capacity_deletes", t.capacity_deletes);
    s.kv("capacity_retries", t.capacity_retries);
    s.kv("capacity_errors", t.capacity_errors);
    // The request bill: every object-store request (capacity tier and log location), by kind,
    // and what it costs a month at the rate of the last five minutes under
    // `engine.capacity-price` (S3 Standard by default).
    let requests = t.object_store_requests();
    s.kv("capacity_requests_total", requests.total());
    for (kind, n) in requests.by_kind() {
        s.kv(&format!("capacity_requests_{}", kind.name()), n);
    }
    s.kv("log_location_requests_total", t.log_requests.total());
    // At the rate of the last five minutes (since the server became ready, while younger:
    // opening's one-time requests left out).
    let (recent, secs) = shared
        .request_window
        .rate(std::time::Instant::now(), &requests);
    let cost = shared.prices.monthly(&recent, secs, t.capacity_table_bytes);
    s.kv("capacity_cost_window_seconds", format!("{secs:.0}"));
    s.kv(
        "capacity_requests_usd_per_month",
        format!("{:.2}", cost.requests_usd_per_month),
    );
    s.kv(
        "capacity_storage_usd_per_month",
        format!("{:.2}", cost.storage_usd_per_month),
    );
    let object_store = has_capacity || t.log_requests.total() > 0;
    let down = t.capacity_health.down || t.log_health.down;
    s.kv(
        "capacity_tier_state",
        match (object_store, down) {
            (false, _) => "none",
            (true, false) => "up",
            (true, true) => "down",
        },
    );
    s.kv(
        "capacity_tier_down_seconds",
        format!(
            "{:.0}",
            t.capacity_health.down_secs.max(t.log_health.down_secs)
        ),
    );
    s.kv(
        "capacity_failing_requests",
        t.capacity_health.failing_requests + t.log_health.failing_requests,
    );
    s.kv(
        "capacity_outages",
        t.capacity_health.outages + t.log_health.outages,
    );
    s.kv(
        "capacity_pending_upload_bytes",
        t.capacity_pending_upload_bytes,
    );
    s.kv("capacity_gc_pending_tables", t.capacity_gc_pending_tables);
    let b = &t.capacity_budget;
    s.kv(
        "capacity_request_budget",
        b.budget
            .map_or_else(|| "none".to_string(), |b| b.to_string()),
    );
    s.kv("capacity_budget_waits", b.waits);
    s.kv(
        "capacity_budget_wait_seconds",
        format!("{:.3}", b.wait_secs),
    );
    s.kv(
        "capacity_get_p50_ms",
        format!("{:.3}", t.capacity_get_p50_ms),
    );
    s.kv(
        "capacity_get_p99_ms",
        format!("{:.3}", t.capacity_get_p99_ms),
    );
    s.kv("meta_cache_local_reads", t.meta_local_reads);
    s.kv("capacity_meta_tables", t.capacity_meta_tables);
    s.kv("capacity_meta_bytes", t.capacity_meta_bytes);
    s.kv("capacity_index_bytes", t.capacity_index_bytes);
    s.kv("capacity_filter_bytes", t.capacity_filter_bytes);
    s.kv("capacity_trie_bytes", t.capacity_trie_bytes);
    s.kv("fast_index_bytes", t.fast_index_bytes);
    s.kv("fast_filter_bytes", t.fast_filter_bytes);
    s.kv("data_cache_hits", t.pcache_hits);
    s.kv("data_cache_misses", t.pcache_misses);
    s.kv("data_cache_hit_rate", format!("{:.4}", t.pcache_hit_rate));
    s.kv("data_cache_usage", t.pcache_usage);
    s.kv("data_cache_capacity", t.pcache_capacity);
    s.kv("stale_subkeys_removed", shared.store.stale_removed());
    s.kv(
        "inline_segments",
        ServerStats::get(&shared.stats.inline_segments),
    );
    s.kv(
        "inline_fallbacks",
        ServerStats::get(&shared.stats.inline_fallbacks),
    );
    s.kv(
        "inline_busy_waits",
        ServerStats::get(&shared.stats.inline_busy_waits),
    );
    s.kv(
        "read_ahead_keys",
        ServerStats::get(&shared.stats.read_ahead_keys),
    );
    s.kv(
        "inline_group_writes",
        ServerStats::get(&shared.stats.inline_group_writes),
    );
    s.kv(
        "inline_group_segments",
        ServerStats::get(&shared.stats.inline_group_segments),
    );
    s.kv(
        "inline_chained_segments",
        ServerStats::get(&shared.stats.inline_chained_segments),
    );
    s.kv("logstore_enabled", u8::from(st.logstore.is_some()));
    if let Some(l) = &st.logstore {
        s.kv("logstore_informed_compactions", l.informed_compactions);
        s.kv("logstore_reverse_compactions", l.reverse_compactions);
        s.kv("logstore_reverse_bytes", l.reverse_bytes);
        s.kv("logstore_staging_compactions", l.staging_compactions);
        s.kv("logstore_staging_bytes", l.staging_bytes);
        s.kv("logstore_deferring", u8::from(l.deferring));
        s.kv("logstore_deferred_ticks", l.deferred_ticks);
        s.kv("logstore_fast_seek_us", format!("{:.1}", l.fast_seek_us));
        s.kv(
            "logstore_capacity_seek_us",
            format!("{:.1}", l.capacity_seek_us),
        );
        for lv in st.levels.iter().filter(|lv| lv.files > 0) {
            let h = lv.temperature_histogram.map(|c| c.to_string()).join(",");
            s.kv(&format!("logstore_level{}_tables_by_reads", lv.level), h);
        }
    }
    s.kv("hotrap_enabled", u8::from(st.hotrap.is_some()));
    if let Some(h) = &st.hotrap {
        let r = &h.tracker;
        s.kv("hotrap_fast_hit_rate", format!("{:.4}", h.fast_hit_rate));
        s.kv("hotrap_reads_fast", h.reads_fast);
        s.kv("hotrap_reads_capacity", h.reads_capacity);
        s.kv("hotrap_ralt_physical_bytes", r.physical_bytes);
        s.kv("hotrap_ralt_physical_limit", r.physical_limit);
        s.kv("hotrap_ralt_fast_tier_bytes", r.fast_tier_bytes);
        s.kv("hotrap_hot_set_bytes", r.hot_set_bytes);
        s.kv("hotrap_hot_set_limit", r.hot_set_limit);
        s.kv("hotrap_promotion_cache_bytes", h.promotion_cache_bytes);
        s.kv("hotrap_promotion_cache_sealed_bytes", h.sealed_cache_bytes);
        s.kv("hotrap_cache_inserts", h.cache_inserts);
        s.kv("hotrap_cache_aborts", h.cache_aborts);
        s.kv("hotrap_cache_hits", h.cache_hits);
        s.kv("hotrap_retained_records", h.retained_records);
        s.kv("hotrap_retained_bytes", h.retained_bytes);
        s.kv("hotrap_promoted_by_compaction", h.promoted_by_compaction);
        s.kv("hotrap_promoted_by_flush", h.promoted_by_flush);
    }
    s.kv(
        "remote_compaction_enabled",
        u8::from(st.remote_compaction.is_some()),
    );
    if let Some(r) = &st.remote_compaction {
        s.kv("remote_compaction_mode", &r.mode);
        s.kv("remote_compaction_service", &r.service);
        s.kv("remote_compaction_jobs", r.remote_jobs);
        s.kv("remote_compaction_local_jobs", r.local_jobs);
        s.kv("remote_compaction_ineligible_jobs", r.ineligible_jobs);
        s.kv("remote_compaction_local_by_estimate", r.local_by_estimate);
        s.kv("remote_compaction_queue_wait_micros", r.queue_wait_micros);
        s.kv(
            "remote_compaction_transfer_read_bytes",
            r.transfer_read_bytes,
        );
        s.kv(
            "remote_compaction_transfer_write_bytes",
            r.transfer_write_bytes,
        );
        s.kv("remote_compaction_lack_of_resources", r.lack_of_resources);
        s.kv(
            "remote_compaction_service_unreachable",
            r.service_unreachable,
        );
        s.kv("remote_compaction_verify_failures", r.verify_failures);
        s.kv("remote_compaction_failures_retriable", r.failures_retriable);
        s.kv("remote_compaction_failures_solvable", r.failures_solvable);
        s.kv("remote_compaction_failures_fatal", r.failures_fatal);
        s.kv("remote_compaction_workers_lost", r.workers_lost);
    }
    s.kv("user_bytes_written", st.user_bytes_written);
    s.kv("keys_written", st.keys_written);
    s.kv("write_amp", format!("{:.2}", st.write_amp));
    s.kv("compaction_read_bytes", st.compaction_read_bytes);
    s.kv("compaction_write_bytes", st.compaction_write_bytes);
    s.kv("gets", st.gets);
    s.kv("get_found", st.get_found);
    s.kv("bloom_checked", st.bloom_checked);
    s.kv("bloom_useful", st.bloom_useful);
    s.kv("bloom_false_positive", st.bloom_false_positive);
    s.kv("trie_checked", st.trie_checked);
    s.kv("trie_rejected", st.trie_rejected);
    s.kv("block_cache_hits", st.block_cache_hits);
    s.kv("block_cache_misses", st.block_cache_misses);
    s.kv("block_cache_usage", st.block_cache_usage);
    s.kv("block_cache_capacity", st.block_cache_capacity);
    s.kv("row_cache_hits", st.row_cache_hits);
    s.kv("row_cache_misses", st.row_cache_misses);
    s.kv("row_cache_usage", st.row_cache_usage);
    s.kv("row_cache_capacity", st.row_cache_capacity);
    s.kv("block_reads", st.block_reads);
    s.kv("block_read_bytes", st.block_read_bytes);
    s.kv("stall_micros", st.stall_micros);
    s.kv("slowdowns", st.slowdowns);
    s.kv("stops", st.stops);
    s.kv("live_snapshots", st.live_snapshots);
    for name in [
        "strata.estimate-num-keys",
        "strata.base-level",
        "strata.latest-sequence-number",
    ] {
        if let Some(v) = db.property(name) {
            s.kv(&name.replace(['.', '-'], "_"), v);
        }
    }
    for l in &st.levels {
        if l.files == 0 && l.compactions == 0 && l.write_bytes == 0 && l.level > 0 {
            continue;
        }
        s.kv(
            &format!("level{}", l.level),
            format!(
                "files={},runs={},bytes={},target_bytes={},compactions={},trivial_moves={},read_bytes={},write_bytes={},write_amp={:.2},compaction_secs={:.3}",
                l.files,
                l.sorted_runs,
                l.bytes,
                l.target_bytes,
                l.compactions,
                l.trivial_moves,
                l.read_bytes,
                l.write_bytes,
                l.write_amp,
                l.compaction_secs
            ),
        );
    }
}
