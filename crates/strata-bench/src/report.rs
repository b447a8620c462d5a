//! The text report and the figures derived from engine counters: db_bench's result line
//! (`name : X micros/op Y ops/sec ...`), a latency line per operation type (p50/p99/p99.9 from
//! the HDR histograms), the tier report (fast-tier hit rate, capacity-tier requests and bytes,
//! write amplification, cache hit rates) and the cloud cost estimate.
//!
//! Invariants: pure functions of [`PhaseResult`]s and [`EngineCounters`]; a figure an engine
//! does not count is shown as `n/a`, never as zero. Depends on `results`, `engine` (counters)
//! and `latency`; must not depend on the runner or on any engine implementation.

use std::fmt::Write as _;

use crate::engine::EngineCounters;
use crate::latency::LatencySummary;
use crate::results::{CostReport, PhaseResult, Prices, TierReport};

const SECS_PER_MONTH: f64 = 30.0 * 86_400.0;

fn sub(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a?.saturating_sub(b.unwrap_or(0)))
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// The differences of the counters between `before` and `after` (gauges keep `after`).
pub fn counters_delta(before: &EngineCounters, after: &EngineCounters) -> EngineCounters {
    EngineCounters {
        user_bytes_written: sub(after.user_bytes_written, before.user_bytes_written),
        flush_bytes: sub(after.flush_bytes, before.flush_bytes),
        compaction_write_bytes: sub(after.compaction_write_bytes, before.compaction_write_bytes),
        compaction_read_bytes: sub(after.compaction_read_bytes, before.compaction_read_bytes),
        block_cache_hits: sub(after.block_cache_hits, before.block_cache_hits),
        block_cache_misses: sub(after.block_cache_misses, before.block_cache_misses),
        fast_block_reads: sub(after.fast_block_reads, before.fast_block_reads),
        pcache_hits: sub(after.pcache_hits, before.pcache_hits),
        promotion_hits: sub(after.promotion_hits, before.promotion_hits),
        pcache_misses: sub(after.pcache_misses, before.pcache_misses),
        capacity_gets: sub(after.capacity_gets, before.capacity_gets),
        capacity_get_bytes: sub(after.capacity_get_bytes, before.capacity_get_bytes),
        capacity_puts: sub(after.capacity_puts, before.capacity_puts),
        capacity_put_bytes: sub(after.capacity_put_bytes, before.capacity_put_bytes),
        capacity_deletes: sub(after.capacity_deletes, before.capacity_deletes),
        capacity_lists: sub(after.capacity_lists, before.capacity_lists),
        capacity_requests: after.capacity_requests.as_ref().map(|a| {
            a.iter()
                .map(|(k, &n)| {
                    let was = before
                        .capacity_requests
                        .as_ref()
                        .and_then(|b| b.get(k))
                        .copied()
                        .unwrap_or(0);
                    (k.clone(), n.saturating_sub(was))
                })
                .collect()
        }),
        fast_table_bytes: after.fast_table_bytes,
        capacity_table_bytes: after.capacity_table_bytes,
        stall_micros: sub(after.stall_micros, before.stall_micros),
    }
}

/// Share of block reads that missed memory and were served locally (fast-tier tables or the
/// persistent cache) rather than by the capacity tier. Capacity reads are the persistent
/// cache's misses when it saw any traffic, else the capacity-tier GETs.
pub fn fast_hit_rate(d: &EngineCounters) -> Option<f64> {
    let fast = d.fast_block_reads? + d.pcache_hits.unwrap_or(0) + d.promotion_hits.unwrap_or(0);
    let pcache_traffic = d.pcache_hits.unwrap_or(0) + d.pcache_misses.unwrap_or(0);
    let capacity = if pcache_traffic > 0 {
        d.pcache_misses.unwrap_or(0)
    } else {
        d.capacity_gets.unwrap_or(0)
    };
    ratio(fast, fast + capacity)
}

/// The tier report of a phase whose counters went from `before` to `after`.
pub fn tier_report(before: &EngineCounters, after: &EngineCounters) -> TierReport {
    let d = counters_delta(before, after);
    let hit = |h: Option<u64>, m: Option<u64>| {
        let (h, m) = (h?, m?);
        ratio(h, h + m)
    };
    let written = d
        .flush_bytes
        .zip(d.compaction_write_bytes)
        .map(|(f, c)| f + c);
    TierReport {
        fast_hit_rate: fast_hit_rate(&d),
        block_cache_hit_rate: hit(d.block_cache_hits, d.block_cache_misses),
        pcache_hit_rate: hit(d.pcache_hits, d.pcache_misses),
        write_amp: written
            .zip(d.user_bytes_written)
            .and_then(|(w, u)| ratio(w, u)),
        capacity_requests: d.capacity_requests.clone(),
        capacity_requests_per_kop: None,
        delta: d,
    }
}

/// Object-store requests per 1,000 operations of a phase (`None` without request counts or
/// operations).
pub fn requests_per_kop(t: &TierReport, ops: u64) -> Option<f64> {
    let total: u64 = t.capacity_requests.as_ref()?.values().sum();
    (ops > 0).then(|| total as f64 * 1000.0 / ops as f64)
}

/// Requests by price class: (GET/HEAD, PUT/COPY/POST/LIST, DELETE). From the counts by kind
/// when the engine gives them, else from its GET, PUT and LIST counters.
fn requests_by_class(d: &EngineCounters) -> (u64, u64, u64) {
    use strata::stats::requests::{PriceClass, RequestKind};
    match &d.capacity_requests {
        Some(by_kind) => {
            let mut c = (0, 0, 0);
            for (name, &n) in by_kind {
                match RequestKind::ALL
                    .iter()
                    .find(|k| k.name() == name)
                    .map(|k| k.class())
                {
                    Some(PriceClass::Read) => c.0 += n,
                    Some(PriceClass::Delete) => c.2 += n,
                    // Unknown kinds are priced as the dearer class.
                    Some(PriceClass::Write) | None => c.1 += n,
                }
            }
            c
        }
        None => (
            d.capacity_gets.unwrap_or(0),
            d.capacity_puts.unwrap_or(0) + d.capacity_lists.unwrap_or(0),
            d.capacity_deletes.unwrap_or(0),
        ),
    }
}

/// The cost estimate of a phase that lasted `secs` with tier figures `t`.
pub fn cost(t: &TierReport, secs: f64, prices: &Prices) -> CostReport {
    let d = &t.delta;
    let (gets, puts, deletes) = requests_by_class(d);
    let get_dollars = gets as f64 / 1000.0 * prices.get_per_1k;
    let put_dollars =
        (puts as f64 * prices.put_per_1k + deletes as f64 * prices.delete_per_1k) / 1000.0;
    let gb = |b: Option<u64>| b.unwrap_or(0) as f64 / 1e9;
    let requests_dollars_per_month = if secs > 0.0 {
        (get_dollars + put_dollars) / secs * SECS_PER_MONTH
    } else {
        0.0
    };
    let capacity_storage_dollars_per_month = gb(d.capacity_table_bytes) * prices.capacity_gb_month;
    let fast_storage_dollars_per_month = gb(d.fast_table_bytes) * prices.fast_gb_month;
    CostReport {
        prices: prices.clone(),
        get_dollars,
        put_dollars,
        requests_dollars_per_month,
        capacity_storage_dollars_per_month,
        fast_storage_dollars_per_month,
        usd_per_month: requests_dollars_per_month
            + capacity_storage_dollars_per_month
            + fast_storage_dollars_per_month,
    }
}

/// Bytes in binary units (`12.3 MiB`).
pub fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// Dollars with precision that suits small amounts.
pub fn dollars(v: f64) -> String {
    if v == 0.0 {
        "$0".into()
    } else if v < 0.01 {
        format!("${v:.6}")
    } else if v < 100.0 {
        format!("${v:.2}")
    } else {
        format!("${v:.0}")
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |v| format!("{:.1}%", v * 100.0))
}

fn num(v: Option<u64>) -> String {
    v.map_or_else(|| "n/a".into(), |v| v.to_string())
}

fn bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "n/a".into(), human_bytes)
}

/// db_bench's result line.
pub fn result_line(p: &PhaseResult) -> String {
    let mut extra = String::new();
    if let Some(mb) = p.write_mb_per_sec {
        let _ = write!(extra, " {mb:6.1} MB/s");
    }
    if p.reads > 0 {
        let _ = write!(extra, " ({} of {} found)", p.reads_found, p.reads);
    }
    if p.name == "randomtransaction" {
        let _ = write!(extra, " ({} conflicts)", p.txn_conflicts);
    }
    format!(
        "{:<12} : {:11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}",
        p.name,
        p.micros_per_op,
        p.ops_per_sec.round() as u64,
        p.elapsed_secs,
        p.ops,
        extra
    )
}

fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The latency line of one operation type.
pub fn latency_line(l: &LatencySummary) -> String {
    format!(
        "{:<12} : latency (us) {:<6} p50 {} p99 {} p99.9 {} max {} mean {} (n={})",
        "",
        l.op.name(),
        fmt_us(l.p50_us),
        fmt_us(l.p99_us),
        fmt_us(l.p999_us),
        fmt_us(l.max_us),
        fmt_us(l.mean_us),
        l.count
    )
}

/// The tier lines of a phase: hit rates and write amplification; capacity-tier requests and
/// the cost estimate when a capacity tier was used.
pub fn tier_lines(t: &TierReport, c: &CostReport) -> Vec<String> {
    let d = &t.delta;
    let pad = format!("{:<12} : ", "");
    let mut v = vec![format!(
        "{pad}fast-tier hit rate {} (fast-tier blocks {}, persistent cache hits {}, promotion cache hits {}, capacity reads {}); block cache hit rate {}; persistent cache hit rate {}; write-amp {}",
        pct(t.fast_hit_rate),
        num(d.fast_block_reads),
        num(d.pcache_hits),
        num(d.promotion_hits),
        num(if d.pcache_hits.unwrap_or(0) + d.pcache_misses.unwrap_or(0) > 0 {
            d.pcache_misses
        } else {
            d.capacity_gets
        }),
        pct(t.block_cache_hit_rate),
        pct(t.pcache_hit_rate),
        t.write_amp.map_or_else(|| "n/a".into(), |w| format!("{w:.2}")),
    )];
    let capacity_used = d.capacity_table_bytes.unwrap_or(0) > 0
        || d.capacity_gets.unwrap_or(0) > 0
        || d.capacity_puts.unwrap_or(0) > 0;
    if capacity_used {
        v.push(format!(
            "{pad}capacity tier: {} GET ({}), {} PUT ({}), {} DELETE, {} LIST; tables: fast {} capacity {}",
            num(d.capacity_gets),
            bytes(d.capacity_get_bytes),
            num(d.capacity_puts),
            bytes(d.capacity_put_bytes),
            num(d.capacity_deletes),
            num(d.capacity_lists),
            bytes(d.fast_table_bytes),
            bytes(d.capacity_table_bytes),
        ));
        if let Some(by_kind) = &t.capacity_requests {
            let kinds: Vec<String> = by_kind
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            v.push(format!(
                "{pad}object-store requests: {} ({} per 1,000 ops): {}",
                by_kind.values().sum::<u64>(),
                t.capacity_requests_per_kop
                    .map_or_else(|| "n/a".into(), |r| format!("{r:.2}")),
                if kinds.is_empty() {
                    "none".into()
                } else {
                    kinds.join(", ")
                },
            ));
        }
        v.push(format!(
            "{pad}est. cloud cost: requests {} (GET {} + PUT/LIST {}), {}/month at this rate; storage {}/month capacity + {}/month fast",
            dollars(c.get_dollars + c.put_dollars),
            dollars(c.get_dollars),
            dollars(c.put_dollars),
            dollars(c.requests_dollars_per_month),
            dollars(c.capacity_storage_dollars_per_month),
            dollars(c.fast_storage_dollars_per_month),
        ));
    } else if d.fast_table_bytes.is_some() {
        v.push(format!(
            "{pad}tables: fast {} (no capacity tier); est. storage {}/month",
            bytes(d.fast_table_bytes),
            dollars(c.fast_storage_dollars_per_month)
        ));
    }
    v
}

/// The whole report of a phase.
pub fn phase_report(p: &PhaseResult) -> String {
    let mut s = result_line(p);
    s.push('\n');
    if let Some(settle) = p.settle_secs {
        let _ = writeln!(
            s,
            "{:<12} : settled (flush + compactions) in {settle:.3} seconds",
            ""
        );
    }
    for l in &p.latency {
        s.push_str(&latency_line(l));
        s.push('\n');
    }
    for l in tier_lines(&p.tier, &p.cost) {
        s.push_str(&l);
        s.push('\n');
    }
    if let Some(pr) = &p.process {
        let per = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let _ = writeln!(
            s,
            "{:<12} : process: {} B read, {} B written per op (storage), {} CPU µs per op, peak RSS {:.1} MiB",
            "",
            per(pr.read_bytes_per_op),
            per(pr.write_bytes_per_op),
            per(pr.cpu_micros_per_op),
            pr.peak_rss_bytes as f64 / 1_048_576.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{OpType, PhaseRole};

    fn counters(scale: u64) -> EngineCounters {
        EngineCounters {
            user_bytes_written: Some(100 * scale),
            flush_bytes: Some(100 * scale),
            compaction_write_bytes: Some(150 * scale),
            compaction_read_bytes: Some(120 * scale),
            block_cache_hits: Some(90 * scale),
            block_cache_misses: Some(10 * scale),
            fast_block_reads: Some(6 * scale),
            pcache_hits: Some(2 * scale),
            pcache_misses: Some(2 * scale),
            promotion_hits: None,
            capacity_gets: Some(3 * scale),
            capacity_get_bytes: Some(3000 * scale),
            capacity_puts: Some(scale),
            capacity_put_bytes: Some(scale << 20),
            capacity_deletes: Some(0),
            capacity_lists: Some(0),
            capacity_requests: None,
            fast_table_bytes: Some(1_000_000_000),
            capacity_table_bytes: Some(10_000_000_000),
            stall_micros: Some(0),
        }
    }

    #[test]
    fn tier_figures() {
        let t = tier_report(&counters(1), &counters(3));
        // 12 fast blocks + 4 cache hits vs 4 cache misses.
        assert_eq!(t.fast_hit_rate, Some(0.8));
        assert_eq!(t.block_cache_hit_rate, Some(0.9));
        assert_eq!(t.pcache_hit_rate, Some(0.5));
        assert_eq!(t.write_amp, Some(2.5));
        assert_eq!(t.delta.capacity_gets, Some(6));
        assert_eq!(t.delta.fast_table_bytes, Some(1_000_000_000));
        // Without counters the figures are unknown, not zero.
        let none = tier_report(&EngineCounters::default(), &EngineCounters::default());
        assert_eq!(none.fast_hit_rate, None);
        assert_eq!(none.write_amp, None);
        // Without a persistent cache, capacity GETs are the capacity reads.
        let d = EngineCounters {
            fast_block_reads: Some(3),
            capacity_gets: Some(1),
            ..Default::default()
        };
        assert_eq!(fast_hit_rate(&d), Some(0.75));
    }

    #[test]
    fn cost_estimate() {
        let t = tier_report(&EngineCounters::default(), &counters(1000));
        let prices = Prices {
            get_per_1k: 0.0004,
            put_per_1k: 0.005,
            capacity_gb_month: 0.023,
            fast_gb_month: 0.08,
            delete_per_1k: 0.0,
        };
        let c = cost(&t, 10.0, &prices);
        assert!((c.get_dollars - 3.0 * 0.0004).abs() < 1e-12);
        assert!((c.put_dollars - 0.005).abs() < 1e-12);
        assert!((c.requests_dollars_per_month - 0.0062 / 10.0 * 2_592_000.0).abs() < 1e-6);
        assert!((c.capacity_storage_dollars_per_month - 0.23).abs() < 1e-12);
        assert!((c.fast_storage_dollars_per_month - 0.08).abs() < 1e-12);
        assert!((c.usd_per_month - c.requests_dollars_per_month - 0.31).abs() < 1e-9);
        // Counted by kind, requests are priced by their class: a HEAD and ranged GETs as
        // GETs, multipart parts and LISTs as PUTs, DELETEs at their own (zero) price.
        let by_kind = |n: u64| {
            Some(
                [
                    ("get_range", 2 * n),
                    ("head", n),
                    ("multipart_part", n),
                    ("list", n),
                    ("delete", n),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            )
        };
        let before = EngineCounters {
            capacity_requests: by_kind(1),
            ..Default::default()
        };
        let after = EngineCounters {
            capacity_requests: by_kind(1001),
            ..Default::default()
        };
        let mut t = tier_report(&before, &after);
        assert_eq!(t.capacity_requests.as_ref().unwrap()["get_range"], 2000);
        t.capacity_requests_per_kop = requests_per_kop(&t, 50_000);
        assert_eq!(t.capacity_requests_per_kop, Some(120.0));
        let c = cost(&t, 10.0, &prices);
        assert!((c.get_dollars - 3.0 * 0.0004).abs() < 1e-12, "{c:?}");
        assert!((c.put_dollars - 2.0 * 0.005).abs() < 1e-12, "{c:?}");
    }

    fn phase() -> PhaseResult {
        let t = tier_report(&counters(1), &counters(2));
        PhaseResult {
            name: "readrandom".into(),
            role: PhaseRole::Benchmark,
            threads: 2,
            start_secs: 0.0,
            warmup_secs: 0.0,
            ops: 1_000_000,
            elapsed_secs: 2.5,
            micros_per_op: 5.0,
            ops_per_sec: 400_000.4,
            write_mb_per_sec: None,
            reads_found: 632_000,
            txn_conflicts: 0,
            reads: 1_000_000,
            latency: vec![LatencySummary {
                op: OpType::Read,
                count: 1_000_000,
                mean_us: 4.9,
                p50_us: 3.21,
                p99_us: 25.5,
                p999_us: 180.2,
                max_us: 5012.0,
            }],
            settle_secs: None,
            cost: cost(&t, 2.5, &Prices::default()),
            tier: t,
            process: None,
            hotrap: None,
            logstore: None,
            compaction: None,
            stages: vec![],
            timeseries: vec![],
        }
    }

    #[test]
    fn db_bench_lines() {
        let p = phase();
        assert_eq!(
            result_line(&p),
            "readrandom   :       5.000 micros/op 400000 ops/sec 2.500 seconds 1000000 operations; (632000 of 1000000 found)"
        );
        assert_eq!(
            latency_line(&p.latency[0]),
            "             : latency (us) read   p50 3.21 p99 25.5 p99.9 180 max 5012 mean 4.90 (n=1000000)"
        );
        let mut w = phase();
        w.name = "fillrandom".into();
        w.reads = 0;
        w.write_mb_per_sec = Some(44.25);
        assert!(
            result_line(&w).ends_with("operations;   44.2 MB/s"),
            "{}",
            result_line(&w)
        );
        let r = phase_report(&p);
        assert!(r.contains("fast-tier hit rate 80.0%"), "{r}");
        assert!(
            r.contains("capacity tier: 3 GET (2.9 KiB), 1 PUT (1.0 MiB)"),
            "{r}"
        );
        assert!(r.contains("write-amp 2.50"), "{r}");
        assert!(r.contains("est. cloud cost"), "{r}");
    }

    #[test]
    fn dollar_amounts() {
        assert_eq!(dollars(0.0), "$0");
        assert_eq!(dollars(0.0012), "$0.001200");
        assert_eq!(dollars(1.234), "$1.23");
        assert_eq!(dollars(1234.5), "$1234");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
    }
}
