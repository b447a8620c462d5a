//! # strata-server
//!
//! A Redis-protocol (RESP2 and RESP3) server over the Strata engine: `strata serve`.
//! Real Redis clients and tools (redis-cli, redis-benchmark, client libraries) use it like a
//! Redis server for the commands it supports; every acknowledged write is in the engine's
//! write-ahead log (fsynced first under `sync = always`).
//!
//! Module map — network and protocol: [`server`] (listener, accept, shutdown), [`connection`]
//! (one client: read, parse, execute a batch, write), [`executor`] (a batch: segments,
//! locks, one engine write per segment), [`commit_group`] (inline segments of many connections
//! committed as one engine write), [`resp`] (parser and writer),
//! [`session`] (per-connection protocol state), [`multi`] (MULTI/EXEC queuing and isolation),
//! [`watch`] (WATCH), [`scripting`] (Lua: EVAL, SCRIPT), [`clients`] (registry); commands: [`commands`]
//! (table, dispatch and one file per group); data: [`store`] (typed access to the engine),
//! [`keyspace`] (key namespaces), [`value`] (value header), [`expiry`] (TTL arithmetic and the
//! compaction filter), [`locks`] (striped key locks: atomic read-modify-write), [`cursor`]
//! (SCAN cursors); operations: [`config`], [`limits`], [`info`], [`stats`], [`pool`] (bounded
//! blocking pool for engine calls), [`shutdown`]; helpers: [`glob`], [`numbers`], [`fasthash`].
//!
//! The engine is synchronous; async code reaches it through [`pool::EnginePool`], except for
//! the calls that cannot wait — point reads with `cache_only` and writes with `no_slowdown` —
//! which connections make inline on the event loop (see `connection`). The server depends on
//! the engine crate; the engine never depends on the server.
//!
//! ```no_run
//! # async fn run() -> Result<(), strata_server::ServerError> {
//! let config = strata_server::ServerConfig { port: 0, ..Default::default() };
//! let server = strata_server::Server::bind(config, None).await?;
//! println!("listening on {}", server.local_addr());
//! let stop = server.shutdown_handle(); // stop.trigger() shuts down cleanly
//! server.run().await
//! # }
//! ```

pub mod active_expiry;
pub mod blocking;
pub mod clients;
pub mod collections;
pub mod commands;
pub mod commit_group;
pub mod config;
pub mod config_values;
pub mod connection;
pub mod cursor;
pub mod engine_config;
pub mod executor;
pub mod expiry;
pub mod fasthash;
pub mod glob;
pub mod info;
pub mod keyspace;
pub mod limits;
pub mod locks;
pub mod metrics;
pub mod multi;
pub mod notify;
pub mod numbers;
pub mod pool;
pub mod pubsub;
pub mod redis_float;
pub mod request_window;
pub mod resp;
pub mod saves;
pub mod scripting;
pub mod server;
pub mod session;
pub mod shutdown;
pub mod stats;
pub mod store;
pub mod value;
pub mod watch;

pub use config::{ByteSize, ConfigError, EngineConfig, EngineStorage, ServerConfig, SyncPolicy};
pub use server::{Server, ServerError, Shared};
pub use shutdown::ShutdownHandle;
