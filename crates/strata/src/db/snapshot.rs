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
    pub fn acquire(self: &Arc<Self>, seq: SeqNo) -> Snapshot {
        *self.live.lock().entry(seq).or_insert(0) += 1;
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
