//! `--json PATH`: the run's [`BenchReport`] as pretty-printed JSON, and reading it back (for
//! `bench/compare.sh` and tests). The schema is documented field by field in
//! `docs/bench-json.md` and identified by [`SCHEMA`] in every file.
//!
//! Invariants: what [`write`] writes, [`read`] reads back equal; a file of another schema is
//! rejected with a clear error rather than misread. Depends on `results` only.

use std::path::Path;

use anyhow::Context;

use crate::results::{BenchReport, SCHEMA};

pub fn to_string(report: &BenchReport) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(report)?)
}

pub fn from_str(s: &str) -> anyhow::Result<BenchReport> {
    let v: serde_json::Value = serde_json::from_str(s).context("not JSON")?;
    let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    anyhow::ensure!(
        schema == SCHEMA,
        "a strata-bench report of schema {schema:?}, this tool reads {SCHEMA:?}"
    );
    Ok(serde_json::from_value(v)?)
}

pub fn write(path: &Path, report: &BenchReport) -> anyhow::Result<()> {
    let s = to_string(report)?;
    std::fs::write(path, s + "\n").with_context(|| format!("writing {}", path.display()))
}

pub fn read(path: &Path) -> anyhow::Result<BenchReport> {
    let s = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    from_str(&s).with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::BenchArgs;
    use crate::engine::{EngineCounters, EngineKind};
    use crate::latency::LatencySummary;
    use crate::results::*;
    use crate::workloads::{OpType, PhaseRole};

    fn report() -> BenchReport {
        let args = BenchArgs::parse_from(["x", "--workload", "a", "--num", "10"]).unwrap();
        let sample = Sample {
            t: 1.0,
            interval_secs: 1.0,
            ops: 10,
            ops_per_sec: 10.0,
            ops_by_type: [(OpType::Read, 6), (OpType::Update, 4)]
                .into_iter()
                .collect(),
            p50_us: 1.5,
            p99_us: 20.0,
            p999_us: 30.0,
            fast_hit_rate: Some(0.9),
            block_cache_hit_rate: None,
            pcache_hit_rate: Some(0.25),
            capacity_gets: Some(3),
            capacity_get_bytes: Some(12288),
            capacity_puts: None,
            stage: 0,
        };
        BenchReport {
            schema: SCHEMA.into(),
            tool_version: "0.1.0".into(),
            engine: EngineKind::Strata,
            started_unix: 1_700_000_000,
            machine: Machine {
                hostname: "h".into(),
                os: "linux".into(),
                arch: "x86_64".into(),
                cpus: 2,
                cpu_model: None,
                memory_bytes: Some(1 << 30),
            },
            commit: Some("abc".into()),
            args,
            settings: [("block_size".to_string(), "4096".to_string())]
                .into_iter()
                .collect(),
            phases: vec![PhaseResult {
                name: "run".into(),
                role: PhaseRole::Run,
                threads: 2,
                start_secs: 0.5,
                warmup_secs: 0.0,
                ops: 10,
                elapsed_secs: 1.0,
                micros_per_op: 200000.0,
                ops_per_sec: 10.0,
                write_mb_per_sec: Some(0.1),
                reads_found: 6,
                txn_conflicts: 0,
                reads: 6,
                latency: vec![LatencySummary {
                    op: OpType::Read,
                    count: 6,
                    mean_us: 2.0,
                    p50_us: 1.5,
                    p99_us: 20.0,
                    p999_us: 30.0,
                    max_us: 30.0,
                }],
                settle_secs: None,
                process: Some(crate::process::ProcessReport {
                    read_bytes: 4096,
                    write_bytes: 8192,
                    read_bytes_per_op: Some(0.5),
                    write_bytes_per_op: Some(1.0),
                    cpu_secs: 1.5,
                    cpu_micros_per_op: Some(2.0),
                    peak_rss_bytes: 1 << 20,
                }),
                hotrap: Some(serde_json::json!({"fast_hit_rate": 0.95})),
                logstore: None,
                compaction: Some(serde_json::json!({"style": "split-forest"})),
                tier: TierReport {
                    fast_hit_rate: Some(0.9),
                    block_cache_hit_rate: None,
                    pcache_hit_rate: Some(0.25),
                    write_amp: Some(1.5),
                    capacity_requests: Some([("get_range".to_string(), 3)].into()),
                    capacity_requests_per_kop: Some(0.3),
                    delta: EngineCounters {
                        capacity_gets: Some(3),
                        ..Default::default()
                    },
                },
                cost: CostReport::default(),
                stages: vec![(0.0, "zipfian:0.99".into())],
                timeseries: vec![sample],
            }],
            space: Some(crate::space::report(10, 116.0, 2320, 0.1)),
            engine_stats: serde_json::json!({"text": "stats", "capacity_meta_bytes": 1}),
        }
    }

    #[test]
    fn round_trip() {
        let r = report();
        let s = to_string(&r).unwrap();
        assert_eq!(from_str(&s).unwrap(), r);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write(&p, &r).unwrap();
        assert_eq!(read(&p).unwrap(), r);
    }

    #[test]
    fn documented_field_names() {
        // The names docs/bench-json.md documents (a rename is a schema change).
        let v: serde_json::Value = serde_json::from_str(&to_string(&report()).unwrap()).unwrap();
        for k in [
            "schema",
            "tool_version",
            "engine",
            "started_unix",
            "machine",
            "commit",
            "args",
            "settings",
            "phases",
            "space",
            "engine_stats",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        let p = &v["phases"][0];
        for k in [
            "name",
            "role",
            "threads",
            "start_secs",
            "warmup_secs",
            "ops",
            "elapsed_secs",
            "micros_per_op",
            "ops_per_sec",
            "write_mb_per_sec",
            "reads_found",
            "reads",
            "txn_conflicts",
            "latency",
            "settle_secs",
            "tier",
            "process",
            "hotrap",
            "cost",
            "stages",
            "timeseries",
        ] {
            assert!(p.get(k).is_some(), "{k}");
        }
        assert_eq!(p["role"], "run");
        // The scale comparison's keys (issue 52).
        assert_eq!(p["process"]["write_bytes_per_op"], 1.0);
        assert_eq!(p["process"]["peak_rss_bytes"], 1 << 20);
        assert_eq!(v["space"]["space_amp"], 2.0);
        // The request bill's keys (issue 51's checks use these names).
        assert_eq!(p["tier"]["capacity_requests"]["get_range"], 3);
        assert_eq!(p["tier"]["capacity_requests_per_kop"], 0.3);
        assert!(p["cost"]["usd_per_month"].is_number());
        assert_eq!(p["latency"][0]["op"], "read");
        assert_eq!(p["timeseries"][0]["ops_by_type"]["update"], 4);
        assert_eq!(v["engine"], "strata");
        assert_eq!(v["args"]["workload"], "ycsb-a");
    }

    #[test]
    fn other_schemas_are_rejected() {
        let s = to_string(&report())
            .unwrap()
            .replace(SCHEMA, "strata-bench/0");
        assert!(from_str(&s).is_err());
        assert!(from_str("[]").is_err());
    }
}
