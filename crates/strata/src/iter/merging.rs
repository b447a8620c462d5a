//! Merges any number of internal iterators into one ordered stream (both directions).
//!
//! The number of sources is small (memtables, L0 tables, one run per deeper level), so the
//! current child is found by a linear scan rather than a heap: fewer comparisons for fewer than
//! ~16 children, and direction switches stay simple.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::types::compare_internal;

pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    forward: bool,
    err: Option<Error>,
}

impl MergingIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            forward: true,
            err: None,
        }
    }

    fn check_errors(&mut self) {
        if self.err.is_none() {
            for c in &self.children {
                if let Err(e) = c.status() {
                    self.err = Some(e);
                    break;
                }
            }
        }
    }

    fn pick(&mut self, want: Ordering) {
        self.check_errors();
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                None => Some(i),
                Some(b) if compare_internal(c.key(), self.children[b].key()) == want => Some(i),
                keep => keep,
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.forward = true;
        self.pick(Ordering::Less);
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.forward = false;
        self.pick(Ordering::Greater);
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.forward = true;
        self.pick(Ordering::Less);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.forward = false;
        self.pick(Ordering::Greater);
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
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
        }
        self.children[cur].next();
        self.pick(Ordering::Less);
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
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
        }
        self.children[cur].prev();
        self.pick(Ordering::Greater);
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
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
