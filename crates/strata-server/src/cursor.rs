//! SCAN cursors. Redis cursors are integers; an LSM has no integer positions, so the server
//! keeps a bounded table from cursor number to the next engine key to examine.
//!
//! Invariants: cursor 0 starts a scan and is never issued for a position; numbers are issued
//! increasing from a random start, so cursors of a previous run do not alias new ones; the
//! table holds at most `capacity` cursors and forgets the oldest first. An unknown (forgotten
//! or made-up) cursor restarts the scan from the beginning: a full iteration may then return
//! keys twice, but never misses a key that existed throughout it, which is SCAN's guarantee.
//! Depends on nothing else in the crate.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

pub struct ScanCursors {
    inner: Mutex<Table>,
    capacity: usize,
}

struct Table {
    next: u64,
    map: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

impl ScanCursors {
    pub fn new(capacity: usize, seed: u64) -> Self {
        ScanCursors {
            inner: Mutex::new(Table {
                // Keep numbers well inside i64 for clients that parse cursors as signed.
                next: (seed & 0x0000_ffff_ffff) | 1,
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            capacity: capacity.max(1),
        }
    }

    /// Issues a cursor for a scan that resumes at `key` (inclusive).
    pub fn issue(&self, key: Vec<u8>) -> u64 {
        let mut t = self.inner.lock();
        let id = t.next;
        t.next += 1;
        t.map.insert(id, key);
        t.order.push_back(id);
        while t.order.len() > self.capacity {
            if let Some(old) = t.order.pop_front() {
                t.map.remove(&old);
            }
        }
        id
    }

    /// Where cursor `id` resumes; `None` for 0 or an unknown cursor (start from the beginning).
    pub fn resume(&self, id: u64) -> Option<Vec<u8>> {
        if id == 0 {
            return None;
        }
        self.inner.lock().map.get(&id).cloned()
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_resumable() {
        let c = ScanCursors::new(2, 7);
        let a = c.issue(b"a".to_vec());
        let b = c.issue(b"b".to_vec());
        assert_ne!(a, 0);
        assert_eq!(c.resume(a).unwrap(), b"a");
        let _ = c.issue(b"c".to_vec());
        assert_eq!(c.resume(a), None);
        assert_eq!(c.resume(b).unwrap(), b"b");
        assert_eq!(c.resume(0), None);
        assert_eq!(c.len(), 2);
    }
}
