//! The skiplist's [`Cursor`]: a position (key node, entry) that walks the entries in
//! [`types::compare_internal`] order both ways. Forward it follows a chain's `older` links, then
//! level 0; backward it pops the newer entries of the current chain, which it records while
//! walking the chain from its head (once per chain, so a reverse walk over a long chain is
//! linear), then searches for the previous key node.
//!
//! Part of `skiplist` (a child module, so it reads the node layout through the same
//! accessors); depends on nothing else.

use std::ptr;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;

use super::{
    at_or_after, key, next, older, trailer, user_key, value, Entry, KeyNode, SkipList, Target,
};

/// A position in a [`SkipList`] that keeps the list alive: it owns an `Arc` of the list's
/// owner (the memtable) and the list's address, which cannot change while that `Arc` lives.
pub struct Cursor<T> {
    _owner: Arc<T>,
    list: *const SkipList,
    /// The key node of `entry` (null when unpositioned).
    node: *mut KeyNode,
    entry: *mut Entry,
    /// When `newer_known`: the entries of `node`'s chain before `entry`, oldest last, which
    /// `prev` pops (a chain links only towards older entries).
    newer: Vec<*mut Entry>,
    newer_known: bool,
}

// SAFETY: the cursor reads immutable published nodes of a list (`Sync`) that its `Arc` keeps
// alive; it is `Send`/`Sync` when the owner is.
unsafe impl<T: Send + Sync> Send for Cursor<T> {}
unsafe impl<T: Send + Sync> Sync for Cursor<T> {}

impl<T> Cursor<T> {
    /// An unpositioned cursor over `list(&owner)`.
    pub fn new(owner: Arc<T>, list: fn(&T) -> &SkipList) -> Cursor<T> {
        let list: *const SkipList = list(&owner);
        Cursor {
            _owner: owner,
            list,
            node: ptr::null_mut(),
            entry: ptr::null_mut(),
            newer: Vec::new(),
            newer_known: false,
        }
    }

    fn list(&self) -> &SkipList {
        // SAFETY: the list lives inside the owner's allocation, kept alive by `_owner`.
        unsafe { &*self.list }
    }

    pub fn valid(&self) -> bool {
        !self.entry.is_null()
    }

    /// The entry under the cursor (key, value).
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        // SAFETY: a published entry of the list, which lives as long as `self`.
        self.valid()
            .then(|| unsafe { (key(self.entry), value(self.entry)) })
    }

    /// At the newest entry of key node `n` (none if `n` is null).
    fn at_newest(&mut self, n: *mut KeyNode) {
        self.node = n;
        self.entry = if n.is_null() {
            ptr::null_mut()
        } else {
            // SAFETY: a published key node; its chain head is set before it is linked.
            unsafe { (*n).chain.load(AtOrd::Acquire) }
        };
        self.newer.clear();
        self.newer_known = true;
    }

    /// At the oldest entry of key node `n` (none if `n` is null), knowing the newer ones.
    fn at_oldest(&mut self, n: *mut KeyNode) {
        self.at_newest(n);
        while !self.entry.is_null() {
            // SAFETY: a published entry of the list.
            let o = unsafe { older(self.entry) };
            if o.is_null() {
                break;
            }
            self.newer.push(self.entry);
            self.entry = o;
        }
    }

    pub fn seek_to_first(&mut self) {
        // SAFETY: the head is tall enough for level 0.
        let n = unsafe { next(self.list().head, 0) };
        self.at_newest(n);
    }

    pub fn seek_to_last(&mut self) {
        let n = self.list().seek_lt(None);
        self.at_oldest(n);
    }

    /// The first entry `>= t`.
    pub fn seek(&mut self, t: &Target) {
        let n = self.list().seek_ge(t);
        self.at_newest(n);
        // SAFETY: a published key node and its entries.
        if !n.is_null() && unsafe { user_key(n) } == t.user_key {
            // Not recorded: a seek past many versions (the iterator's reseek over a hot key)
            // must not build a stack it may never use; `prev` replays the chain if it needs it.
            while !self.entry.is_null() && !unsafe { at_or_after(self.entry, t) } {
                self.newer_known = false;
                self.entry = unsafe { older(self.entry) };
            }
            if self.entry.is_null() {
                // Every version of the key is newer than `t`: the next key's newest.
                self.at_newest(unsafe { next(n, 0) });
            }
        }
    }

    /// The last entry `<= t`.
    pub fn seek_for_prev(&mut self, t: &Target) {
        let list = self.list();
        let n = list.seek_ge(t);
        // SAFETY: a published key node and its entries.
        if !n.is_null() && unsafe { user_key(n) } == t.user_key {
            self.at_newest(n);
            // The entries `<= t` are those with a trailer `>= t`'s, first in the chain.
            if !self.entry.is_null() && unsafe { trailer(self.entry) } >= t.trailer {
                loop {
                    let o = unsafe { older(self.entry) };
                    if o.is_null() || unsafe { trailer(o) } < t.trailer {
                        return;
                    }
                    self.newer.push(self.entry);
                    self.entry = o;
                }
            }
        }
        let p = self.list().seek_lt(Some(t));
        self.at_oldest(p);
    }

    pub fn next(&mut self) {
        if !self.valid() {
            return;
        }
        // SAFETY: a published entry and key node of the list; every node has level 0.
        let o = unsafe { older(self.entry) };
        if o.is_null() {
            let n = unsafe { next(self.node, 0) };
            self.at_newest(n);
        } else {
            // `prev` replays the chain if it needs the newer entries.
            self.newer_known = false;
            self.entry = o;
        }
    }

    /// Moves past the current entry's older versions, to the newest one whose trailer is
    /// below `floor` (a sequence-number bound: `pack_trailer(s + 1, 0)` keeps versions at or
    /// below `s`), or to the next key's newest entry when there is none or `floor` is `None`.
    /// With `None` the skipped versions are not read at all (a flush skips a hot key's
    /// shadowed versions without a cache miss each).
    pub fn skip_older(&mut self, floor: Option<u64>) {
        if !self.valid() {
            return;
        }
        if let Some(floor) = floor {
            // SAFETY: published entries of the list, in `node`'s chain.
            let mut o = unsafe { older(self.entry) };
            while !o.is_null() && unsafe { trailer(o) } >= floor {
                o = unsafe { older(o) };
            }
            if !o.is_null() {
                self.newer_known = false;
                self.entry = o;
                return;
            }
        }
        // SAFETY: a published key node; every node has level 0.
        let n = unsafe { next(self.node, 0) };
        self.at_newest(n);
    }

    /// The previous entry: a newer one of the same key (the chain is singly linked: the first
    /// `prev` after moving forward replays the chain from its head), else the oldest entry of
    /// the previous key, which a search finds, as LevelDB's and RocksDB's memtables do.
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        if !self.newer_known {
            self.newer.clear();
            // SAFETY: published entries of the list; `entry` is in `node`'s chain, so the walk
            // reaches it.
            let mut e = unsafe { (*self.node).chain.load(AtOrd::Acquire) };
            while !e.is_null() && e != self.entry {
                self.newer.push(e);
                e = unsafe { older(e) };
            }
            self.newer_known = true;
        }
        if let Some(e) = self.newer.pop() {
            self.entry = e;
            return;
        }
        // SAFETY: a published key node.
        let t = Target::new(unsafe { user_key(self.node) }, 0);
        let p = self.list().seek_lt(Some(&t));
        self.at_oldest(p);
    }
}
