//! Server configuration: [`ServerConfig`] (what `strata serve` reads from flags and a TOML
//! file); its `[engine]` table is `engine_config`'s, and the values settings are written in
//! (sync policy, byte sizes written the Redis way, `64mb`) are `config_values`'.
//!
//! Invariants: `ServerConfig::default()` is what `strata serve` runs with no arguments;
//! [`ServerConfig::validate`] rejects inconsistent settings before anything is opened;
//! [`ServerConfig::engine_options`] is the only place server settings become engine `Options`.
//! TOML keys are kebab-case, like Redis's configuration names; engine options live in an
//! `[engine]` table. Must not depend on the network layer or the command table.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata::Options;

use crate::value::HEADER_LEN_EXPIRY;

/// Largest value a client may store: the engine's limit less the value header.
pub const MAX_STRING_LEN: u64 = (strata::MAX_VALUE_SIZE - HEADER_LEN_EXPIRY) as u64;

/// A configuration error, with the offending setting in the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

pub use crate::config_values::{ByteSize, EngineStorage, OutputLimit, SyncPolicy};
pub use crate::engine_config::{compression_name, parse_compression, positive_secs, EngineConfig};

/// Everything `strata serve` is configured with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1`.
    pub bind: String,
    /// TCP port; 0 picks a free one (logged at start). Default 6380.
    pub port: u16,
    /// Data directory. Default `./strata-data`.
    pub dir: PathBuf,
    /// Password of the `default` user; `None` disables authentication.
    pub requirepass: Option<String>,
    /// Most simultaneous clients. Default 10000.
    pub maxclients: usize,
    /// Length of the listen queue of connections the kernel completed but the server has not
    /// accepted yet (Redis's `tcp-backlog`); the kernel caps it at
    /// `/proc/sys/net/core/somaxconn`. Default 511.
    pub tcp_backlog: u32,
    /// Seconds a client may stay idle before it is disconnected; 0 never. Default 0.
    pub timeout: u64,
    /// Milliseconds a script (EVAL, FCALL) may run before other clients are answered `BUSY`
    /// and `SCRIPT KILL` may stop it (redis' `lua-time-limit`, also `busy-reply-threshold`).
    /// Default 5000.
    pub lua_time_limit: u64,
    /// redis' `client-output-buffer-limit pubsub`: `<hard> <soft> <soft seconds>`. A Pub/Sub
    /// subscriber whose undelivered messages pass the hard size, or stay over the soft size
    /// for the seconds given, is disconnected (0 disables a limit). Default `32mb 8mb 60`.
    pub client_output_buffer_limit_pubsub: OutputLimit,
    /// redis' `notify-keyspace-events`: the keyspace event classes published over Pub/Sub
    /// (`K`, `E`, `g$lshzxetdmn`, `A`). Default `""` (none).
    pub notify_keyspace_events: String,
    /// When the log is fsynced. Default `everysec`.
    pub sync: SyncPolicy,
    /// `error`, `warn`, `info`, `debug` or `trace` (or a `tracing` target list). Default `info`.
    pub log_level: String,
    /// Largest bulk string in a request. Default (and maximum): the engine's value limit less
    /// the value header.
    pub proto_max_bulk_len: ByteSize,
    /// Most arguments in one request. Default 1048576.
    pub max_multibulk_len: usize,
    /// Most bytes of unprocessed input one client may make the server hold. Default 128mb.
    pub client_query_buffer_limit: ByteSize,
    /// Engine calls running at once (the bounded blocking pool). Default 32.
    pub engine_threads: usize,
    /// Event-loop threads serving connections (reading, parsing, running the commands that can
    /// run inline, replying). 0 (the default) picks half the CPU cores, at least one: the rest is
    /// left to the engine's flushes and compactions and to the engine pool. See
    /// [`ServerConfig::io_thread_count`]. Applied by whoever builds the async runtime (`strata
    /// serve` does; an embedder of [`crate::Server`] runs it on its own runtime). Unlike Redis's
    /// `io-threads` (extra threads for socket I/O beside one main thread), every one of these
    /// threads runs commands too.
    pub io_threads: usize,
    /// Stripes of the key lock table. Default 65536 (at most 64 bytes each): 50 clients pipelining 16
    /// writes each hold some 800 stripes at once, and with 4096 stripes most of their segments
    /// found one of theirs held.
    pub key_lock_stripes: usize,
    /// Port of the Prometheus metrics endpoint (`/metrics`, on `bind`); 0 picks a free one;
    /// `None` (the default) serves no metrics and records none.
    pub metrics_port: Option<u16>,
    /// Where `SAVE` and `BGSAVE` write checkpoints (a directory `checkpoint-<unix ms>` each);
    /// `None` (the default): `<dir>-checkpoints` beside the data directory.
    pub backup_dir: Option<PathBuf>,
    /// Where `SAVE` and `BGSAVE` write backups instead of checkpoints: an object-store URL
    /// (`s3://…`, `file://…`); `None` (the default): checkpoints in `backup_dir`.
    pub backup_url: Option<String>,
    /// How many saves `BGSAVE` keeps in `backup_dir` (or at `backup_url`); older ones are
    /// released (their shared capacity-tier tables collected) and deleted. Default 2.
    pub backup_keep: usize,
    /// Run as a read replica of the writer whose log location (`engine.wal-location`) this is:
    /// an object-store URL or a shared directory; the writer must run with
    /// `engine.extended-wal`. `engine.capacity` must name the writer's capacity tier. The
    /// replica keeps its state in `<dir>/replica`, serves reads, answers writes `READONLY`,
    /// and `REPLICAOF NO ONE` promotes it into a writer in `dir`. `None` (the default): a
    /// writer.
    pub replicaof: Option<String>,
    /// How often a replica polls the writer's log location, in milliseconds. Default 1000.
    pub replica_refresh_ms: u64,
    /// Engine options.
    pub engine: EngineConfig,
    /// The storage the engine's local files live on (`Options::storage`), for embedders and
    /// tests (a fault-injecting wrapper); not in the TOML file. Default: the local file system.
    #[serde(skip)]
    pub storage: EngineStorage,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: "127.0.0.1".to_string(),
            port: 6380,
            dir: PathBuf::from("./strata-data"),
            requirepass: None,
            maxclients: 10_000,
            tcp_backlog: 511,
            timeout: 0,
            lua_time_limit: 5000,
            client_output_buffer_limit_pubsub: OutputLimit::DEFAULT,
            notify_keyspace_events: String::new(),
            sync: SyncPolicy::Everysec,
            log_level: "info".to_string(),
            proto_max_bulk_len: ByteSize(MAX_STRING_LEN),
            max_multibulk_len: 1024 * 1024,
            client_query_buffer_limit: ByteSize(128 << 20),
            engine_threads: 32,
            io_threads: 0,
            key_lock_stripes: 65536,
            metrics_port: None,
            backup_dir: None,
            backup_url: None,
            backup_keep: 2,
            replicaof: None,
            replica_refresh_ms: 1000,
            engine: EngineConfig::default(),
            storage: EngineStorage::default(),
        }
    }
}

/// Most event-loop threads `io-threads` may ask for.
pub const MAX_IO_THREADS: usize = 128;

impl ServerConfig {
    /// The event-loop threads to run: `io_threads`, or for 0 half of `cores` (at least 1, at
    /// most [`MAX_IO_THREADS`]).
    pub fn io_thread_count(&self, cores: usize) -> usize {
        if self.io_threads > 0 {
            self.io_threads
        } else {
            (cores / 2).clamp(1, MAX_IO_THREADS)
        }
    }

    /// Parses a TOML configuration file's text. Unknown keys are errors; absent keys take
    /// their defaults.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError(e.to_string()))
    }

    /// Checks the settings; the engine options are checked by `engine_options`.
    /// Where `SAVE` and `BGSAVE` write: `backup_dir`, or `<dir>-checkpoints`.
    pub fn backup_dir(&self) -> PathBuf {
        self.backup_dir.clone().unwrap_or_else(|| {
            let mut name = self.dir.file_name().unwrap_or_default().to_os_string();
            name.push("-checkpoints");
            self.dir.with_file_name(name)
        })
    }

    /// Where `SAVE` and `BGSAVE` write: backups to `backup_url`, or checkpoints in
    /// [`ServerConfig::backup_dir`].
    pub fn save_target(&self) -> crate::saves::SaveTarget {
        match &self.backup_url {
            Some(u) => crate::saves::SaveTarget::Backups(u.clone()),
            None => crate::saves::SaveTarget::Checkpoints(self.backup_dir()),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError(m));
        if self.maxclients == 0 {
            return bad("maxclients must be at least 1".into());
        }
        if self.tcp_backlog == 0 || self.tcp_backlog > i32::MAX as u32 {
            return bad("tcp-backlog must be in 1..=2147483647".into());
        }
        if self.engine_threads == 0 {
            return bad("engine-threads must be at least 1".into());
        }
        self.engine.prices()?;
        if crate::notify::parse(&self.notify_keyspace_events).is_none() {
            return bad(format!(
                "notify-keyspace-events: unknown class in '{}' (use K, E, g, $, l, s, h, z, x, e, t, m, d, n, A)",
                self.notify_keyspace_events
            ));
        }
        if self.backup_keep == 0 {
            return bad("backup-keep must be at least 1".into());
        }
        if let Some(u) = &self.backup_url {
            if let Err(e) = strata::storage::object::store_from_url(u) {
                return bad(format!("backup-url: {e}"));
            }
        }
        if self.io_threads > MAX_IO_THREADS {
            return bad(format!("io-threads must be in 0..={MAX_IO_THREADS}"));
        }
        if self.proto_max_bulk_len.0 < 1024 || self.proto_max_bulk_len.0 > MAX_STRING_LEN {
            return bad(format!(
                "proto-max-bulk-len must be in 1024..={MAX_STRING_LEN} (the engine's value limit)"
            ));
        }
        if self.max_multibulk_len == 0 {
            return bad("max-multibulk-len must be at least 1".into());
        }
        if let Some(of) = &self.replicaof {
            if of.is_empty() {
                return bad("replicaof: the writer's log location is empty".into());
            }
            if !self.engine.wal_location.is_empty() && self.engine.wal_location != *of {
                return bad(format!(
                    "replicaof {of} and wal-location {} disagree: a replica's log location is \
                     the writer's",
                    self.engine.wal_location
                ));
            }
            if self.replica_refresh_ms == 0 {
                return bad("replica-refresh-ms must be at least 1".into());
            }
        }
        if self.client_query_buffer_limit.0 < self.proto_max_bulk_len.0 + 64 * 1024 {
            return bad(
                "client-query-buffer-limit must exceed proto-max-bulk-len by at least 64kb".into(),
            );
        }
        self.engine_options().map(|_| ())
    }

    /// The engine options for this configuration, without the compaction filter (the server
    /// adds it when it opens the database).
    pub fn engine_options(&self) -> Result<Options, ConfigError> {
        let mut o = self.engine.to_options()?;
        o.storage = self.storage.0.clone();
        self.engine.tier_options(&self.dir, &mut o)?;
        let e = &self.engine;
        o.compaction_mode = e
            .compaction_mode
            .parse()
            .map_err(|m: String| ConfigError(format!("compaction-mode: {m}")))?;
        if !e.compaction_service.is_empty() {
            if e.compaction_token.is_empty() {
                return Err(ConfigError(
                    "compaction-service needs compaction-token".into(),
                ));
            }
            o.compaction_service = Some(
                strata_compaction::RemoteService::connect(
                    &e.compaction_service,
                    &e.compaction_token,
                    None,
                )
                .map_err(|err| ConfigError(format!("compaction-service: {err}")))?,
            );
        }
        o.wal_sync_interval = match self.sync {
            SyncPolicy::Everysec => Some(Duration::from_secs(1)),
            SyncPolicy::Always | SyncPolicy::No => None,
        };
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_the_redis_way() {
        assert_eq!("100".parse::<ByteSize>().unwrap().0, 100);
        assert_eq!("1k".parse::<ByteSize>().unwrap().0, 1000);
        assert_eq!("1kb".parse::<ByteSize>().unwrap().0, 1024);
        assert_eq!("64MB".parse::<ByteSize>().unwrap().0, 64 << 20);
        assert_eq!("2gib".parse::<ByteSize>().unwrap().0, 2 << 30);
        assert!("x".parse::<ByteSize>().is_err());
        assert!("-1".parse::<ByteSize>().is_err());
        assert!("99999999999999999999gb".parse::<ByteSize>().is_err());
    }

    #[test]
    fn defaults_are_valid_and_map_to_engine_options() {
        let c = ServerConfig::default();
        c.validate().unwrap();
        let o = c.engine_options().unwrap();
        assert_eq!(o.wal_sync_interval, Some(Duration::from_secs(1)));
        assert_eq!(
            o.compression_per_level,
            Options::default().compression_per_level
        );
        let mut c = ServerConfig::default();
        c.engine.compression = vec!["zstd:99".into()];
        assert!(c.validate().is_err());
        c.engine.compression = vec!["bogus".into()];
        assert!(c.validate().is_err());
    }

    #[test]
    fn toml_files() {
        let c = ServerConfig::from_toml(
            "port = 7000\nsync = \"always\"\n[engine]\nwrite-buffer-size = \"8mb\"\ncompression = [\"none\", \"zstd:3\"]\n",
        )
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.sync, SyncPolicy::Always);
        assert_eq!(c.engine.write_buffer_size.0, 8 << 20);
        assert_eq!(c.bind, "127.0.0.1");
        assert!(c.engine_options().unwrap().avoid_flush_during_recovery);
        assert!(c.engine_options().unwrap().prepopulate_block_cache);
        assert!(!Options::default().prepopulate_block_cache);
        let c = ServerConfig::from_toml("[engine]\navoid-flush-during-recovery = false\n").unwrap();
        assert!(!c.engine_options().unwrap().avoid_flush_during_recovery);
        assert!(ServerConfig::from_toml("nope = 1").is_err());
        assert!(ServerConfig::from_toml("[engine]\nnope = 1").is_err());
    }

    #[test]
    fn io_threads_default_to_half_the_cores() {
        let mut c = ServerConfig::default();
        for (cores, want) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (8, 4),
            (64, 32),
            (1024, MAX_IO_THREADS),
        ] {
            assert_eq!(c.io_thread_count(cores), want, "{cores} cores");
        }
        c = ServerConfig::from_toml("io-threads = 3").unwrap();
        c.validate().unwrap();
        assert_eq!(c.io_thread_count(2), 3);
        c.io_threads = MAX_IO_THREADS + 1;
        assert!(c.validate().is_err());
    }
}
