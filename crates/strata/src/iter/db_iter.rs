//! [`DbIterator`]: the user's view of the database at a snapshot.
//!
//! Forward movement streams through the merged internal entries: for each user key the first
//! entry with `seq <= snapshot` is the newest visible version; it is shown if it is a put not
//! covered by a newer visible range tombstone. Backward movement re-seeks to the newest visible
//! entry of the previous user key (two seeks per step), which keeps both directions exact
//! without saving copies of entries.
//!
//! A key whose newest visible version is a merge operand is folded where it is met: the
//! operands that follow (newest first) are taken up to the key's base (a put, a deletion, a
//! version a range tombstone covers, or its last version) and the merge operator's result is
//! kept as the current entry; the inner iterator is then past the operands.

use std::any::Any;
use std::sync::Arc;

use super::{InternalIterator, MergingIterator};
use crate::error::{Error, Result};
use crate::merge::MergeOperator;
use crate::range_del::Fragments;
use crate::types::{self, SeqNo, ValueKind, KIND_FOR_SEEK, MAX_SEQ};

/// Skips of one user key's old versions before switching from `next` to a seek.
const MAX_SEQUENTIAL_SKIPS: usize = 8;

/// A bidirectional iterator over user keys and values, RocksDB style: position it with a seek,
/// then step with `next`/`prev` while `valid()`; check `status()` when it becomes invalid.
pub struct DbIterator {
    inner: MergingIterator,
    snapshot: SeqNo,
    tombstones: Fragments,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    valid: bool,
    err: Option<Error>,
    merge: Option<Arc<dyn MergeOperator>>,
    /// The current key and its folded value, when the key's newest version was an operand
    /// (the inner iterator is then past the operands taken).
    merged: Option<(Vec<u8>, Vec<u8>)>,
    _pin: Arc<dyn Any + Send + Sync>,
}

impl DbIterator {
    pub(crate) fn new(
        inner: MergingIterator,
        snapshot: SeqNo,
        tombstones: Fragments,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        pin: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        DbIterator {
            inner,
            snapshot,
            tombstones,
            lower,
            upper,
            valid: false,
            err: None,
            merge: None,
            merged: None,
            _pin: pin,
        }
    }

    /// Folds merge operands with `op` (without one, an operand fails the iterator).
    pub(crate) fn with_merge_operator(mut self, op: Option<Arc<dyn MergeOperator>>) -> Self {
        self.merge = op;
        self
    }

    /// Whether the iterator is positioned at an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. Panics if not `valid()`.
    pub fn key(&self) -> &[u8] {
        assert!(self.valid, "DbIterator::key on an invalid iterator");
        match &self.merged {
            Some((k, _)) => k,
            None => types::user_key(self.inner.key()),
        }
    }

    /// The current value. Panics if not `valid()`.
    pub fn value(&self) -> &[u8] {
        assert!(self.valid, "DbIterator::value on an invalid iterator");
        match &self.merged {
            Some((_, v)) => v,
            None => self.inner.value(),
        }
    }

    /// The error that stopped iteration, if any.
    pub fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.inner.status(),
        }
    }

    fn fail(&mut self, e: Error) {
        self.err = Some(e);
        self.valid = false;
    }

    fn finish_invalid(&mut self) {
        self.valid = false;
        if let Err(e) = self.inner.status() {
            self.err = Some(e);
        }
    }

    fn visible_put(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind) -> bool {
        kind == ValueKind::Put && self.tombstones.max_covering(user_key, self.snapshot) <= seq
    }

    fn visible_operand(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind) -> bool {
        kind == ValueKind::Merge && self.tombstones.max_covering(user_key, self.snapshot) <= seq
    }

    /// Folds the operands starting at the inner iterator's entry (a visible operand of `uk`)
    /// and makes the result the current entry.
    fn fold(&mut self, uk: &[u8]) {
        let Some(op) = self.merge.clone() else {
            return self.fail(crate::merge::missing_operator(uk));
        };
        let covering = self.tombstones.max_covering(uk, self.snapshot);
        let mut operands: Vec<Vec<u8>> = Vec::new();
        let mut base: Option<Vec<u8>> = None;
        while self.inner.valid() {
            let p = match types::parse_internal_key(self.inner.key()) {
                Ok(p) => p,
                Err(e) => return self.fail(e),
            };
            if p.user_key != uk || p.seq < covering {
                break;
            }
            match p.kind {
                ValueKind::Merge => operands.push(self.inner.value().to_vec()),
                ValueKind::Put => {
                    base = Some(self.inner.value().to_vec());
                    break;
                }
                ValueKind::Delete | ValueKind::RangeDelete => break,
            }
            self.inner.next();
        }
        if let Err(e) = self.inner.status() {
            return self.fail(e);
        }
        match crate::merge::full_merge(&*op, uk, base.as_deref(), &operands) {
            Ok(v) => {
                self.merged = Some((uk.to_vec(), v));
                self.valid = true;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Moves the inner iterator past the rest of `uk`'s versions (it may be past them).
    fn skip_rest_of(&mut self, uk: &[u8]) {
        let mut n = 0;
        while self.inner.valid() && types::user_key(self.inner.key()) == uk {
            if n >= MAX_SEQUENTIAL_SKIPS {
                self.inner.seek(&types::internal_key(uk, 0, 0));
                return;
            }
            self.inner.next();
            n += 1;
        }
    }

    /// Moves the inner iterator from a version of `uk` past the rest of its versions.
    fn skip_user_key(&mut self, uk: &[u8]) {
        self.inner.next();
        self.skip_rest_of(uk);
    }

    fn find_next_visible(&mut self) {
        while self.inner.valid() {
            let p = match types::parse_internal_key(self.inner.key()) {
                Ok(p) => p,
                Err(e) => return self.fail(e),
            };
            if let Some(u) = &self.upper {
                if p.user_key >= u.as_slice() {
                    return self.finish_invalid();
                }
            }
            if p.seq > self.snapshot {
                self.inner.next();
                continue;
            }
            if self.visible_put(p.user_key, p.seq, p.kind) {
                self.valid = true;
                return;
            }
            let uk = p.user_key.to_vec();
            if self.visible_operand(p.user_key, p.seq, p.kind) {
                return self.fold(&uk);
            }
            self.skip_user_key(&uk);
        }
        self.finish_invalid();
    }

    fn find_prev_visible(&mut self) {
        while self.inner.valid() {
            let pk = types::user_key(self.inner.key()).to_vec();
            if let Some(l) = &self.lower {
                if pk.as_slice() < l.as_slice() {
                    return self.finish_invalid();
                }
            }
            self.inner.seek(&types::lookup_key(&pk, self.snapshot));
            if self.inner.valid() {
                let p = match types::parse_internal_key(self.inner.key()) {
                    Ok(p) => p,
                    Err(e) => return self.fail(e),
                };
                if p.user_key == pk.as_slice() && self.visible_put(p.user_key, p.seq, p.kind) {
                    self.valid = true;
                    return;
                }
                if p.user_key == pk.as_slice() && self.visible_operand(p.user_key, p.seq, p.kind) {
                    return self.fold(&pk);
                }
            }
            if self.inner.status().is_err() {
                break;
            }
            self.inner
                .seek_for_prev(&types::internal_key(&pk, MAX_SEQ, KIND_FOR_SEEK));
        }
        self.finish_invalid();
    }

    /// Positions at the first key.
    pub fn seek_to_first(&mut self) {
        self.err = None;
        self.merged = None;
        match self.lower.clone() {
            Some(l) => self.inner.seek(&types::lookup_key(&l, self.snapshot)),
            None => self.inner.seek_to_first(),
        }
        self.find_next_visible();
    }

    /// Positions at the last key.
    pub fn seek_to_last(&mut self) {
        self.err = None;
        self.merged = None;
        match &self.upper {
            Some(u) => {
                let t = types::internal_key(u, MAX_SEQ, KIND_FOR_SEEK);
                self.inner.seek_for_prev(&t);
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_visible();
    }

    /// Positions at the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.err = None;
        self.merged = None;
        let target = match &self.lower {
            Some(l) if key < l.as_slice() => l.clone(),
            _ => key.to_vec(),
        };
        self.inner.seek(&types::lookup_key(&target, self.snapshot));
        self.find_next_visible();
    }

    /// Positions at the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.err = None;
        self.merged = None;
        if let Some(u) = &self.upper {
            if key >= u.as_slice() {
                return self.seek_to_last();
            }
        }
        self.inner.seek_for_prev(&types::internal_key(key, 0, 0));
        self.find_prev_visible();
    }

    /// Moves to the next key.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        match self.merged.take() {
            // The inner iterator is past the operands, maybe at the key's base.
            Some((uk, _)) => self.skip_rest_of(&uk),
            None => {
                let uk = self.key().to_vec();
                self.skip_user_key(&uk);
            }
        }
        self.find_next_visible();
    }

    /// Moves to the previous key.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        let uk = self.key().to_vec();
        self.merged = None;
        self.inner
            .seek_for_prev(&types::internal_key(&uk, MAX_SEQ, KIND_FOR_SEEK));
        self.find_prev_visible();
    }

    /// Consumes the iterator from its current position forward, as `(key, value)` pairs.
    pub fn into_forward(self) -> Forward {
        Forward {
            it: self,
            done: false,
        }
    }
}

/// A std iterator over the remaining entries of a [`DbIterator`], stopping at the first error.
pub struct Forward {
    it: DbIterator,
    done: bool,
}

impl Iterator for Forward {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.it.valid() {
            self.done = true;
            return self.it.status().err().map(Err);
        }
        let kv = (self.it.key().to_vec(), self.it.value().to_vec());
        self.it.next();
        Some(Ok(kv))
    }
}
