//! [`Server`]: opens the store, listens, accepts clients up to the limit, runs one task per
//! connection, and shuts down cleanly; [`Shared`]: the state every connection and command sees.
//!
//! Shutdown sequence (SHUTDOWN command, or the embedder's [`ShutdownHandle`], e.g. on SIGTERM):
//! stop accepting → every connection finishes the batch it is executing, sends its replies and
//! closes → the engine is flushed (memtable → table) and closed (WAL synced, lock released).
//! Invariant: `run` returns only after the engine is closed (or the close failed and the error
//! is returned); no connection task outlives `run` (stragglers are aborted after a grace
//! period, which cannot tear a write: engine calls run on pool threads that finish their batch,
//! or inline between two awaits, and a cancelled segment waiting on its commit group leaves its
//! batch and stripes with the group, whose leader writes or drops both whole).
//! Must not depend on the CLI; depends on everything else in the crate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tracing::{debug, error, info, warn};

use crate::clients::ClientRegistry;
use crate::config::{ConfigError, ServerConfig};
use crate::cursor::ScanCursors;
use crate::limits::Limits;
use crate::pool::EnginePool;
use crate::shutdown::ShutdownHandle;
use crate::stats::ServerStats;
use crate::store::{Store, StoreError};

/// How long connections get to finish after shutdown starts before they are aborted.
const DRAIN_GRACE: Duration = Duration::from_secs(10);
/// SCAN cursors remembered.
const SCAN_CURSORS: usize = 65_536;

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("engine pool: {0}")]
    Pool(#[from] crate::pool::PoolError),
}

/// State shared by all connections.
pub struct Shared {
    pub store: Store,
    /// The configuration the server started with (runtime changes live in `limits`).
    pub config: ServerConfig,
    pub limits: Limits,
    pub clients: ClientRegistry,
    pub stats: ServerStats,
    pub cursors: ScanCursors,
    pub shutdown: ShutdownHandle,
    pub pool: EnginePool,
    /// Group commit of inline segments' writes across connections.
    pub commit_groups: crate::commit_group::CommitGroups,
    pub started: Instant,
    /// Object-store requests over the last five minutes (since the server became ready while
    /// younger): the rate INFO's monthly request cost is priced at.
    pub request_window: crate::request_window::RequestWindow,
    /// The object store's prices (`engine.capacity-price`).
    pub prices: strata::stats::PriceTable,
    pub run_id: String,
    pub local_addr: SocketAddr,
    /// The configuration file, if any (INFO `config_file`).
    pub config_file: Option<PathBuf>,
    /// Expired keys removed by compaction.
    pub expired_removed: Arc<AtomicU64>,
    /// Prometheus metrics, when `metrics_port` is set.
    pub metrics: Option<Arc<crate::metrics::ServerMetrics>>,
    /// `SAVE`/`BGSAVE` state.
    pub saves: Arc<crate::saves::Saves>,
    /// Lua scripts (EVAL, SCRIPT LOAD) and their interpreters.
    pub scripts: crate::scripting::Scripts,
    /// Function libraries (FUNCTION LOAD, FCALL), read back from the database at start-up.
    pub functions: crate::scripting::functions::Functions,
    /// Per-command counters (INFO `commandstats`).
    pub command_stats: crate::stats::CommandStats,
    /// Scripts running past `lua-time-limit` (BUSY, SCRIPT KILL).
    pub busy: crate::scripting::busy::Busy,
    /// Pub/Sub subscriptions (see `pubsub`).
    pub pubsub: Arc<crate::pubsub::PubSub>,
    /// Clients parked by blocking commands (see `blocking`).
    pub blocking: Arc<crate::blocking::Blocking>,
    /// Keyspace notifications (`notify-keyspace-events`).
    pub notify: crate::notify::Notifier,
    /// Keys with an expiry, while `expired` events are on (`active_expiry`).
    pub expiry_index: crate::active_expiry::ExpiryIndex,
}

/// A bound, ready-to-run server.
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
}

fn run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(40);
    while out.len() < 40 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(40);
    out
}

impl Server {
    /// Validates `config`, opens the store (blocking, on the engine pool) and binds the
    /// listener. `config_file` is only reported by INFO.
    pub async fn bind(
        config: ServerConfig,
        config_file: Option<PathBuf>,
    ) -> Result<Server, ServerError> {
        config.validate()?;
        let addr = format!("{}:{}", config.bind, config.port);
        let listener =
            listen(&addr, config.tcp_backlog)
                .await
                .map_err(|source| ServerError::Bind {
                    addr: addr.clone(),
                    source,
                })?;
        if let Some(max) = somaxconn().filter(|&m| m < config.tcp_backlog) {
            warn!(
                "the TCP backlog setting of {} cannot be enforced because \
                 /proc/sys/net/core/somaxconn is set to the lower value of {max}",
                config.tcp_backlog
            );
        }
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let pool = EnginePool::new(config.engine_threads);
        let expired = Arc::new(AtomicU64::new(0));
        let (c, e) = (config.clone(), expired.clone());
        let store = pool.run(move || Store::open(&c, e)).await??;
        let metrics_listener = match config.metrics_port {
            Some(port) => {
                let addr = format!("{}:{port}", config.bind);
                Some(
                    TcpListener::bind(&addr)
                        .await
                        .map_err(|source| ServerError::Bind { addr, source })?,
                )
            }
            None => None,
        };
        let metrics = metrics_listener
            .as_ref()
            .map(|_| crate::metrics::ServerMetrics::new(store.engine().clone()));
        let id = run_id();
        let seed = u64::from_str_radix(&id[..12], 16).unwrap_or(1);
        let requests_at_start = store
            .db()
            .map(|db| db.stats().tier.object_store_requests())
            .unwrap_or_default();
        let prices = config.engine.prices()?;
        let saves = Arc::new(crate::saves::Saves::new(store.latest_sequence()));
        let config_notify = config.notify_keyspace_events.clone();
        let shared = Shared {
            store,
            limits: Limits::new(&config),
            config,
            clients: ClientRegistry::default(),
            stats: ServerStats::default(),
            cursors: ScanCursors::new(SCAN_CURSORS, seed),
            shutdown: ShutdownHandle::new(),
            pool,
            commit_groups: Default::default(),
            started: Instant::now(),
            request_window: crate::request_window::RequestWindow::new(
                Instant::now(),
                requests_at_start,
            ),
            prices,
            run_id: id,
            local_addr,
            config_file,
            expired_removed: expired,
            metrics,
            saves,
            scripts: Default::default(),
            functions: Default::default(),
            busy: Default::default(),
            pubsub: Default::default(),
            blocking: Default::default(),
            notify: crate::notify::Notifier::new(crate::notify::parse(&config_notify).unwrap_or(0)),
            expiry_index: Default::default(),
            command_stats: crate::stats::CommandStats::new(crate::commands::command_count()),
        };
        crate::commands::functions::load_stored(&shared)
            .map_err(|e| ServerError::Store(StoreError::Layout(e)))?;
        Ok(Server {
            shared: Arc::new(shared),
            listener,
            metrics_listener,
        })
    }

    /// The address the server listens on (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// The address of the metrics endpoint, when `metrics_port` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// A handle that shuts the server down when triggered.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shared.shutdown.clone()
    }

    /// The shared state (for embedding and tests).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Serves until shutdown, then drains connections and closes the engine.
    pub async fn run(self) -> Result<(), ServerError> {
        let Server {
            shared,
            listener,
            metrics_listener,
        } = self;
        let metrics_task = match (metrics_listener, &shared.metrics) {
            (Some(l), Some(m)) => Some(tokio::spawn(crate::metrics::serve_http(
                l,
                m.clone(),
                shared.shutdown.clone(),
            ))),
            _ => None,
        };
        info!(
            "serving on {} (data in {}, sync {})",
            shared.local_addr,
            shared.config.dir.display(),
            shared.config.sync
        );
        let ticker = tokio::spawn(ops_sampler(shared.clone()));
        let expire_cycle = tokio::spawn(crate::active_expiry::run(shared.clone()));
        let mut conns = JoinSet::new();
        loop {
            tokio::select! {
                _ = shared.shutdown.wait() => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                accepted = listener.accept() => match accepted {
                    Ok((sock, peer)) => accept(&shared, &mut conns, sock, peer),
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
        info!(
            "shutting down: closing the listener and draining {} clients",
            conns.len()
        );
        drop(listener);
        let drained = tokio::time::timeout(DRAIN_GRACE, async {
            while conns.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            warn!("connections still open after {DRAIN_GRACE:?}; aborting them");
            conns.abort_all();
            while conns.join_next().await.is_some() {}
        }
        ticker.abort();
        let _ = ticker.await;
        expire_cycle.abort();
        let _ = expire_cycle.await;
        if let Some(t) = metrics_task {
            t.abort();
            let _ = t.await;
        }
        shared.store.detach_filter();
        // A replica has nothing to flush; it stops following when the last handle goes.
        let db = shared.store.db();
        let closed = shared
            .pool
            .run(move || match db {
                Some(db) => {
                    db.flush()?;
                    db.close()
                }
                None => Ok(()),
            })
            .await?;
        drop(shared);
        match closed {
            Ok(()) => {
                info!("engine flushed and closed");
                Ok(())
            }
            Err(e) => {
                error!("closing the engine failed: {e}");
                Err(ServerError::Store(StoreError::Engine(e)))
            }
        }
    }
}

/// Binds a listener on the first address `addr` resolves to that accepts it, with a listen
/// queue of `backlog` (SO_REUSEADDR set, as redis-server and tokio's `TcpListener::bind` do).
async fn listen(addr: &str, backlog: u32) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let sock = if a.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        #[cfg(unix)]
        sock.set_reuseaddr(true)?;
        match sock.bind(a).and_then(|()| sock.listen(backlog)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{addr} resolves to no address"),
        )
    }))
}

/// The kernel's cap on listen queues, where it can be read.
fn somaxconn() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn accept(shared: &Arc<Shared>, conns: &mut JoinSet<()>, sock: TcpStream, peer: SocketAddr) {
    ServerStats::add(&shared.stats.connections_received, 1);
    let laddr = sock.local_addr().unwrap_or(shared.local_addr);
    let fd = raw_fd(&sock);
    match shared
        .clients
        .register(peer, laddr, fd, shared.limits.maxclients())
    {
        Some(client) => {
            debug!("client {} connected from {peer}", client.id);
            conns.spawn(crate::connection::serve(shared.clone(), sock, client));
        }
        None => {
            ServerStats::add(&shared.stats.rejected_connections, 1);
            conns.spawn(async move {
                let mut sock = sock;
                let _ = sock
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
                let _ = sock.shutdown().await;
            });
        }
    }
}

#[cfg(unix)]
fn raw_fd(s: &TcpStream) -> i64 {
    use std::os::fd::AsRawFd;
    i64::from(s.as_raw_fd())
}

#[cfg(not(unix))]
fn raw_fd(_s: &TcpStream) -> i64 {
    -1
}

/// Samples the command counter once a second for `instantaneous_ops_per_sec`, and the
/// object-store request counts every [`RequestWindow::EVERY`](crate::request_window::RequestWindow::EVERY) for INFO's cost.
async fn ops_sampler(shared: Arc<Shared>) {
    let mut last = ServerStats::get(&shared.stats.commands_processed);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let every = crate::request_window::RequestWindow::EVERY.as_secs().max(1);
    let mut ticks: u64 = 0;
    loop {
        tick.tick().await;
        ticks += 1;
        if ticks.is_multiple_of(every) {
            if let Some(db) = shared.store.db() {
                let counts = db.stats().tier.object_store_requests();
                shared.request_window.record(Instant::now(), counts);
            }
        }
        let now = ServerStats::get(&shared.stats.commands_processed);
        shared
            .stats
            .instantaneous_ops
            .store(now.saturating_sub(last), Relaxed);
        last = now;
    }
}
