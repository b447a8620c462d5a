//! Merges any number of internal iterators into one ordered stream (both directions).
//!
//! The valid children sit in a binary heap ordered by their current key (smallest on top going
//! forward, largest going backward; ties go to the child listed first, the newer source): a
//! step costs O(log n) comparisons, which matters once split-forest levels hold many trees.
//! Changing direction repositions every other child around the current key (as RocksDB does)
//! and rebuilds the heap. A child's error stops the merge and is reported by `status`.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::types::compare_internal;

/// Called with a seek's target before the children seek (e.g. to fetch their blocks at once).
pub type Prefetch = Box<dyn Fn(&[u8]) + Send>;

/// Merges child iterators into one stream in internal-key order, in both directions.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    prefetch: Option<Prefetch>,
    /// Indices of the valid children, a heap under `better`.
    heap: Vec<usize>,
    forward: bool,
    err: Option<Error>,
}

impl MergingIterator {
    /// Merges `children`; on equal internal keys the child listed first comes first, so newer
    /// sources are listed first.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            heap: Vec::with_capacity(children.len()),
            children,
            prefetch: None,
            forward: true,
            err: None,
        }
    }

    /// Runs `f` with every seek's target before the children seek.
    pub fn with_prefetch(mut self, f: Prefetch) -> Self {
        self.prefetch = Some(f);
        self
    }

    /// Whether child `a` comes before child `b` in the current direction.
    fn better(&self, a: usize, b: usize) -> bool {
        let o = compare_internal(self.children[a].key(), self.children[b].key());
        let o = if self.forward { o } else { o.reverse() };
        o == Ordering::Less || (o == Ordering::Equal && a < b)
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.better(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.better(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    fn note_error(&mut self, child: usize) {
        if self.err.is_none() {
            if let Err(e) = self.children[child].status() {
                self.err = Some(e);
            }
        }
    }

    /// Rebuilds the heap from every child's position (after seeks or a direction change).
    fn rebuild(&mut self) {
        self.heap.clear();
        for i in 0..self.children.len() {
            if self.children[i].valid() {
                self.heap.push(i);
            } else {
                self.note_error(i);
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// Restores the heap after the top child moved.
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if self.children[top].valid() {
            self.sift_down(0);
        } else {
            self.note_error(top);
            let last = self.heap.pop().expect("non-empty");
            if !self.heap.is_empty() {
                self.heap[0] = last;
                self.sift_down(0);
            }
        }
    }

    fn current(&self) -> Option<usize> {
        self.heap.first().copied()
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.forward = true;
        self.rebuild();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.forward = false;
        self.rebuild();
    }

    fn seek(&mut self, target: &[u8]) {
        if let Some(p) = &self.prefetch {
            p(target);
        }
        for c in &mut self.children {
            c.seek(target);
        }
        self.forward = true;
        self.rebuild();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.forward = false;
        self.rebuild();
    }

    fn next(&mut self) {
        let Some(cur) = self.current() else { return };
        if !self.forward {
            // Every other child must be positioned after the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.forward = true;
            self.children[cur].next();
            self.rebuild();
            return;
        }
        self.children[cur].next();
        self.fix_top();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current() else { return };
        if self.forward {
            // Every other child must be positioned before the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() {
                    c.prev();
                } else if c.status().is_ok() {
                    c.seek_to_last();
                }
            }
            self.forward = false;
            self.children[cur].prev();
            self.rebuild();
            return;
        }
        self.children[cur].prev();
        self.fix_top();
    }

    fn key(&self) -> &[u8] {
        match self.current() {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current() {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::MemTable;
    use crate::types::{self, ValueKind};
    use std::sync::Arc;
    use strata_test_support::Rng;

    /// Random walks (seeks, steps both ways, direction changes) over 1–40 children against
    /// the sorted list of every entry.
    #[test]
    fn random_walks_match_a_sorted_merge() {
        for seed in 0..60u64 {
            let mut rng = Rng::new(seed);
            let n = 1 + rng.below(40) as usize;
            let mut all: Vec<Vec<u8>> = Vec::new();
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            let mut seq = 1;
            for _ in 0..n {
                let m = Arc::new(MemTable::new(0));
                for _ in 0..rng.below(30) {
                    let k = format!("k{:03}", rng.below(200));
                    m.add(seq, ValueKind::Put, k.as_bytes(), b"v");
                    all.push(types::internal_key(k.as_bytes(), seq, ValueKind::Put as u8));
                    seq += 1;
                }
                children.push(Box::new(m.iter()));
            }
            all.sort_by(|a, b| compare_internal(a, b));
            let mut it = MergingIterator::new(children);
            let mut pos: Option<usize> = None; // index into `all`
            for step in 0..400 {
                match rng.below(6) {
                    0 => {
                        it.seek_to_first();
                        pos = (!all.is_empty()).then_some(0);
                    }
                    1 => {
                        it.seek_to_last();
                        pos = all.len().checked_sub(1);
                    }
                    2 => {
                        let t =
                            types::lookup_key(format!("k{:03}", rng.below(210)).as_bytes(), seq);
                        it.seek(&t);
                        let i = all.partition_point(|k| compare_internal(k, &t).is_lt());
                        pos = (i < all.len()).then_some(i);
                    }
                    3 => {
                        let t = types::lookup_key(format!("k{:03}", rng.below(210)).as_bytes(), 0);
                        it.seek_for_prev(&t);
                        let i = all.partition_point(|k| compare_internal(k, &t).is_le());
                        pos = i.checked_sub(1);
                    }
                    4 if pos.is_some() => {
                        it.next();
                        pos = pos.map(|p| p + 1).filter(|&p| p < all.len());
                    }
                    5 if pos.is_some() => {
                        it.prev();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                    _ => {}
                }
                it.status().unwrap();
                match pos {
                    Some(p) => {
                        assert!(it.valid(), "seed {seed} step {step}: invalid, want {p}");
                        assert_eq!(it.key(), all[p].as_slice(), "seed {seed} step {step}");
                    }
                    None => assert!(!it.valid(), "seed {seed} step {step}: valid past the end"),
                }
            }
        }
    }
}
