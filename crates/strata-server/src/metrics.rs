//! Prometheus metrics: per-command request counters and latency histograms recorded by the
//! executor, the engine's statistics (tier latency histograms, compaction bytes, stalls, cache
//! hit rates, HotRAP promotions) read from `Db::stats()` at each scrape, and a minimal HTTP
//! endpoint serving them as text at `/metrics`.
//!
//! Invariants: nothing is recorded unless `--metrics-port` is set (`Shared::metrics` is
//! `None`); names follow Prometheus conventions (`strata_` prefix, `_total` counters, `_seconds`
//! and `_bytes` units). Encoding goes through `prometheus-client` (OpenMetrics text). Depends
//! on the engine's public stats API only; the engine knows nothing of this module.

use std::sync::Arc;
use std::time::Duration;

use crate::store::{Engine, EngineSlot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use strata::metrics::HistogramSnapshot;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, warn};

use crate::shutdown::ShutdownHandle;

/// The `cmd` label of the per-command metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CmdLabel {
    cmd: &'static str,
}

/// The server's metrics registry.
pub struct ServerMetrics {
    registry: Registry,
    commands: Family<CmdLabel, Counter>,
    durations: Family<CmdLabel, Histogram>,
}

impl std::fmt::Debug for ServerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerMetrics")
    }
}

impl ServerMetrics {
    pub fn new(engine: EngineSlot) -> Arc<Self> {
        let mut registry = Registry::default();
        let commands = Family::<CmdLabel, Counter>::default();
        // 10 µs .. ~5 s in factors of 4.
        let durations = Family::<CmdLabel, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(1e-5, 4.0, 10))) as fn() -> Histogram,
        );
        registry.register(
            "strata_commands",
            "Commands executed, by command name",
            commands.clone(),
        );
        registry.register_with_unit(
            "strata_command_duration",
            "Time to execute a command (before the segment's write commit), by command name",
            Unit::Seconds,
            durations.clone(),
        );
        registry.register_collector(Box::new(EngineCollector { engine }));
        Arc::new(ServerMetrics {
            registry,
            commands,
            durations,
        })
    }

    /// Records one executed command (`cmd`: its lowercase name, or `unknown`).
    pub fn observe(&self, cmd: &'static str, took: Duration) {
        let l = CmdLabel { cmd };
        self.commands.get_or_create(&l).inc();
        self.durations.get_or_create(&l).observe(took.as_secs_f64());
    }

    /// The metrics in text form.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Reads `Db::stats()` (a replica: `Replica::status()`) at each scrape.
struct EngineCollector {
    engine: EngineSlot,
}

impl std::fmt::Debug for EngineCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EngineCollector")
    }
}

/// A replica's gauges and counters: where it stands and what following costs.
fn replica_metrics(
    enc: &mut DescriptorEncoder,
    r: &strata::replica::Replica,
) -> Result<(), std::fmt::Error> {
    let s = r.status();
    gauge(
        enc,
        "strata_replica_applied_sequence",
        "The writer's last write batch the replica applied",
        None,
        s.applied_sequence as f64,
    )?;
    gauge(
        enc,
        "strata_replica_lag",
        "Time since the start of the replica's last successful refresh",
        Some(&Unit::Seconds),
        s.replica_lag_ms
            .map(|ms| ms as f64 / 1000.0)
            .unwrap_or(f64::NAN),
    )?;
    for (name, help, v) in [
        (
            "strata_replica_refreshes",
            "Refreshes that succeeded",
            s.refreshes,
        ),
        (
            "strata_replica_refresh_errors",
            "Refreshes that failed (reads kept the last state)",
            s.refresh_errors,
        ),
        (
            "strata_replica_log_requests",
            "Requests to the writer's log location (GET, LIST)",
            s.log_requests,
        ),
        (
            "strata_replica_log_lists",
            "LIST requests to the writer's log location",
            s.log_lists,
        ),
        (
            "strata_replica_capacity_requests",
            "Requests to the writer's capacity tier (table reads)",
            s.capacity_requests,
        ),
        (
            "strata_replica_fetched_bytes",
            "Bytes fetched from the log location",
            s.fetched_bytes,
        ),
        (
            "strata_replica_tables_rebuilt",
            "Fast-tier tables rebuilt from the writer's WAL",
            s.tables_rebuilt,
        ),
    ] {
        counter(enc, name, help, None, v)?;
    }
    Ok(())
}

/// A histogram already bucketed by the engine.
#[derive(Debug)]
struct SnapshotHistogram(HistogramSnapshot);

impl EncodeMetric for SnapshotHistogram {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(self.0.buckets.len() + 1);
        // prometheus-client wants per-bucket counts and accumulates them itself.
        let mut prev = 0;
        // Buckets up to 2^27 µs (~134 s); anything slower is counted in +Inf only.
        for &(le, cum) in self.0.buckets.iter().take(27) {
            buckets.push((le, cum - prev));
            prev = cum;
        }
        buckets.push((f64::MAX, self.0.count.saturating_sub(prev)));
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum_seconds,
            self.0.count,
            &buckets,
            None,
        )
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TierLabel {
    tier: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PathwayLabel {
    pathway: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabel {
    store: &'static str,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabel {
    store: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabel {
    cache: &'static str,
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, unit, c.metric_type())?)
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    v: f64,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, unit, g.metric_type())?)
}

impl Collector for EngineCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let engine = self.engine.load();
        let db = match &**engine {
            Engine::Writer(db) => db,
            Engine::Replica(r) => return replica_metrics(&mut enc, r),
        };
        let s = db.stats();
        let t = &s.tier;
        let secs = Some(&Unit::Seconds);
        let bytes = Some(&Unit::Bytes);

        for (name, help, fast, cap) in [
            (
                "strata_engine_read_duration",
                "Table block reads by tier: fast-tier file reads and capacity-tier range GETs",
                &t.fast_read_latency,
                &t.capacity_read_latency,
            ),
            (
                "strata_engine_write_duration",
                "Table writes by tier: fast-tier flushes and syncs, capacity-tier PUTs and upload parts",
                &t.fast_write_latency,
                &t.capacity_write_latency,
            ),
        ] {
            let mut m = enc.encode_descriptor(name, help, secs, MetricType::Histogram)?;
            for (tier, h) in [("fast", fast), ("capacity", cap)] {
                SnapshotHistogram(h.clone()).encode(m.encode_family(&TierLabel { tier })?)?;
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "strata_tier_table",
                "Bytes of live tables on each tier",
                bytes,
                MetricType::Gauge,
            )?;
            for (tier, v) in [
                ("fast", t.fast_table_bytes),
                ("capacity", t.capacity_table_bytes),
            ] {
                ConstGauge::new(v as i64).encode(m.encode_family(&TierLabel { tier })?)?;
            }
        }
        counter(&mut enc, "strata_engine_gets", "Point reads", None, s.gets)?;
        counter(
            &mut enc,
            "strata_engine_keys_written",
            "Keys written (puts, deletes)",
            None,
            s.keys_written,
        )?;
        counter(
            &mut enc,
            "strata_engine_user_written",
            "Bytes of user writes",
            bytes,
            s.user_bytes_written,
        )?;
        counter(
            &mut enc,
            "strata_wal_written",
            "Bytes appended to the write-ahead log",
            bytes,
            s.wal_bytes,
        )?;
        counter(
            &mut enc,
            "strata_flush_written",
            "Bytes written by memtable flushes",
            bytes,
            s.flush_bytes,
        )?;
        counter(
            &mut enc,
            "strata_compaction_read",
            "Bytes read by compactions",
            bytes,
            s.compaction_read_bytes,
        )?;
        counter(
            &mut enc,
            "strata_compaction_written",
            "Bytes written by compactions",
            bytes,
            s.compaction_write_bytes,
        )?;
        counter(
            &mut enc,
            "strata_compactions",
            "Compactions run (all levels)",
            None,
            s.levels.iter().map(|l| l.compactions).sum(),
        )?;
        let stall = ConstCounter::new(s.stall_micros as f64 / 1e6);
        stall.encode(enc.encode_descriptor(
            "strata_write_stall",
            "Time writers spent delayed or stopped by too many L0 files or memtables",
            secs,
            stall.metric_type(),
        )?)?;
        counter(
            &mut enc,
            "strata_write_slowdowns",
            "Writes delayed to let compaction catch up",
            None,
            s.slowdowns,
        )?;
        counter(
            &mut enc,
            "strata_write_stops",
            "Writes stopped until compaction caught up",
            None,
            s.stops,
        )?;
        {
            let mut m = enc.encode_descriptor(
                "strata_cache_hit_ratio",
                "Hit ratio of each cache since start (block: memory block cache; persistent: the capacity tier's local block cache; fast_tier: share of table reads served without the capacity tier)",
                None,
                MetricType::Gauge,
            )?;
            let ratio = |h: u64, m: u64| {
                if h + m == 0 {
                    0.0
                } else {
                    h as f64 / (h + m) as f64
                }
            };
            for (cache, v) in [
                ("block", ratio(s.block_cache_hits, s.block_cache_misses)),
                ("row", ratio(s.row_cache_hits, s.row_cache_misses)),
                ("persistent", t.pcache_hit_rate),
                ("fast_tier", t.fast_hit_rate),
            ] {
                ConstGauge::new(v).encode(m.encode_family(&CacheLabel { cache })?)?;
            }
        }
        counter(
            &mut enc,
            "strata_block_cache_hits",
            "Memory block cache hits",
            None,
            s.block_cache_hits,
        )?;
        counter(
            &mut enc,
            "strata_block_cache_misses",
            "Memory block cache misses",
            None,
            s.block_cache_misses,
        )?;
        counter(
            &mut enc,
            "strata_row_cache_hits",
            "Table probes answered by the row cache",
            None,
            s.row_cache_hits,
        )?;
        counter(
            &mut enc,
            "strata_row_cache_misses",
            "Table probes the row cache did not answer",
            None,
            s.row_cache_misses,
        )?;
        counter(
            &mut enc,
            "strata_capacity_requests_get",
            "Capacity-tier GET requests",
            None,
            t.capacity_gets,
        )?;
        {
            let mut m = enc.encode_descriptor(
                "strata_object_store_requests",
                "Object-store requests by the kind S3 bills (retries included): the capacity tier's and an object-store log location's",
                None,
                MetricType::Counter,
            )?;
            for (store, counts) in [("capacity", &t.capacity_requests), ("log", &t.log_requests)] {
                for (kind, n) in counts.by_kind() {
                    ConstCounter::new(n).encode(m.encode_family(&RequestLabel {
                        store,
                        kind: kind.name(),
                    })?)?;
                }
            }
        }
        for (name, help, f) in [
            (
                "strata_object_store_up",
                "1 while the store answers requests, 0 from a request failing after its retries until one succeeds",
                (|h: &strata::stats::HealthSnapshot| if h.down { 0.0 } else { 1.0 })
                    as fn(&strata::stats::HealthSnapshot) -> f64,
            ),
            (
                "strata_object_store_failing_requests",
                "Requests failed for good during the current outage (0 while up)",
                |h| h.failing_requests as f64,
            ),
            (
                "strata_object_store_down_seconds",
                "Seconds since the current outage began (0 while up)",
                |h| h.down_secs,
            ),
        ] {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (store, h) in [("capacity", &t.capacity_health), ("log", &t.log_health)] {
                ConstGauge::new(f(h)).encode(m.encode_family(&StoreLabel { store })?)?;
            }
        }
        gauge(
            &mut enc,
            "strata_capacity_pending_upload",
            "Bytes waiting to move to the capacity tier (the feeding fast level's excess over its target)",
            bytes,
            t.capacity_pending_upload_bytes as f64,
        )?;
        counter(
            &mut enc,
            "strata_capacity_get",
            "Bytes read from the capacity tier",
            bytes,
            t.capacity_get_bytes,
        )?;
        counter(
            &mut enc,
            "strata_capacity_put",
            "Bytes written to the capacity tier",
            bytes,
            t.capacity_put_bytes,
        )?;
        if let Some(h) = &s.hotrap {
            let mut m = enc.encode_descriptor(
                "strata_hotrap_promoted_records",
                "HotRAP records promoted to the fast tier, by pathway",
                None,
                MetricType::Counter,
            )?;
            for (pathway, v) in [
                ("compaction", h.promoted_by_compaction),
                ("flush", h.promoted_by_flush),
                ("retention", h.retained_records),
            ] {
                ConstCounter::new(v).encode(m.encode_family(&PathwayLabel { pathway })?)?;
            }
            counter(
                &mut enc,
                "strata_hotrap_cache_inserts",
                "Records put in the promotion cache",
                None,
                h.cache_inserts,
            )?;
            counter(
                &mut enc,
                "strata_hotrap_cache_hits",
                "Point reads served by the promotion cache",
                None,
                h.cache_hits,
            )?;
            let mut m = enc.encode_descriptor(
                "strata_hotrap_reads",
                "Point reads that found their record, by the tier that served it",
                None,
                MetricType::Counter,
            )?;
            for (tier, v) in [("fast", h.reads_fast), ("capacity", h.reads_capacity)] {
                ConstCounter::new(v).encode(m.encode_family(&TierLabel { tier })?)?;
            }
            gauge(
                &mut enc,
                "strata_hotrap_hot_set",
                "Key and value bytes of the records RALT holds hot",
                bytes,
                h.tracker.hot_set_bytes as f64,
            )?;
        }
        Ok(())
    }
}

/// Serves `GET /metrics` on `listener` until `shutdown`; other paths get 404.
pub async fn serve_http(
    listener: TcpListener,
    metrics: Arc<ServerMetrics>,
    shutdown: ShutdownHandle,
) {
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            accepted = listener.accept() => match accepted {
                Ok((sock, _)) => {
                    let m = metrics.clone();
                    tokio::spawn(async move {
                        if let Err(e) = answer(sock, &m).await {
                            debug!("metrics request: {e}");
                        }
                    });
                }
                Err(e) => {
                    warn!("metrics accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

/// One HTTP/1.x request and response; the connection closes after it.
async fn answer(mut sock: TcpStream, metrics: &ServerMetrics) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "request timed out")
            })??;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 16 << 10 {
            break buf.len();
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => match metrics.encode() {
            Ok(text) => (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                text,
            ),
            Err(_) => (
                "500 Internal Server Error",
                "text/plain",
                "encoding failed\n".into(),
            ),
        },
        ("GET", _) => ("404 Not Found", "text/plain", "try /metrics\n".into()),
        _ => ("405 Method Not Allowed", "text/plain", "only GET\n".into()),
    };
    let resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(resp.as_bytes()).await?;
    sock.shutdown().await
}
