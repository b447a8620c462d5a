//! The results of a benchmark run, as data: [`BenchReport`] (one run: machine, arguments,
//! engine settings, phases), [`PhaseResult`] (throughput, latency per operation type, tier
//! figures, cost, per-second [`Sample`]s). Everything the text report, the JSON file, the CSV
//! and the plot show comes from here; `docs/bench-json.md` documents every field.
//!
//! Invariants: plain serializable data, no behaviour beyond small derived figures; field names
//! are the JSON schema (renaming one is a schema change: bump [`SCHEMA`]). Depends on
//! `latency`, `workloads`, `args` and `engine` for value types only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::args::BenchArgs;
use crate::engine::{EngineCounters, EngineKind};
use crate::latency::LatencySummary;
use crate::workloads::{OpType, PhaseRole};

/// The schema identifier written into every JSON report.
pub const SCHEMA: &str = "strata-bench/1";

/// One benchmark run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema: String,
    pub tool_version: String,
    pub engine: EngineKind,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    pub machine: Machine,
    /// `git describe`-style commit of the working directory, when known.
    pub commit: Option<String>,
    pub args: BenchArgs,
    /// The engine's effective settings.
    pub settings: BTreeMap<String, String>,
    pub phases: Vec<PhaseResult>,
    /// Space amplification after the last phase (`--space-amp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<crate::space::SpaceReport>,
    /// The engine's own statistics at the end of the run: `text` (its statistics text) and,
    /// for Strata, named figures. Reports written before this was an object hold the text as
    /// a string.
    pub engine_stats: serde_json::Value,
}

/// Where the run ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    pub cpu_model: Option<String>,
    pub memory_bytes: Option<u64>,
}

/// One phase (a db_bench benchmark, a load phase or a run phase).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    pub role: PhaseRole,
    pub threads: usize,
    /// Seconds from the start of the run to the start of the measured part of this phase.
    pub start_secs: f64,
    pub warmup_secs: f64,
    /// Measured operations that count toward throughput (readwhilewriting: reads only).
    pub ops: u64,
    pub elapsed_secs: f64,
    /// db_bench's figure: elapsed time × threads / operations.
    pub micros_per_op: f64,
    pub ops_per_sec: f64,
    /// Bytes written by the measured operations (keys and values), per second.
    pub write_mb_per_sec: Option<f64>,
    /// Reads that found their key, and reads.
    pub reads_found: u64,
    pub reads: u64,
    /// Transactions (`randomtransaction`) whose commit was refused as a conflict; counted in
    /// `ops`, they wrote nothing.
    #[serde(default)]
    pub txn_conflicts: u64,
    pub latency: Vec<LatencySummary>,
    /// Seconds spent flushing and waiting for compactions after a load phase.
    pub settle_secs: Option<f64>,
    pub tier: TierReport,
    /// The benchmark process's storage I/O, CPU and peak memory over the phase (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<crate::process::ProcessReport>,
    /// HotRAP's figures at the end of the phase (cumulative since the database was opened);
    /// absent when HotRAP is off or the engine has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hotrap: Option<serde_json::Value>,
    /// LogStore's figures at the end of the phase (compactions by kind, deferral, the cost
    /// model's measured inputs, per-level temperature histograms); absent with static
    /// placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logstore: Option<serde_json::Value>,
    /// Compaction-structure figures at the end of the phase (cumulative since open): for
    /// Strata, split-forest merges, moved and early-cleaned bytes, journal resumes, tables
    /// probed per lookup, parallel searches, and the peak space a compaction held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<serde_json::Value>,
    pub cost: CostReport,
    /// Distribution stages of the run phase: (seconds into the phase, distribution).
    pub stages: Vec<(f64, String)>,
    pub timeseries: Vec<Sample>,
}

impl PhaseResult {
    pub fn latency_of(&self, op: OpType) -> Option<&LatencySummary> {
        self.latency.iter().find(|l| l.op == op)
    }
}

/// What happened on the tiers during a phase (differences of [`EngineCounters`]; `None` where
/// the engine does not count it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierReport {
    /// Share of table block reads that missed memory and were served by the fast tier (its
    /// tables or the persistent cache) rather than the capacity tier.
    pub fast_hit_rate: Option<f64>,
    pub block_cache_hit_rate: Option<f64>,
    pub pcache_hit_rate: Option<f64>,
    pub write_amp: Option<f64>,
    /// Object-store requests by kind over the phase (the capacity tier's and the log
    /// location's; `None` where the engine does not count them by kind).
    #[serde(default)]
    pub capacity_requests: Option<std::collections::BTreeMap<String, u64>>,
    /// Those requests per 1,000 operations of the phase.
    #[serde(default)]
    pub capacity_requests_per_kop: Option<f64>,
    /// The counters' differences over the phase (gauges: their values at its end).
    pub delta: EngineCounters,
}

/// An estimate of what the phase would cost on a cloud, from the capacity-tier requests and
/// the bytes on each tier at its end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    pub prices: Prices,
    /// Dollars for this phase's GET requests, and for its PUT/LIST requests.
    pub get_dollars: f64,
    pub put_dollars: f64,
    /// Dollars per month for the requests if the phase's request rate were sustained.
    pub requests_dollars_per_month: f64,
    /// Dollars per month to store the tables on each tier.
    pub capacity_storage_dollars_per_month: f64,
    pub fast_storage_dollars_per_month: f64,
    /// The sum: requests at this rate and both tiers' storage, per month.
    #[serde(default)]
    pub usd_per_month: f64,
}

/// Cloud prices in dollars.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub get_per_1k: f64,
    pub put_per_1k: f64,
    pub capacity_gb_month: f64,
    pub fast_gb_month: f64,
    /// Price of 1000 DELETE requests (free on S3 Standard).
    #[serde(default)]
    pub delete_per_1k: f64,
}

/// One interval (normally a second) of a phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds from the start of the phase's measured part to the end of the interval.
    pub t: f64,
    pub interval_secs: f64,
    /// Operations that count toward throughput, and their rate.
    pub ops: u64,
    pub ops_per_sec: f64,
    /// Operations by type (all of them).
    pub ops_by_type: BTreeMap<OpType, u64>,
    /// Latency percentiles over all operations of the interval, in microseconds.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub fast_hit_rate: Option<f64>,
    pub block_cache_hit_rate: Option<f64>,
    pub pcache_hit_rate: Option<f64>,
    pub capacity_gets: Option<u64>,
    pub capacity_get_bytes: Option<u64>,
    pub capacity_puts: Option<u64>,
    /// Index of the distribution stage in force at the end of the interval.
    pub stage: usize,
}
