//! `strata bench`'s command line: flag spellings, defaults and the value parsers.
use super::*;

fn parse(v: &[&str]) -> BenchArgs {
    let mut argv = vec!["strata-bench"];
    argv.extend_from_slice(v);
    BenchArgs::parse_from(argv).unwrap_or_else(|e| panic!("{v:?}: {e}"))
}

#[test]
fn defaults() {
    let a = parse(&[]);
    assert_eq!(a.benchmarks, vec!["fillrandom", "readrandom"]);
    assert_eq!(a.num, 1_000_000);
    assert_eq!(a.read_count(), 1_000_000);
    assert_eq!(a.key_size, 16);
    assert_eq!(a.value_size, ValueSize::fixed(100));
    assert_eq!(a.engine, EngineKind::Strata);
    assert_eq!(a.cache_size, 64 << 20);
    assert!(!a.use_existing_db && !a.sync);
    assert_eq!(a.db_dir(), PathBuf::from("strata-bench-data/strata"));
}

#[test]
fn db_bench_underscore_aliases_and_values() {
    let a = parse(&[
        "--benchmarks=fillseq,readrandom",
        "--key_size=24",
        "--value_size=1000",
        "--use_existing_db=1",
        "--cache_size=134217728",
        "--write_buffer_size=8M",
        "--bloom_bits=12",
        "--compression_type=zstd",
        "--compression_ratio=0.4",
        "--seek_nexts=50",
        "--batch_size=4",
        "--reads=500",
        "--sync=0",
        "--threads=2",
        "--fast_levels=2",
        "--capacity_latency_ms=5",
        "--persistent_cache_size=1GiB",
        "--max_background_compactions=4",
    ]);
    assert_eq!(a.benchmarks, vec!["fillseq", "readrandom"]);
    assert_eq!(a.key_size, 24);
    assert_eq!(a.value_size, ValueSize::fixed(1000));
    assert!(a.use_existing_db);
    assert!(!a.sync);
    assert_eq!(a.cache_size, 128 << 20);
    assert_eq!(a.write_buffer_size, 8 << 20);
    assert_eq!(a.bloom_bits, 12.0);
    assert_eq!(a.compression_type, CompressionKind::Zstd);
    assert_eq!(a.seek_nexts, 50);
    assert_eq!(a.batch_size, 4);
    assert_eq!(a.read_count(), 500);
    assert_eq!(a.op_count(), 500);
    assert_eq!(a.threads, 2);
    assert_eq!(a.fast_levels, Some(2));
    assert_eq!(a.capacity_latency_ms, 5.0);
    assert_eq!(a.persistent_cache_size, 1 << 30);
    assert_eq!(a.max_background_compactions, 4);
    // Dashes work too, and a bare boolean flag means true.
    let b = parse(&["--key-size", "32", "--use-existing-db", "--sync"]);
    assert_eq!(b.key_size, 32);
    assert!(b.use_existing_db && b.sync);
}

#[test]
fn workloads_distributions_and_tiers() {
    let a = parse(&[
        "--workload",
        "c",
        "--distribution",
        "hotspot-5%",
        "--engine",
        "rocksdb",
        "--value-size",
        "100..1000",
        "--capacity",
        "memory://x",
        "--capacity-mbps",
        "100",
        "--fast-dir",
        "/tmp/f",
        "--duration",
        "2m",
        "--warmup",
        "500ms",
        "--ops",
        "10",
        "--json",
        "r.json",
        "--csv",
        "r.csv",
        "--plot",
        "r.png",
        "--hotspot-schedule",
        "hotrap",
    ]);
    assert_eq!(a.workload, Some(Workload::YcsbC));
    assert_eq!(a.distribution, Some(DistSpec::hotspot(0.05)));
    assert_eq!(a.engine, EngineKind::Rocksdb);
    assert_eq!(
        a.value_size,
        ValueSize {
            min: 100,
            max: 1000
        }
    );
    assert_eq!(a.capacity.as_deref(), Some("memory://x"));
    assert_eq!(a.capacity_mbps, Some(100.0));
    assert_eq!(a.duration, 120.0);
    assert_eq!(a.warmup, 0.5);
    assert_eq!(a.op_count(), 10);
    assert_eq!(a.db_dir(), PathBuf::from("strata-bench-data/rocksdb"));
    for (w, want) in [
        ("ycsb-a", Workload::YcsbA),
        ("f", Workload::YcsbF),
        ("ro", Workload::ReadOnly),
        ("rw", Workload::ReadInsert75),
        ("wh", Workload::ReadInsert50),
        ("uh", Workload::ReadUpdate50),
    ] {
        assert_eq!(parse(&["--workload", w]).workload, Some(want));
    }
}

#[test]
fn bad_values_are_rejected() {
    for bad in [
        &["--value-size", "10..5"][..],
        &["--distribution", "gauss"],
        &["--cache-size", "12 parsecs"],
        &["--sync=maybe"],
        &["--workload", "z"],
        &["--engine", "leveldb"],
        &["--duration", "-3"],
    ] {
        let mut argv = vec!["strata-bench"];
        argv.extend_from_slice(bad);
        assert!(BenchArgs::parse_from(argv).is_err(), "{bad:?}");
    }
}

#[test]
fn sizes_and_durations() {
    assert_eq!(parse_bytes("4096").unwrap(), 4096);
    assert_eq!(parse_bytes("4k").unwrap(), 4096);
    assert_eq!(parse_bytes("4KB").unwrap(), 4000);
    assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
    assert_eq!(parse_bytes("64 MiB").unwrap(), 64 << 20);
    assert!(parse_bytes("x").is_err());
    assert_eq!(parse_secs("90").unwrap(), 90.0);
    assert_eq!(parse_secs("250ms").unwrap(), 0.25);
    assert_eq!(parse_secs("1h").unwrap(), 3600.0);
    assert!(parse_bool("2").is_err());
}
