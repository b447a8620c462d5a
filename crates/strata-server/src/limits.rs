//! Limits and other settings that `CONFIG SET` may change while the server runs.
//!
//! Owns: max clients, idle timeout, max bulk length, max multibulk count, the per-connection
//! query-buffer bound, and the `default` user's password. Values are atomics (or a lock for the
//! password), read at the point of use, so a change applies to the next request of every
//! client. Invariant: `proto_max_bulk_len` never exceeds `config::MAX_STRING_LEN` and the
//! query-buffer bound always exceeds it (setters enforce what `ServerConfig::validate` checks).
//! Depends on `config` and `resp::parser` (for `ParseLimits`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use parking_lot::RwLock;

use crate::config::{ServerConfig, MAX_STRING_LEN};
use crate::config_values::OutputLimit;
use crate::resp::ParseLimits;

/// Runtime-adjustable limits and credentials.
pub struct Limits {
    maxclients: AtomicUsize,
    timeout_secs: AtomicU64,
    lua_time_limit_ms: AtomicU64,
    proto_max_bulk_len: AtomicU64,
    max_multibulk_len: AtomicUsize,
    query_buffer_limit: AtomicU64,
    requirepass: RwLock<Option<String>>,
    pubsub_output_limit: parking_lot::Mutex<OutputLimit>,
}

impl Limits {
    pub fn new(c: &ServerConfig) -> Self {
        Limits {
            maxclients: AtomicUsize::new(c.maxclients),
            timeout_secs: AtomicU64::new(c.timeout),
            lua_time_limit_ms: AtomicU64::new(c.lua_time_limit),
            proto_max_bulk_len: AtomicU64::new(c.proto_max_bulk_len.0),
            max_multibulk_len: AtomicUsize::new(c.max_multibulk_len),
            query_buffer_limit: AtomicU64::new(c.client_query_buffer_limit.0),
            requirepass: RwLock::new(c.requirepass.clone().filter(|p| !p.is_empty())),
            pubsub_output_limit: parking_lot::Mutex::new(c.client_output_buffer_limit_pubsub),
        }
    }

    pub fn parse_limits(&self) -> ParseLimits {
        ParseLimits {
            max_bulk_len: self.proto_max_bulk_len.load(Relaxed) as usize,
            max_multibulk_len: self.max_multibulk_len.load(Relaxed),
        }
    }

    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Relaxed)
    }

    /// The idle timeout, `None` for never.
    pub fn idle_timeout(&self) -> Option<Duration> {
        match self.timeout_secs.load(Relaxed) {
            0 => None,
            s => Some(Duration::from_secs(s)),
        }
    }

    /// How long a script runs before it makes the server busy (`scripting::busy`).
    pub fn lua_time_limit(&self) -> Duration {
        Duration::from_millis(self.lua_time_limit_ms.load(Relaxed))
    }

    pub fn set_lua_time_limit_ms(&self, ms: u64) {
        self.lua_time_limit_ms.store(ms, Relaxed);
    }

    /// `client-output-buffer-limit pubsub` (see `pubsub`).
    pub fn pubsub_output_limit(&self) -> OutputLimit {
        *self.pubsub_output_limit.lock()
    }

    pub fn set_pubsub_output_limit(&self, l: OutputLimit) {
        *self.pubsub_output_limit.lock() = l;
    }

    pub fn timeout_secs(&self) -> u64 {
        self.timeout_secs.load(Relaxed)
    }

    pub fn proto_max_bulk_len(&self) -> u64 {
        self.proto_max_bulk_len.load(Relaxed)
    }

    pub fn max_multibulk_len(&self) -> usize {
        self.max_multibulk_len.load(Relaxed)
    }

    pub fn query_buffer_limit(&self) -> u64 {
        self.query_buffer_limit.load(Relaxed)
    }

    pub fn requirepass(&self) -> Option<String> {
        self.requirepass.read().clone()
    }

    pub fn auth_required(&self) -> bool {
        self.requirepass.read().is_some()
    }

    /// Checks a password against the configured one (in time independent of where they
    /// differ). `None` if no password is configured.
    pub fn check_password(&self, given: &[u8]) -> Option<bool> {
        let guard = self.requirepass.read();
        let want = guard.as_ref()?.as_bytes();
        let mut diff = want.len() ^ given.len();
        for (i, &b) in want.iter().enumerate() {
            diff |= usize::from(b ^ given.get(i).copied().unwrap_or(0));
        }
        Some(diff == 0)
    }

    pub fn set_maxclients(&self, n: usize) -> Result<(), String> {
        if n == 0 {
            return Err("argument must be between 1 and 4294967295 inclusive".into());
        }
        self.maxclients.store(n, Relaxed);
        Ok(())
    }

    pub fn set_timeout_secs(&self, s: u64) {
        self.timeout_secs.store(s, Relaxed);
    }

    pub fn set_proto_max_bulk_len(&self, n: u64) -> Result<(), String> {
        if !(1024..=MAX_STRING_LEN).contains(&n) {
            return Err(format!(
                "argument must be between 1024 and {MAX_STRING_LEN}"
            ));
        }
        if self.query_buffer_limit() < n + 64 * 1024 {
            return Err("must stay 64kb below client-query-buffer-limit".into());
        }
        self.proto_max_bulk_len.store(n, Relaxed);
        Ok(())
    }

    pub fn set_query_buffer_limit(&self, n: u64) -> Result<(), String> {
        if n < self.proto_max_bulk_len() + 64 * 1024 {
            return Err("must exceed proto-max-bulk-len by at least 64kb".into());
        }
        self.query_buffer_limit.store(n, Relaxed);
        Ok(())
    }

    pub fn set_max_multibulk_len(&self, n: usize) -> Result<(), String> {
        if n == 0 {
            return Err("argument must be at least 1".into());
        }
        self.max_multibulk_len.store(n, Relaxed);
        Ok(())
    }

    /// Sets (or with an empty string, clears) the password.
    pub fn set_requirepass(&self, p: &str) {
        *self.requirepass.write() = (!p.is_empty()).then(|| p.to_string());
    }
}
