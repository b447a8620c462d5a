//! The registry of connected clients: ids, addresses, names and library info, for
//! `CLIENT LIST/INFO/ID`, INFO `clients` and the max-clients limit.
//!
//! Invariants: ids are unique for the life of the process and increase; a client is in the
//! registry from accept until its connection task ends (registration happens before the first
//! byte is read, removal in the connection task's drop guard). Per-client fields a command
//! changes (name, library) are behind small mutexes; activity timestamps are atomics.
//! Depends on nothing else in the crate.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

/// One connected client, as CLIENT LIST shows it.
pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub fd: i64,
    created: Instant,
    /// Milliseconds since `created` of the last command.
    last_active_ms: AtomicU64,
    pub name: Mutex<Option<String>>,
    pub lib_name: Mutex<Option<String>>,
    pub lib_ver: Mutex<Option<String>>,
    /// Name of the last command run (an index into the command table, +1; 0 for none).
    pub last_cmd: AtomicU64,
    /// RESP version (2 or 3).
    pub resp: AtomicU8,
    /// Bytes waiting in the query buffer when last measured.
    pub qbuf: AtomicU64,
    /// Pub/Sub subscriptions: channels, patterns, shard channels.
    pub sub: AtomicU32,
    pub psub: AtomicU32,
    pub ssub: AtomicU32,
    /// CLIENT KILL: set, then the connection is woken and closes (see `connection`).
    killed: std::sync::atomic::AtomicBool,
    kill: tokio::sync::Notify,
}

impl ClientHandle {
    pub fn touch(&self) {
        self.last_active_ms
            .store(self.created.elapsed().as_millis() as u64, Relaxed);
    }

    /// Whether the client has a Pub/Sub subscription (CLIENT LIST `flags=P`, `TYPE pubsub`).
    pub fn is_subscriber(&self) -> bool {
        self.sub.load(Relaxed) + self.psub.load(Relaxed) + self.ssub.load(Relaxed) > 0
    }

    /// Asks the client's connection to close (CLIENT KILL): wakes every [`ClientHandle::killed`]
    /// waiting (a connection waits in more than one place, and keeps one of them across
    /// requests).
    pub fn kill(&self) {
        self.killed.store(true, SeqCst);
        self.kill.notify_waiters();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(SeqCst)
    }

    /// Resolves once [`ClientHandle::kill`] was called (at once if it already was). The
    /// notification is armed before the flag is read, so a kill between the two still wakes it.
    pub async fn killed(&self) {
        let notified = self.kill.notified();
        if !self.is_killed() {
            notified.await;
        }
    }

    pub fn age_secs(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    pub fn idle_secs(&self) -> u64 {
        let now = self.created.elapsed().as_millis() as u64;
        now.saturating_sub(self.last_active_ms.load(Relaxed)) / 1000
    }
}

/// All connected clients.
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
}

impl Default for ClientRegistry {
    fn default() -> Self {
        ClientRegistry {
            next_id: AtomicU64::new(1),
            clients: Mutex::new(BTreeMap::new()),
        }
    }
}

impl ClientRegistry {
    /// Registers a new client if fewer than `max` are connected.
    pub fn register(
        &self,
        addr: SocketAddr,
        laddr: SocketAddr,
        fd: i64,
        max: usize,
    ) -> Option<Arc<ClientHandle>> {
        let mut map = self.clients.lock();
        if map.len() >= max {
            return None;
        }
        let id = self.next_id.fetch_add(1, Relaxed);
        let h = Arc::new(ClientHandle {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            last_active_ms: AtomicU64::new(0),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            last_cmd: AtomicU64::new(0),
            resp: AtomicU8::new(2),
            qbuf: AtomicU64::new(0),
            sub: AtomicU32::new(0),
            psub: AtomicU32::new(0),
            ssub: AtomicU32::new(0),
            killed: Default::default(),
            kill: tokio::sync::Notify::new(),
        });
        map.insert(id, h.clone());
        Some(h)
    }

    pub fn unregister(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    pub fn count(&self) -> usize {
        self.clients.lock().len()
    }

    /// Every client, by id.
    /// The connected clients, in id order — without those CLIENT KILL closed whose
    /// connections have not finished leaving (they are gone as far as any client can tell).
    pub fn list(&self) -> Vec<Arc<ClientHandle>> {
        self.clients
            .lock()
            .values()
            .filter(|c| !c.is_killed())
            .cloned()
            .collect()
    }
}
