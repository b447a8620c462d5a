//! Server-level counters reported by INFO `stats` (the engine keeps its own, see `info`).
//!
//! Invariant: counters only grow, except through `CONFIG RESETSTAT`; they are relaxed atomics,
//! so a snapshot is approximately consistent. Depends on nothing else in the crate.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default)]
pub struct ServerStats {
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub commands_processed: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub error_replies: AtomicU64,
    /// Commands per second over the last sampling interval (set by the server's ticker).
    pub instantaneous_ops: AtomicU64,
    /// Segments run inline on the event loop (no hop to the engine pool).
    pub inline_segments: AtomicU64,
    /// Batches that started inline and went on on the engine pool because a read needed I/O,
    /// a stripe stayed held, or the write would stall.
    pub inline_fallbacks: AtomicU64,
    /// Inline attempts that found a stripe held and awaited its release before trying again.
    pub inline_busy_waits: AtomicU64,
    /// Engine writes made by inline commit groups (`commit_group`; a lone large batch counts as
    /// a group of one), and the segments whose writes they carried: their ratio is the mean
    /// group size.
    pub inline_group_writes: AtomicU64,
    pub inline_group_segments: AtomicU64,
    /// Inline segments that chained on a hot key's stripe held by their commit group and were
    /// written with it (`locks`, `commit_group`).
    pub inline_chained_segments: AtomicU64,
    /// GET/MGET keys read ahead together with one engine multi_get (`executor::prefetch_keys`;
    /// a key named twice counts twice).
    pub read_ahead_keys: AtomicU64,
}

impl ServerStats {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Relaxed)
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset(&self) {
        for c in [
            &self.connections_received,
            &self.rejected_connections,
            &self.commands_processed,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.protocol_errors,
            &self.error_replies,
            &self.inline_segments,
            &self.inline_fallbacks,
            &self.inline_busy_waits,
            &self.inline_group_writes,
            &self.inline_group_segments,
            &self.inline_chained_segments,
            &self.read_ahead_keys,
        ] {
            c.store(0, Relaxed);
        }
    }
}
