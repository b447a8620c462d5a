//! `--csv PATH`: the per-second time series of every measured phase as one CSV table, one row
//! per sample, for spreadsheets and plotting tools.
//!
//! Invariants: a fixed header (columns never depend on the data); `run_t` is seconds since
//! the start of the run, so phases line up on one axis; a figure the engine does not count is
//! an empty cell. Depends on `results` and `workloads` only.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use crate::results::BenchReport;
use crate::workloads::OpType;

/// The CSV text of `report`'s time series.
pub fn to_csv(report: &BenchReport) -> String {
    let mut s = String::from("engine,phase,role,t,run_t,interval_secs,ops,ops_per_sec");
    for op in OpType::ALL {
        let _ = write!(s, ",{}_ops", op.name());
    }
    s.push_str(",p50_us,p99_us,p999_us,fast_hit_rate,block_cache_hit_rate,pcache_hit_rate,capacity_gets,capacity_get_bytes,capacity_puts,stage,distribution\n");
    let opt_f = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.4}"));
    let opt_u = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
    for p in &report.phases {
        for x in &p.timeseries {
            let _ = write!(
                s,
                "{},{},{},{:.3},{:.3},{:.3},{},{:.1}",
                report.engine.name(),
                p.name,
                p.role.name(),
                x.t,
                p.start_secs + x.t,
                x.interval_secs,
                x.ops,
                x.ops_per_sec
            );
            for op in OpType::ALL {
                let _ = write!(s, ",{}", x.ops_by_type.get(&op).copied().unwrap_or(0));
            }
            let dist = p.stages.get(x.stage).map_or("", |(_, d)| d.as_str());
            let _ = writeln!(
                s,
                ",{:.2},{:.2},{:.2},{},{},{},{},{},{},{},{}",
                x.p50_us,
                x.p99_us,
                x.p999_us,
                opt_f(x.fast_hit_rate),
                opt_f(x.block_cache_hit_rate),
                opt_f(x.pcache_hit_rate),
                opt_u(x.capacity_gets),
                opt_u(x.capacity_get_bytes),
                opt_u(x.capacity_puts),
                x.stage,
                dist
            );
        }
    }
    s
}

pub fn write(path: &Path, report: &BenchReport) -> anyhow::Result<()> {
    std::fs::write(path, to_csv(report)).with_context(|| format!("writing {}", path.display()))
}
