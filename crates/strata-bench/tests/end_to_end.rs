//! End-to-end runs of the benchmark tool against Strata: tiny loads and runs over a
//! `memory://` (or `file://`) capacity tier that produce the JSON, CSV and PNG outputs.

use std::path::Path;

use strata_bench::workloads::{OpType, PhaseRole};
use strata_bench::{json, BenchArgs};

fn args(v: &[&str]) -> BenchArgs {
    let mut argv = vec!["strata-bench", "--no-progress"];
    argv.extend_from_slice(v);
    BenchArgs::parse_from(argv).unwrap_or_else(|e| panic!("{v:?}: {e}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Small tables and levels, so that a few thousand records reach the capacity tier.
const SMALL: &[&str] = &[
    "--write-buffer-size",
    "64KiB",
    "--target-file-size-base",
    "64KiB",
    "--max-bytes-for-level-base",
    "256KiB",
    "--cache-size",
    "128KiB",
];

#[test]
fn workload_over_memory_capacity_writes_json_csv_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let (db, j, c, p) = (
        dir.path().join("db"),
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.png"),
    );
    let mut v = vec![
        "--workload",
        "rw",
        "--num",
        "5000",
        "--ops",
        "3000",
        "--threads",
        "2",
        "--db",
        s(&db),
        "--capacity",
        "memory://strata-bench-e2e-workload",
        "--persistent-cache-size",
        "256KiB",
        "--json",
        s(&j),
        "--csv",
        s(&c),
        "--plot",
        s(&p),
    ];
    v.extend_from_slice(SMALL);
    let report = strata_bench::run_report(args(&v)).unwrap();

    assert_eq!(report.phases.len(), 2);
    let (load, run) = (&report.phases[0], &report.phases[1]);
    assert_eq!(load.role, PhaseRole::Load);
    assert_eq!(load.ops, 5000);
    assert!(load.settle_secs.is_some());
    assert_eq!(run.role, PhaseRole::Run);
    assert_eq!(run.ops, 3000);
    // 75% reads of loaded records (all found), 25% inserts.
    assert_eq!(run.reads, run.reads_found);
    let reads = run.latency_of(OpType::Read).unwrap().count;
    let inserts = run.latency_of(OpType::Insert).unwrap().count;
    assert_eq!(reads + inserts, 3000);
    assert!((1900..2600).contains(&reads), "{reads}");
    // The data reached the capacity tier, and the run read from it.
    assert!(run.tier.delta.capacity_table_bytes.unwrap() > 0);
    assert!(load.tier.delta.capacity_puts.unwrap() > 0);
    assert!(run.tier.fast_hit_rate.is_some());
    assert!(!run.timeseries.is_empty());

    // JSON: what was written reads back equal.
    assert_eq!(json::read(&j).unwrap(), report);
    // CSV: a header and a row per sample.
    let csv = std::fs::read_to_string(&c).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("engine,phase,role,t,run_t"));
    let samples: usize = report.phases.iter().map(|p| p.timeseries.len()).sum();
    assert_eq!(rows.len(), 1 + samples);
    assert!(rows[1..].iter().all(|r| r.starts_with("strata,")));
    // PNG: a real image.
    let png = std::fs::read(&p).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 10_000);
}

#[test]
fn every_db_bench_benchmark_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let report = strata_bench::run_report(args(&[
        "--benchmarks",
        "fillseq,fillrandom,filluniquerandom,overwrite,readrandom,readmissing,readseq,seekrandom,readwhilewriting,deleterandom",
        "--num",
        "2000",
        "--reads",
        "500",
        "--threads",
        "2",
        "--batch-size",
        "4",
        "--db",
        s(&db),
    ]))
    .unwrap();
    let by_name = |n: &str| report.phases.iter().find(|p| p.name == n).unwrap();
    assert_eq!(report.phases.len(), 10);
    assert_eq!(by_name("fillseq").ops, 2000);
    assert!(by_name("fillseq").write_mb_per_sec.is_some());
    assert_eq!(by_name("readrandom").ops, 500);
    // fillseq wrote every record: all reads find their key; no missing key is found.
    assert_eq!(by_name("readrandom").reads_found, 500);
    assert_eq!(by_name("readmissing").reads_found, 0);
    assert_eq!(by_name("readseq").ops, 500);
    assert_eq!(
        by_name("seekrandom")
            .latency_of(OpType::Scan)
            .unwrap()
            .count,
        500
    );
    let rww = by_name("readwhilewriting");
    assert_eq!(rww.ops, 500);
    assert!(rww.latency_of(OpType::Write).is_some());
    assert_eq!(by_name("deleterandom").latency[0].op, OpType::Delete);
}

#[test]
fn golden_copy_replaces_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let golden = dir.path().join("golden");
    let cap = format!("file://{}", dir.path().join("cap").display());
    let mut v = vec![
        "--workload",
        "c",
        "--num",
        "3000",
        "--ops",
        "1000",
        "--db",
        s(&db),
        "--capacity",
        &cap,
        "--golden",
        s(&golden),
    ];
    v.extend_from_slice(SMALL);
    let first = strata_bench::run_report(args(&v)).unwrap();
    assert_eq!(first.phases.len(), 2);
    assert!(golden.join("golden.json").exists());
    let second = strata_bench::run_report(args(&v)).unwrap();
    assert_eq!(second.phases.len(), 1, "the load phase is replaced");
    assert_eq!(second.phases[0].reads_found, 1000);
    // A different load does not reuse it.
    let mut other = v.clone();
    other[3] = "2500";
    let third = strata_bench::run_report(args(&other)).unwrap();
    assert_eq!(third.phases.len(), 2);
    // --use-existing-db runs on what is there, without loading.
    let mut existing = other.clone();
    existing.retain(|a| !a.starts_with("--golden") && !a.contains("golden"));
    existing.push("--use-existing-db");
    let fourth = strata_bench::run_report(args(&existing)).unwrap();
    assert_eq!(fourth.phases.len(), 1);
    assert_eq!(fourth.phases[0].reads_found, 1000);
}

#[test]
fn duration_schedule_and_warmup() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let p = dir.path().join("r.png");
    let report = strata_bench::run_report(args(&[
        "--workload",
        "uh",
        "--num",
        "2000",
        "--duration",
        "2.2",
        "--warmup",
        "200ms",
        "--hotspot-schedule",
        "0=uniform,1=hotspot:0.05@0.5",
        "--threads",
        "2",
        "--db",
        s(&db),
        "--plot",
        s(&p),
    ]))
    .unwrap();
    let run = &report.phases[1];
    assert!(
        run.elapsed_secs >= 2.2 && run.elapsed_secs < 3.0,
        "{}",
        run.elapsed_secs
    );
    assert_eq!(run.warmup_secs, 0.2);
    assert_eq!(run.stages.len(), 2);
    assert!(run.timeseries.len() >= 2);
    assert_eq!(run.timeseries.last().unwrap().stage, 1);
    assert!(run.latency_of(OpType::Update).is_some());
    assert!(p.exists());
}

#[test]
fn existing_db_loaded_in_another_key_order_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // fillrandom writes sequential-order keys (db_bench's encoding) and records it.
    strata_bench::run_report(args(&[
        "--benchmarks",
        "fillrandom",
        "--num",
        "2000",
        "--db",
        s(&db),
    ]))
    .unwrap();
    assert!(db.join(strata_bench::loadinfo::FILE).exists());
    // --workload reads hashed-order keys by default: refused, naming the flag that matches.
    let run = |extra: &[&str]| {
        let mut v = vec![
            "--workload",
            "c",
            "--use-existing-db",
            "--num",
            "2000",
            "--ops",
            "200",
            "--db",
            s(&db),
        ];
        v.extend_from_slice(extra);
        strata_bench::run_report(args(&v))
    };
    let e = format!("{:#}", run(&[]).unwrap_err());
    assert!(
        e.contains("key order") && e.contains("--key-order sequential"),
        "{e}"
    );
    // With the load's key order reads find the keys fillrandom wrote (it draws indices with
    // replacement, so about 1 - 1/e of them exist); in hashed order nearly none would be.
    let report = run(&["--key-order", "sequential"]).unwrap();
    let r = report.phases.iter().find(|p| p.name == "run").unwrap();
    assert!(
        r.reads_found * 2 > r.ops,
        "{} of {} found",
        r.reads_found,
        r.ops
    );
}
