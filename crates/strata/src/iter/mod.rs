//! Iterators over internal keys and the user-facing iterator.
//!
//! Owns the [`InternalIterator`] trait every source implements (memtable, block, table, sorted
//! run), the [`MergingIterator`] that merges sources, and [`DbIterator`] that turns internal
//! entries into the user's view at a snapshot (newest visible version, tombstones applied,
//! bounds honoured). Depends on `types`, `range_del`, `error`; never on `db` internals.

mod clamp;
mod db_iter;
mod merging;
mod run;

pub use clamp::LowerClamped;
pub use db_iter::{DbIterator, Forward};
pub use merging::{MergingIterator, Prefetch};
pub use run::RunIterator;

use crate::error::Result;

/// A positioned cursor over internal keys in [`crate::types::compare_internal`] order.
///
/// Errors are sticky: once an operation fails the iterator becomes invalid and `status` returns
/// the error.
pub trait InternalIterator: Send {
    /// Whether the iterator is positioned at an entry (false when exhausted or after an error).
    fn valid(&self) -> bool;
    /// Positions at the first key.
    fn seek_to_first(&mut self);
    /// Positions at the last key.
    fn seek_to_last(&mut self);
    /// Positions at the first key `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last key `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            if self.status().is_ok() {
                self.seek_to_last();
            }
        } else if crate::types::compare_internal(self.key(), target).is_gt() {
            self.prev();
        }
    }
    /// Moves to the next key. Only valid while `valid()`.
    fn next(&mut self);
    /// Moves to the previous key. Only valid while `valid()`.
    fn prev(&mut self);
    /// The current internal key. Only valid while `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. Only valid while `valid()`.
    fn value(&self) -> &[u8];
    /// The first error the iterator met, or `Ok` if none.
    fn status(&self) -> Result<()>;
}

impl InternalIterator for Box<dyn InternalIterator> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        (**self).seek_for_prev(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn prev(&mut self) {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
}
