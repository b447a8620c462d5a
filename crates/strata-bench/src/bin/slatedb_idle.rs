//! `slatedb-idle`: what an idle SlateDB writer and an idle `DbReader` following it cost in
//! object-store requests, the peer figure beside `bench/replica.sh`'s idle phase (an idle
//! Strata writer and replica). A SlateDB database is loaded on the store (`KEYS` puts of
//! `VALUE_SIZE` bytes in durable batches, then flushed), a reader opens on the same store in `--mode`
//! (`follow-latest`: writes nothing; `managed-checkpoint`: SlateDB's default, which writes
//! and refreshes a checkpoint) polling every `--poll-ms` (Strata's replica refreshes every
//! second by default), both are left `--settle` seconds, then each one's requests are counted
//! over `--idle` seconds by Strata's own counting layer (the one `strata bench` bills both
//! engines with). Prints one JSON object. Built only with the `slatedb` feature:
//!
//! ```sh
//! cargo build --release -p strata-bench --features slatedb --bin slatedb-idle
//! target/release/slatedb-idle --store s3://bucket/slatedb-idle --idle 60
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use object_store::ObjectStore;
use slatedb::config::{DbReaderOptions, FlushOptions, FlushType};
use slatedb::{Db, DbReader, DbReaderMode, WriteBatch};
use strata::stats::{RequestCounters, RequestCounts};
use strata::storage::object::{store_from_url, CountingStore};

#[derive(Parser, Debug)]
struct Args {
    /// Object store URL (as a capacity tier's: `s3://…`, `file://…`); default: a fresh
    /// `file://` directory under /tmp
    #[arg(long)]
    store: Option<String>,
    /// Keys loaded before the idle period
    #[arg(long, default_value_t = 20_000)]
    keys: u64,
    /// Value size in bytes
    #[arg(long, default_value_t = 1024)]
    value_size: usize,
    /// The reader's mode: follow-latest or managed-checkpoint
    #[arg(long, default_value = "follow-latest")]
    mode: String,
    /// The reader's `manifest_poll_interval` in milliseconds
    #[arg(long, default_value_t = 1000)]
    poll_ms: u64,
    /// Seconds left to settle after the reader opens
    #[arg(long, default_value_t = 15)]
    settle: u64,
    /// Seconds counted
    #[arg(long, default_value_t = 60)]
    idle: u64,
}

fn per_minute(c: &RequestCounts, secs: f64) -> serde_json::Value {
    let by_kind: serde_json::Map<String, serde_json::Value> = c
        .by_kind()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (k.name().to_string(), (n as f64 * 60.0 / secs).into()))
        .collect();
    serde_json::json!({
        "requests_per_min": c.total() as f64 * 60.0 / secs,
        "by_kind_per_min": by_kind,
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mode = match args.mode.as_str() {
        "follow-latest" => DbReaderMode::FollowLatest,
        "managed-checkpoint" => DbReaderMode::ManagedCheckpoint,
        m => anyhow::bail!("--mode {m:?}: follow-latest or managed-checkpoint"),
    };
    let tmp = std::env::temp_dir().join(format!("slatedb-idle-{}", std::process::id()));
    let url = match &args.store {
        Some(u) => u.clone(),
        None => {
            std::fs::create_dir_all(&tmp)?;
            format!("file://{}", tmp.display())
        }
    };
    let (store, prefix) = store_from_url(&url)?;
    let counted = |c: &Arc<RequestCounters>| -> Arc<dyn ObjectStore> {
        Arc::new(CountingStore::new(store.clone(), c.clone()))
    };
    let (wreq, rreq) = (
        Arc::new(RequestCounters::default()),
        Arc::new(RequestCounters::default()),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let out = rt.block_on(async {
        let db = Db::builder(prefix.to_string(), counted(&wreq))
            .build()
            .await?;
        let value = vec![b'v'; args.value_size];
        // Batches of 500, each durable before the next.
        for start in (0..args.keys).step_by(500) {
            let mut b = WriteBatch::new();
            for i in start..(start + 500).min(args.keys) {
                b.put(format!("key{i:010}").as_bytes(), &value);
            }
            db.write(b).await?.await_durable().await?;
        }
        db.flush_with_options(FlushOptions {
            flush_type: FlushType::MemTable,
        })
        .await?;
        let opts = DbReaderOptions {
            manifest_poll_interval: Duration::from_millis(args.poll_ms),
            ..Default::default()
        };
        let reader = DbReader::open(prefix.to_string(), counted(&rreq), mode, opts).await?;
        let probe = format!("key{:010}", args.keys / 2);
        anyhow::ensure!(
            reader.get(probe.as_bytes()).await?.is_some(),
            "the reader does not see {probe}"
        );
        tokio::time::sleep(Duration::from_secs(args.settle)).await;
        let (w0, r0, start) = (wreq.snapshot(), rreq.snapshot(), Instant::now());
        tokio::time::sleep(Duration::from_secs(args.idle)).await;
        let secs = start.elapsed().as_secs_f64();
        let (w, r) = (wreq.snapshot().since(&w0), rreq.snapshot().since(&r0));
        reader.close().await?;
        db.close().await?;
        anyhow::Ok(serde_json::json!({
            "engine": "slatedb",
            "store": url.split("://").next().unwrap_or(""),
            "reader_mode": args.mode,
            "manifest_poll_ms": args.poll_ms,
            "keys": args.keys,
            "value_size": args.value_size,
            "settle_secs": args.settle,
            "idle_secs": secs,
            "writer": per_minute(&w, secs),
            "reader": per_minute(&r, secs),
        }))
    })?;
    if args.store.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
