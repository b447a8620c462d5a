//! Snapshots: a registered sequence number that reads can be pinned to and that compaction
//! must preserve. The registry is a multiset of live snapshot sequence numbers.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::types::SeqNo;

/// Live snapshots, by sequence number, with counts.
#[derive(Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at the current value of `last_seq`. The value is read under the
    /// registry's lock, so a compaction that lists snapshots either sees this one or started
    /// from inputs that hold nothing newer than it.
    pub fn acquire(self: &Arc<Self>, last_seq: &std::sync::atomic::AtomicU64) -> Snapshot {
        let mut live = self.live.lock();
        let seq = last_seq.load(std::sync::atomic::Ordering::Acquire);
        *live.entry(seq).or_insert(0) += 1;
        drop(live);
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seq,
                list: self.clone(),
            }),
        }
    }

    /// Live snapshot sequence numbers, ascending.
    pub fn sequences(&self) -> Vec<SeqNo> {
        self.live.lock().keys().copied().collect()
    }

    pub fn count(&self) -> usize {
        self.live.lock().values().sum()
    }
}

struct SnapshotInner {
    seq: SeqNo,
    list: Arc<SnapshotList>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        let mut live = self.list.live.lock();
        if let Some(c) = live.get_mut(&self.seq) {
            *c -= 1;
            if *c == 0 {
                live.remove(&self.seq);
            }
        }
    }
}

/// A consistent point-in-time view. Reads through `ReadOptions::snapshot` see exactly the writes
/// acknowledged before it was taken. Released when the last clone is dropped.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SeqNo {
        self.inner.seq
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seq", &self.inner.seq)
            .finish()
    }
}
