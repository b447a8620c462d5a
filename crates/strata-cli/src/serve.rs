//! `strata serve`: flags and an optional TOML file become a `ServerConfig`, then the server
//! runs until SHUTDOWN, SIGTERM or SIGINT, and flushes and closes the database before exiting.
//!
//! Precedence: built-in defaults < the `--config` file < `--set KEY=VALUE` overrides < the
//! dedicated flags. All of them are merged as TOML keys before one deserialization, so a flag
//! and the file key it overrides can never disagree on parsing or validation.
//! Depends on `strata-server` (config, server) and `logging`; owns no server logic itself
//! (signals only trigger the server's shutdown handle).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use strata_server::{Server, ServerConfig};
use toml::{Table, Value};
use tracing::info;

/// Examples shown at the end of `strata serve --help`.
pub const EXAMPLES: &str = "\
Examples:
  strata serve --port 6380 --dir /var/lib/strata
  strata serve --port 7000 --dir /var/lib/strata --sync always --requirepass s3cret
  strata serve --config strata.toml --set engine.num-levels=5 --metrics-port 9100
  strata serve --capacity s3://bucket/db1 --wal-location /mnt/ebs/wal --extended-wal true";

/// Options of `strata serve`. Sizes accept Redis units (`64mb`, `1gb`, `512kb`).
// Defaults are written into the help text (`[default: ...]`) rather than given to clap: every
// field is an `Option`, so a flag left out does not override the file or `--set`. Help headings
// are per field (`help_heading`): clap's derive ignores `next_help_heading` on plain fields.
#[derive(Args, Debug, Default)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1]
    #[arg(long, help_heading = "Network")]
    pub bind: Option<String>,
    /// TCP port; 0 picks a free port (printed at start) [default: 6380]
    #[arg(long, help_heading = "Network")]
    pub port: Option<u16>,
    /// Data directory (the fast tier) [default: ./strata-data]
    #[arg(long, help_heading = "Storage and tiers")]
    pub dir: Option<PathBuf>,
    /// TOML configuration file (keys as in `CONFIG GET`; engine options in an `[engine]` table)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where SAVE and BGSAVE write checkpoints [default: <dir>-checkpoints]
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
    /// SAVE and BGSAVE write incremental backups to this object-store URL instead of
    /// checkpoints (see `strata backup`)
    #[arg(long, value_name = "URL")]
    pub backup_url: Option<String>,
    /// Serve as a read replica of the writer whose log location (--wal-location) this is; the
    /// writer runs with --extended-wal true, and --capacity names its capacity tier
    ///
    /// The replica polls the log location, serves reads, answers writes READONLY, and
    /// REPLICAOF NO ONE promotes it into the writer in --dir.
    #[arg(long, value_name = "WAL_URL", help_heading = "Durability")]
    pub replica_of: Option<String>,
    /// How often a replica polls the writer's log location, in milliseconds [default: 1000]
    #[arg(long, value_name = "MS", help_heading = "Durability")]
    pub replica_refresh_ms: Option<u64>,
    /// Serve Prometheus metrics at http://BIND:PORT/metrics; 0 picks a free port (printed at
    /// start) [default: off]
    #[arg(long, value_name = "PORT", help_heading = "Logging and metrics")]
    pub metrics_port: Option<u16>,
    /// Password of the `default` user (clients must AUTH)
    #[arg(long, help_heading = "Network")]
    pub requirepass: Option<String>,
    /// Most simultaneous clients [default: 10000]
    #[arg(long, help_heading = "Network")]
    pub maxclients: Option<u64>,
    /// Listen queue length (the kernel caps it at net.core.somaxconn) [default: 511]
    #[arg(long, value_name = "N", help_heading = "Network")]
    pub tcp_backlog: Option<u32>,
    /// Disconnect clients idle for this many seconds; 0 never [default: 0]
    #[arg(long, help_heading = "Network")]
    pub timeout: Option<u64>,
    /// Milliseconds a script may run before other clients get BUSY [default: 5000]
    #[arg(long, value_name = "MS", help_heading = "Network")]
    pub lua_time_limit: Option<u64>,
    /// Disconnect a Pub/Sub subscriber whose unread messages pass <hard>, or stay over <soft>
    /// for <seconds> (0 disables) [default: "32mb 8mb 60"]
    #[arg(long, value_name = "HARD SOFT SECONDS", help_heading = "Network")]
    pub client_output_buffer_limit_pubsub: Option<String>,
    /// Keyspace events published over Pub/Sub, as redis' notify-keyspace-events: K, E and
    /// classes g$lshzxetdmn or A (e.g. "KEA", "Ex") [default: "" (none)]
    #[arg(long, value_name = "CLASSES", help_heading = "Network")]
    pub notify_keyspace_events: Option<String>,
    /// When the write-ahead log is fsynced: always, everysec or no [default: everysec]
    #[arg(long, value_name = "POLICY", help_heading = "Durability")]
    pub sync: Option<String>,
    /// Log level (error, warn, info, debug, trace) or target list [default: info]
    #[arg(long, value_name = "LEVEL", help_heading = "Logging and metrics")]
    pub log_level: Option<String>,
    /// Largest bulk string a client may send [default: the engine's value limit]
    #[arg(long, value_name = "SIZE", help_heading = "Network")]
    pub proto_max_bulk_len: Option<String>,
    /// Most unprocessed input bytes held per client [default: 128mb]
    #[arg(long, value_name = "SIZE", help_heading = "Network")]
    pub client_query_buffer_limit: Option<String>,
    /// Engine calls running at once [default: 32]
    #[arg(long, help_heading = "Engine tuning")]
    pub engine_threads: Option<u64>,
    /// Threads serving connections; 0 picks half the CPU cores [default: 0]
    #[arg(long, help_heading = "Network")]
    pub io_threads: Option<u64>,
    /// Memtable size before a flush [default: 64mb]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub write_buffer_size: Option<String>,
    /// Block cache size; 0 disables it [default: 64mb]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub block_cache_size: Option<String>,
    /// Row cache size (point-lookup answers by table and key); 0 disables it [default: 0]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub row_cache_size: Option<String>,
    /// Put the blocks a memtable flush writes into the block cache, so that reads of recent
    /// writes stay in memory [default: true]
    #[arg(long, value_name = "BOOL", help_heading = "Engine tuning")]
    pub prepopulate_block_cache: Option<bool>,
    /// Bloom filter bits per key; 0 disables filters [default: 10]
    #[arg(long, value_name = "BITS", help_heading = "Engine tuning")]
    pub bloom_bits_per_key: Option<f64>,
    /// Keys per bucket of the data blocks' hash indexes, in 0..=1; 0 writes none [default: 0.75]
    ///
    /// Without hash indexes point lookups binary-search each block.
    #[arg(long, value_name = "RATIO", help_heading = "Engine tuning")]
    pub data_block_hash_ratio: Option<f64>,
    /// Compression by level, comma-separated (none, lz4, zstd, `zstd:<level>`); the last entry
    /// applies to deeper levels [default: none,none,lz4]
    #[arg(long, value_name = "LIST", help_heading = "Engine tuning")]
    pub compression: Option<String>,
    /// Data block size [default: 4kb]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub block_size: Option<String>,
    /// Target size of compaction output tables [default: 64mb]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub target_file_size_base: Option<String>,
    /// Target size of the base level [default: 256mb]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub max_bytes_for_level_base: Option<String>,
    /// Number of levels [default: 7]
    #[arg(long, help_heading = "Engine tuning")]
    pub num_levels: Option<u64>,
    /// Background compaction threads [default: 2]
    #[arg(long, help_heading = "Engine tuning")]
    pub max_background_compactions: Option<u64>,
    /// Compaction write rate limit per second; 0 unlimited [default: 0]
    #[arg(long, value_name = "SIZE", help_heading = "Engine tuning")]
    pub compaction_rate_limit: Option<String>,
    /// Capacity tier: `auto` (file://DIR/capacity), `none`, or a `file://`, `s3://` or
    /// `memory://` URL [default: auto]
    #[arg(long, value_name = "URL", help_heading = "Storage and tiers")]
    pub capacity: Option<String>,
    /// Levels, counted from the bottom, that live on the capacity tier [default: 1]
    #[arg(long, value_name = "N", help_heading = "Storage and tiers")]
    pub capacity_levels: Option<u64>,
    /// Instead of --capacity-levels: levels 0..=N stay on the fast tier (the data directory)
    #[arg(long, help_heading = "Storage and tiers")]
    pub fast_levels: Option<u64>,
    /// HotRAP: move hot records from the capacity tier back to the fast tier and keep them
    /// there [default: true]
    #[arg(long, value_name = "BOOL", help_heading = "Storage and tiers")]
    pub hotrap: Option<bool>,
    /// Compaction style of a new database: leveled or split-forest [default: leveled]
    #[arg(long, value_name = "STYLE", help_heading = "Engine tuning")]
    pub compaction_style: Option<String>,
    /// Table placement: static (by level alone) or logstore (tables also move between tiers by
    /// how often they are read) [default: static]
    #[arg(long, value_name = "POLICY", help_heading = "Storage and tiers")]
    pub placement_policy: Option<String>,
    /// Index format of capacity-tier tables: auto, mashmeta or block [default: auto]
    ///
    /// mashmeta is a compact trie that is index and exact filter in one; block is the block
    /// index and bloom filter of fast-tier tables; auto picks, per table, the trie when it is
    /// no larger.
    #[arg(long, value_name = "KIND", help_heading = "Storage and tiers")]
    pub capacity_index: Option<String>,
    /// Bound the capacity tier's requests: `50/s`, `$20/month` (S3 Standard prices) or both,
    /// comma-separated [default: unbounded]
    ///
    /// Compactions wait to stay within it; reads never wait but count against it.
    #[arg(long, value_name = "BUDGET", help_heading = "Storage and tiers")]
    pub capacity_request_budget: Option<String>,
    /// The object store's prices for INFO's monthly cost and a `$/month` budget:
    /// `put=0.005,get=0.0004,delete=0,storage=0.023` (dollars per 1,000 requests and per
    /// GB-month) [default: S3 Standard]
    #[arg(long, value_name = "PRICES", help_heading = "Storage and tiers")]
    pub capacity_price: Option<String>,
    /// Where the write-ahead log lives (and the manifest is mirrored): a directory apart from
    /// the data directory, or an s3://, file:// or memory:// URL [default: the data directory]
    #[arg(long, value_name = "DIR|URL", help_heading = "Durability")]
    pub wal_location: Option<String>,
    /// Keep in the log what `strata recover` needs to rebuild a lost data directory; needs
    /// --wal-location [default: false]
    ///
    /// The log is kept until fast-tier tables reach the capacity tier, and each new fast-tier
    /// table's key list is logged, so recovery can rebuild the tables in parallel.
    #[arg(long, value_name = "BOOL", help_heading = "Durability")]
    pub extended_wal: Option<bool>,
    /// At startup keep the log tail in memtables, flushed in the background, instead of
    /// writing it to L0 before serving [default: true]
    #[arg(long, value_name = "BOOL", help_heading = "Durability")]
    pub avoid_flush_during_recovery: Option<bool>,
    /// Fast-tier cache of capacity-tier blocks: lap (LSM-aware), naive or none [default: lap]
    #[arg(long, value_name = "KIND", help_heading = "Storage and tiers")]
    pub persistent_cache: Option<String>,
    /// Fast-tier bytes for the persistent cache of capacity-tier blocks [default: 256mb]
    #[arg(long, value_name = "SIZE", help_heading = "Storage and tiers")]
    pub persistent_cache_size: Option<String>,
    /// Emulated capacity-tier latency per request, in milliseconds (testing) [default: 0]
    #[arg(long, value_name = "MS", help_heading = "Storage and tiers")]
    pub capacity_latency_ms: Option<f64>,
    /// Emulated capacity-tier bandwidth in MB/s (testing) [default: unlimited]
    #[arg(long, value_name = "MBPS", help_heading = "Storage and tiers")]
    pub capacity_mbps: Option<f64>,
    /// Probability of an injected transient capacity-tier error, retried by the engine
    /// (testing) [default: 0]
    #[arg(long, value_name = "P", help_heading = "Storage and tiers")]
    pub capacity_error_rate: Option<f64>,
    /// Run compactions on this compaction service (`strata compaction-service`, at
    /// `http://host:port`) [default: off]
    #[arg(long, value_name = "URL", help_heading = "Remote compaction")]
    pub compaction_service: Option<String>,
    /// The compaction service's token (or `STRATA_COMPACTION_TOKEN`)
    #[arg(
        long,
        env = "STRATA_COMPACTION_TOKEN",
        hide_env_values = true,
        help_heading = "Remote compaction"
    )]
    pub compaction_token: Option<String>,
    /// With a compaction service: remote (every eligible job), hybrid (per job, by estimated
    /// time and local load) or local [default: hybrid]
    #[arg(long, value_name = "MODE", help_heading = "Remote compaction")]
    pub compaction_mode: Option<String>,
    /// Any setting, as KEY=VALUE with TOML keys (`timeout=5`, `engine.num-levels=5`);
    /// repeatable
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Parses an override's value as TOML (number, boolean, array...) or else takes it as a string.
fn toml_value(text: &str) -> Value {
    format!("v = {text}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_string()))
}

fn insert(table: &mut Table, dotted: &str, value: Value) -> Result<()> {
    let mut parts: Vec<&str> = dotted.split('.').collect();
    let last = parts.pop().context("empty key")?;
    let mut t = table;
    for p in parts {
        t = t
            .entry(p.to_string())
            .or_insert_with(|| Value::Table(Table::new()))
            .as_table_mut()
            .with_context(|| format!("'{p}' is not a table"))?;
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// Builds the configuration: defaults, then the file, then `--set`, then flags.
pub fn build_config(args: &ServeArgs) -> Result<ServerConfig> {
    let mut table = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            text.parse::<Table>()
                .with_context(|| format!("parsing {}", path.display()))?
        }
        None => Table::new(),
    };
    for kv in &args.set {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--set expects KEY=VALUE, got '{kv}'"))?;
        insert(&mut table, k.trim(), toml_value(v.trim()))?;
    }
    let s = |v: &String| Value::String(v.clone());
    let i = |v: u64| Value::Integer(i64::try_from(v).unwrap_or(i64::MAX));
    let mut set = |k: &str, v: Option<Value>| -> Result<()> {
        match v {
            Some(v) => insert(&mut table, k, v),
            None => Ok(()),
        }
    };
    set("bind", args.bind.as_ref().map(s))?;
    set("port", args.port.map(|p| i(u64::from(p))))?;
    set(
        "dir",
        args.dir
            .as_ref()
            .map(|d| Value::String(d.display().to_string())),
    )?;
    set("requirepass", args.requirepass.as_ref().map(s))?;
    set("maxclients", args.maxclients.map(i))?;
    set("tcp-backlog", args.tcp_backlog.map(|b| i(u64::from(b))))?;
    set("timeout", args.timeout.map(i))?;
    set("lua-time-limit", args.lua_time_limit.map(i))?;
    set(
        "client-output-buffer-limit-pubsub",
        args.client_output_buffer_limit_pubsub.as_ref().map(s),
    )?;
    set(
        "notify-keyspace-events",
        args.notify_keyspace_events.as_ref().map(s),
    )?;
    set(
        "sync",
        args.sync.as_ref().map(|v| s(&v.to_ascii_lowercase())),
    )?;
    set("log-level", args.log_level.as_ref().map(s))?;
    set(
        "proto-max-bulk-len",
        args.proto_max_bulk_len.as_ref().map(s),
    )?;
    set(
        "client-query-buffer-limit",
        args.client_query_buffer_limit.as_ref().map(s),
    )?;
    set("engine-threads", args.engine_threads.map(i))?;
    set("io-threads", args.io_threads.map(i))?;
    set(
        "engine.write-buffer-size",
        args.write_buffer_size.as_ref().map(s),
    )?;
    set(
        "engine.block-cache-size",
        args.block_cache_size.as_ref().map(s),
    )?;
    set("engine.row-cache-size", args.row_cache_size.as_ref().map(s))?;
    set(
        "engine.prepopulate-block-cache",
        args.prepopulate_block_cache.map(Value::Boolean),
    )?;
    set(
        "engine.bloom-bits-per-key",
        args.bloom_bits_per_key.map(Value::Float),
    )?;
    set(
        "engine.data-block-hash-ratio",
        args.data_block_hash_ratio.map(Value::Float),
    )?;
    set(
        "engine.compression",
        args.compression.as_ref().map(|c| {
            Value::Array(
                c.split(',')
                    .map(|x| Value::String(x.trim().to_string()))
                    .collect(),
            )
        }),
    )?;
    set("engine.block-size", args.block_size.as_ref().map(s))?;
    set(
        "engine.target-file-size-base",
        args.target_file_size_base.as_ref().map(s),
    )?;
    set(
        "engine.max-bytes-for-level-base",
        args.max_bytes_for_level_base.as_ref().map(s),
    )?;
    set("engine.num-levels", args.num_levels.map(i))?;
    set(
        "engine.max-background-compactions",
        args.max_background_compactions.map(i),
    )?;
    set(
        "engine.compaction-rate-limit",
        args.compaction_rate_limit.as_ref().map(s),
    )?;
    set(
        "metrics-port",
        args.metrics_port.map(|p| Value::Integer(p.into())),
    )?;
    set(
        "backup-dir",
        args.backup_dir
            .as_ref()
            .map(|p| Value::String(p.display().to_string())),
    )?;
    set("backup-url", args.backup_url.as_ref().map(s))?;
    set("replicaof", args.replica_of.as_ref().map(s))?;
    set(
        "replica-refresh-ms",
        args.replica_refresh_ms.map(|v| Value::Integer(v as i64)),
    )?;
    set("engine.capacity", args.capacity.as_ref().map(s))?;
    set("engine.fast-levels", args.fast_levels.map(i))?;
    set("engine.capacity-levels", args.capacity_levels.map(i))?;
    set("engine.hotrap", args.hotrap.map(Value::Boolean))?;
    set(
        "engine.compaction-style",
        args.compaction_style.as_ref().map(s),
    )?;
    set(
        "engine.placement-policy",
        args.placement_policy.as_ref().map(s),
    )?;
    set("engine.capacity-index", args.capacity_index.as_ref().map(s))?;
    set(
        "engine.capacity-request-budget",
        args.capacity_request_budget.as_ref().map(s),
    )?;
    set("engine.capacity-price", args.capacity_price.as_ref().map(s))?;
    set("engine.wal-location", args.wal_location.as_ref().map(s))?;
    set("engine.extended-wal", args.extended_wal.map(Value::Boolean))?;
    set(
        "engine.avoid-flush-during-recovery",
        args.avoid_flush_during_recovery.map(Value::Boolean),
    )?;
    set(
        "engine.persistent-cache",
        args.persistent_cache.as_ref().map(s),
    )?;
    set(
        "engine.persistent-cache-size",
        args.persistent_cache_size.as_ref().map(s),
    )?;
    set(
        "engine.capacity-latency-ms",
        args.capacity_latency_ms.map(Value::Float),
    )?;
    set("engine.capacity-mbps", args.capacity_mbps.map(Value::Float))?;
    set(
        "engine.capacity-error-rate",
        args.capacity_error_rate.map(Value::Float),
    )?;
    set(
        "engine.compaction-service",
        args.compaction_service.as_ref().map(s),
    )?;
    set(
        "engine.compaction-token",
        args.compaction_token.as_ref().map(s),
    )?;
    set(
        "engine.compaction-mode",
        args.compaction_mode.as_ref().map(s),
    )?;
    let config: ServerConfig = Value::Table(table)
        .try_into()
        .context("invalid configuration")?;
    config.validate().context("invalid configuration")?;
    Ok(config)
}

/// Runs the server until it is shut down.
pub fn run(args: ServeArgs) -> Result<()> {
    let config = build_config(&args)?;
    crate::logging::init(&config.log_level)?;
    let mut config = config;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // What CONFIG GET io-threads reports: the count in use.
    config.io_threads = config.io_thread_count(cores);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads)
        .enable_all()
        .thread_name("strata-serve")
        // The engine pool's semaphore bounds engine calls; a few more threads for the rest.
        .max_blocking_threads(config.engine_threads + 8)
        // Engine-pool threads stay for a minute when idle rather than 10 s: starting one costs
        // its stack and allocator heap, and pipelined load sends batches to the pool in bursts.
        .thread_keep_alive(std::time::Duration::from_secs(60))
        .build()
        .context("starting the async runtime")?;
    let config_file = args.config.clone();
    runtime.block_on(async move {
        let server = Server::bind(config, config_file).await?;
        // Printed whatever the log level: scripts and tests wait for this line (with
        // `--port 0` it is the only way to learn the port).
        if let Some(m) = server.metrics_addr() {
            eprintln!("strata serve: metrics on http://{m}/metrics");
        }
        eprintln!("strata serve: listening on {}", server.local_addr());
        let stop = server.shutdown_handle();
        tokio::spawn(async move {
            let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            tokio::select! {
                _ = term.recv() => info!("SIGTERM received; shutting down"),
                _ = tokio::signal::ctrl_c() => info!("SIGINT received; shutting down"),
            }
            stop.trigger();
        });
        // On a worker thread, not this one (`block_on` runs its future on the calling
        // thread): the accept loop then spawns each connection's task onto its own worker's
        // queue, where it runs next, instead of waking a worker from another thread for every
        // connection (a context switch per connect, a fifth of accepting's cost).
        tokio::spawn(server.run())
            .await
            .context("the server task")??;
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_is_defaults_file_set_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            "port = 7000\ntimeout = 3\nsync = \"no\"\n[engine]\nnum-levels = 5\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(file),
            port: Some(7001),
            set: vec!["timeout=9".into(), "engine.bloom-bits-per-key=4.5".into()],
            compression: Some("none,zstd:3".into()),
            write_buffer_size: Some("8mb".into()),
            ..Default::default()
        };
        let c = build_config(&args).unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.timeout, 9);
        assert_eq!(c.sync, strata_server::SyncPolicy::No);
        assert_eq!(c.engine.num_levels, 5);
        assert_eq!(c.engine.bloom_bits_per_key, 4.5);
        assert_eq!(c.engine.compression, vec!["none", "zstd:3"]);
        assert_eq!(c.engine.write_buffer_size.0, 8 << 20);
        assert_eq!(c.bind, "127.0.0.1");
    }

    #[test]
    fn defaults_without_arguments() {
        let c = build_config(&ServeArgs::default()).unwrap();
        assert_eq!(c, ServerConfig::default());
    }

    #[test]
    fn bad_settings_are_rejected() {
        for bad in [
            ServeArgs {
                sync: Some("sometimes".into()),
                ..Default::default()
            },
            ServeArgs {
                set: vec!["nonsense=1".into()],
                ..Default::default()
            },
            ServeArgs {
                compression: Some("snappy".into()),
                ..Default::default()
            },
            ServeArgs {
                maxclients: Some(0),
                ..Default::default()
            },
            ServeArgs {
                tcp_backlog: Some(0),
                ..Default::default()
            },
        ] {
            assert!(build_config(&bad).is_err(), "{bad:?}");
        }
    }
}
