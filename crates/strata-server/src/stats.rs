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

/// Per-command counters (INFO `commandstats`), by command-table index: calls, microseconds
/// spent, calls refused before running (arity, NOAUTH, BUSY: `rejected_calls`) and calls that
/// ran and answered an error (`failed_calls`). Commands inside EXEC and scripts' `redis.call`s
/// count as calls of their own, as in redis.
///
/// Sharded: each thread counts into one of [`COMMAND_SHARDS`] copies (picked once per thread),
/// so threads that run the same hot command do not contend on one cache line; INFO sums them.
pub struct CommandStats {
    shards: Vec<Box<[CommandCounters]>>,
}

/// One command run, as [`CommandStats::record`] counts it.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The command's table index.
    pub command: u32,
    pub usec: u32,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    Ok,
    /// Refused before running (arity, NOAUTH, BUSY).
    Rejected,
    /// Ran and answered an error.
    Failed,
}

/// Copies of the per-command counters (see [`CommandStats`]).
pub const COMMAND_SHARDS: usize = 16;

#[derive(Default)]
pub struct CommandCounters {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
}

/// One command's totals.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct CommandTotals {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
}

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Relaxed) as usize % COMMAND_SHARDS
    };
}

impl CommandStats {
    pub fn new(commands: usize) -> Self {
        CommandStats {
            shards: (0..COMMAND_SHARDS)
                .map(|_| (0..commands).map(|_| CommandCounters::default()).collect())
                .collect(),
        }
    }

    /// Counts the calls a finished segment ran.
    pub fn record(&self, calls: &[Call]) {
        if calls.is_empty() {
            return;
        }
        SHARD.with(|&s| {
            let shard = &self.shards[s];
            for c in calls {
                let Some(k) = shard.get(c.command as usize) else {
                    continue;
                };
                match c.outcome {
                    Outcome::Rejected => {
                        k.rejected.fetch_add(1, Relaxed);
                        continue;
                    }
                    Outcome::Failed => {
                        k.failed.fetch_add(1, Relaxed);
                    }
                    Outcome::Ok => {}
                }
                k.calls.fetch_add(1, Relaxed);
                k.usec.fetch_add(u64::from(c.usec), Relaxed);
            }
        })
    }

    /// Command `i`'s totals over every shard.
    pub fn totals(&self, i: usize) -> CommandTotals {
        let mut t = CommandTotals::default();
        for s in &self.shards {
            if let Some(c) = s.get(i) {
                t.calls += c.calls.load(Relaxed);
                t.usec += c.usec.load(Relaxed);
                t.rejected += c.rejected.load(Relaxed);
                t.failed += c.failed.load(Relaxed);
            }
        }
        t
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset(&self) {
        for c in self.shards.iter().flat_map(|s| s.iter()) {
            for a in [&c.calls, &c.usec, &c.rejected, &c.failed] {
                a.store(0, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_totals_sum_every_thread() {
        let stats = std::sync::Arc::new(CommandStats::new(3));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    let call = |outcome| Call {
                        command: 1,
                        usec: 5,
                        outcome,
                    };
                    stats.record(&[
                        call(Outcome::Ok),
                        call(Outcome::Failed),
                        call(Outcome::Rejected),
                        Call {
                            command: 9,
                            ..call(Outcome::Ok)
                        },
                    ]);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(
            stats.totals(1),
            CommandTotals {
                calls: 16,
                usec: 80,
                rejected: 8,
                failed: 8
            }
        );
        stats.reset();
        assert_eq!(stats.totals(1), CommandTotals::default());
    }
}
