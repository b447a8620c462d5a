//! `strata bench`: db_bench- and YCSB-style benchmarks for Strata and, behind cargo features,
//! RocksDB and SlateDB, with reports that show what happened on each tier.
//!
//! [`run`] is the whole tool: it plans the phases a command line asks for ([`workloads`]),
//! prepares the database directories ([`setup`], [`golden`]), opens the engine ([`engine`]),
//! runs each phase ([`runner`]), prints db_bench-style lines and the tier report ([`report`]),
//! and writes the JSON ([`json`]), CSV ([`timeseries`]) and PNG ([`plot`]) outputs.
//!
//! Module map (one concept per file): `args` (flags), `rng`, `keys` (record shape),
//! `distributions`, `workloads` (benchmarks, mixes, plan), `engine` (the `KvEngine` trait and
//! the engines), `latency` (HDR histograms), `runner`, `results` (the data model), `report`,
//! `json`, `timeseries`, `plot`, `golden`, `setup`, `machine`, `process` (the process's I/O,
//! CPU and memory per phase), `space` (space amplification at the end).
//! Depends on the `strata` crate's public API only; the engine never depends on this crate.

pub mod args;
pub mod distributions;
pub mod engine;
pub mod golden;
pub mod json;
pub mod keys;
pub mod latency;
pub mod loadinfo;
pub mod machine;
pub mod plot;
pub mod process;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod setup;
pub mod space;
pub mod timeseries;
pub mod workloads;

pub use args::BenchArgs;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::AtomicU64;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::engine::KvEngine;
use crate::golden::{Golden, LoadSpec};
use crate::keys::{KeySpace, ValueSource};
use crate::results::{BenchReport, Prices, SCHEMA};
use crate::runner::RunContext;
use crate::workloads::PhaseRole;

/// Runs the benchmark described by `args`, printing the report to stdout, and returns it.
pub fn run_report(args: BenchArgs) -> anyhow::Result<BenchReport> {
    let mut phases = workloads::plan(&args)?;
    anyhow::ensure!(
        engine::available(args.engine),
        "this build has no {} engine: rebuild with `--features {}`",
        args.engine.name(),
        args.engine.name()
    );
    anyhow::ensure!(
        args.golden.is_none() || args.workload.is_some(),
        "--golden needs --workload (it replaces the load phase)"
    );
    let cfg = setup::engine_config(&args)?;
    let key_order = workloads::key_order(&args);
    let keys = KeySpace::new(args.key_size, key_order)?;
    let values = ValueSource::new(args.value_size, args.compression_ratio, args.seed);
    let dirs = setup::engine_dirs(args.engine, &cfg);

    // Prepare the directories: existing, restored from a golden copy, or fresh.
    let load_spec = LoadSpec::of(&args, key_order);
    let golden = args.golden.as_ref().map(Golden::new);
    if golden.is_some() {
        anyhow::ensure!(
            cfg.capacity
                .as_deref()
                .is_none_or(|u| u.starts_with("file://")),
            "--golden needs the capacity tier on file:// (it copies directories)"
        );
    }
    let mut restored = false;
    let want = loadinfo::LoadRecord {
        key_order,
        key_size: args.key_size,
        value_size: args.value_size,
        num: args.num,
        seed: args.seed,
    };
    let mut loaded = None;
    if args.use_existing_db {
        anyhow::ensure!(
            setup::has_data(&cfg.fast_dir) || setup::has_data(&cfg.db_dir),
            "--use-existing-db: no database in {}",
            cfg.db_dir.display()
        );
        match loadinfo::read(&cfg.db_dir)? {
            Some(have) => {
                for w in loadinfo::check(&have, &want)? {
                    eprintln!("warning: {w}");
                }
                loaded = Some(have);
            }
            None => eprintln!(
                "warning: --use-existing-db: {} has no {} (loaded by an older strata bench?): \
                 cannot check that its keys match this run's ({} order, {}-byte keys, {} records)",
                cfg.db_dir.display(),
                loadinfo::FILE,
                key_order,
                args.key_size,
                args.num
            ),
        }
    } else {
        setup::wipe(args.engine, &cfg)?;
        if let Some(g) = &golden {
            let t = Instant::now();
            restored = g.restore(&load_spec, &dirs)?;
            if restored {
                eprintln!(
                    "restored the loaded state from the golden copy in {} ({:.1}s)",
                    args.golden.as_ref().unwrap().display(),
                    t.elapsed().as_secs_f64()
                );
                phases.retain(|p| p.role != PhaseRole::Load);
            }
        }
        setup::create_dirs(args.engine, &cfg)?;
    }

    let run_start = Instant::now();
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let machine = machine::detect();
    let commit = machine::commit();
    let mut engine: Box<dyn KvEngine> = engine::open(args.engine, &cfg)?;
    let settings: BTreeMap<String, String> = engine.settings().into_iter().collect();
    print!(
        "{}",
        header(&args, &keys, &machine, commit.as_deref(), &settings)
    );

    let inserted = AtomicU64::new(args.num);
    let prices = prices(&args)?;
    let progress = !args.no_progress && std::io::stderr().is_terminal();
    let mut results = Vec::new();
    for (i, spec) in phases.iter().enumerate() {
        let ctx = RunContext {
            engine: engine.as_ref(),
            keys,
            values: &values,
            num: args.num,
            inserted: &inserted,
            seed: args.seed,
            progress,
            prices: prices.clone(),
            run_start,
        };
        let r = runner::run_phase(&ctx, spec, i as u64)?;
        print!("{}", report::phase_report(&r));
        results.push(r);
        if spec.role == PhaseRole::Load || matches!(spec.kind, workloads::PhaseKind::Fill { .. }) {
            // Keys of this run's order now fill 0..num (on top of what a matching load left).
            let mut rec = want.clone();
            if let Some(have) = &loaded {
                if loadinfo::check(have, &want).is_ok() {
                    rec.num = rec.num.max(have.num);
                }
            }
            loadinfo::write(&cfg.db_dir, &rec)?;
            loaded = Some(rec);
        }
        if spec.role == PhaseRole::Load {
            if let (Some(g), false) = (&golden, restored) {
                let t = Instant::now();
                engine.close()?;
                drop(engine);
                g.save(&load_spec, &dirs)?;
                eprintln!(
                    "saved the loaded state as a golden copy in {} ({:.1}s)",
                    args.golden.as_ref().unwrap().display(),
                    t.elapsed().as_secs_f64()
                );
                engine = engine::open(args.engine, &cfg)?;
            }
        }
    }
    let space = if args.space_amp {
        let record =
            args.key_size as f64 + (args.value_size.min + args.value_size.max) as f64 / 2.0;
        let s = space::measure(engine.as_ref(), record)?;
        match &s {
            Some(s) => println!(
                "space        : {} live records, {:.1} MB logical, {:.1} MB of tables: space amplification {} (settled in {:.1}s, counting scan {:.1}s)",
                s.live_keys,
                s.logical_bytes as f64 / 1e6,
                s.table_bytes as f64 / 1e6,
                s.space_amp.map_or("-".into(), |a| format!("{a:.3}")),
                s.settle_secs,
                s.scan_secs
            ),
            None => println!("space        : n/a ({} has no table-bytes gauge)", args.engine.name()),
        }
        s
    } else {
        None
    };
    let text = engine.stats_text();
    if !text.is_empty() {
        println!("\n{} statistics:\n{text}", args.engine.name());
    }
    let mut engine_stats = engine.stats_map();
    engine_stats.insert("text".into(), serde_json::Value::String(text));
    let engine_stats = serde_json::Value::Object(engine_stats);
    engine.close()?;

    let report = BenchReport {
        schema: SCHEMA.to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        engine: args.engine,
        started_unix,
        machine,
        commit,
        args: args.clone(),
        settings,
        phases: results,
        space,
        engine_stats,
    };
    if let Some(p) = &args.json {
        json::write(p, &report)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &args.csv {
        timeseries::write(p, &report)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &args.plot {
        plot::draw(&report, p)?;
        eprintln!("wrote {}", p.display());
    }
    Ok(report)
}

/// Runs the benchmark described by `args` (the entry point of `strata bench`).
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    run_report(args).map(|_| ())
}

/// db_bench's header: what is being measured, on what.
fn header(
    args: &BenchArgs,
    keys: &KeySpace,
    m: &results::Machine,
    commit: Option<&str>,
    settings: &BTreeMap<String, String>,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "strata-bench {}   engine: {}   commit: {}",
        env!("CARGO_PKG_VERSION"),
        args.engine.name(),
        commit.unwrap_or("unknown")
    );
    let _ = writeln!(
        s,
        "Machine:    {} cpus {}, {} ({})",
        m.cpus,
        m.cpu_model.as_deref().unwrap_or("?"),
        m.memory_bytes.map_or("?".into(), report::human_bytes),
        m.os
    );
    let _ = writeln!(
        s,
        "Keys:       {} bytes each ({} order)",
        keys.key_size(),
        keys.order()
    );
    let _ = writeln!(
        s,
        "Values:     {} bytes each ({:.0} bytes after compression)",
        args.value_size,
        args.value_size.mean() * args.compression_ratio
    );
    let _ = writeln!(s, "Entries:    {}", args.num);
    let _ = writeln!(s, "Threads:    {}", args.threads);
    let _ = writeln!(
        s,
        "Memory:     block cache {}, memtable {} x {}",
        report::human_bytes(args.cache_size),
        report::human_bytes(args.write_buffer_size),
        args.max_write_buffer_number
    );
    match &args.capacity {
        Some(c) => {
            let _ = writeln!(
                s,
                "Tiers:      fast {} ({}, HotRAP {}), capacity {} ({} ms/request, {}), persistent cache {}",
                args.fast_dir.as_ref().unwrap_or(&args.db_dir()).display(),
                match args.fast_levels {
                    Some(k) => format!("levels 0..={k}"),
                    None => format!("all but the last {} level(s)", args.capacity_levels),
                },
                if args.hotrap { "on" } else { "off" },
                c,
                args.capacity_latency_ms,
                args.capacity_mbps
                    .map_or("unlimited bandwidth".into(), |m| format!("{m} MB/s")),
                if args.persistent_cache_size > 0 {
                    format!(
                        "{:?} {}",
                        args.persistent_cache_kind,
                        report::human_bytes(args.persistent_cache_size)
                    )
                } else {
                    "off".into()
                }
            );
        }
        None => {
            let _ = writeln!(
                s,
                "Tiers:      one ({})",
                args.fast_dir.as_ref().unwrap_or(&args.db_dir()).display()
            );
        }
    }
    let _ = writeln!(
        s,
        "Settings:   {}",
        settings
            .iter()
            .filter(|(k, _)| k.as_str() != "engine")
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(s, "{}", "-".repeat(60));
    s
}

/// The prices of the cost estimate: the `--price-*` flags, then the `--price` table over them.
fn prices(args: &BenchArgs) -> anyhow::Result<Prices> {
    let mut fast_gb_month = args.price_fast_gb_month;
    let mut table = strata::stats::PriceTable {
        write_per_1k: args.price_put_per_1k,
        read_per_1k: args.price_get_per_1k,
        delete_per_1k: 0.0,
        storage_per_gb_month: args.price_capacity_gb_month,
    };
    if let Some(spec) = &args.price {
        // `fast` is the bench's own key (the fast tier's disk); the rest is the store's table.
        let mut rest = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some(("fast", v)) => {
                    fast_gb_month = v
                        .trim()
                        .parse()
                        .ok()
                        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| {
                            anyhow::anyhow!("--price `{part}`: not a non-negative number")
                        })?
                }
                _ => rest.push(part),
            }
        }
        table = table
            .with(&rest.join(","))
            .map_err(|e| anyhow::anyhow!("--price: {e}"))?;
    }
    Ok(Prices {
        get_per_1k: table.read_per_1k,
        put_per_1k: table.write_per_1k,
        delete_per_1k: table.delete_per_1k,
        capacity_gb_month: table.storage_per_gb_month,
        fast_gb_month,
    })
}
