//! [`LowerClamped`]: hides the entries of an iterator whose user key is below a bound. Used for
//! a split-forest tree whose keys below its cut were merged elsewhere by early cleaning (the
//! tree's remaining first table may still hold them) and for a resumed merge's inputs.

use super::InternalIterator;
use crate::error::Result;
use crate::types;

/// An iterator that hides the entries of `I` whose user key is below a bound.
pub struct LowerClamped<I> {
    inner: I,
    /// The smallest internal key shown: `(bound, MAX_SEQ)` sorts before every entry of `bound`.
    lower: Vec<u8>,
    bound: Vec<u8>,
}

impl<I: InternalIterator> LowerClamped<I> {
    /// Wraps `inner`, hiding every entry whose user key is below `bound`.
    pub fn new(inner: I, bound: Vec<u8>) -> Self {
        LowerClamped {
            inner,
            lower: types::lookup_key(&bound, types::MAX_SEQ),
            bound,
        }
    }

    fn below(&self) -> bool {
        self.inner.valid() && types::user_key(self.inner.key()) < self.bound.as_slice()
    }
}

impl<I: InternalIterator> InternalIterator for LowerClamped<I> {
    fn valid(&self) -> bool {
        self.inner.valid() && !self.below()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek(&self.lower);
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        if types::compare_internal(target, &self.lower).is_lt() {
            self.inner.seek(&self.lower);
        } else {
            self.inner.seek(target);
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
    }
    fn next(&mut self) {
        self.inner.next();
    }
    fn prev(&mut self) {
        self.inner.prev();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::MemTable;
    use crate::types::ValueKind;
    use std::sync::Arc;

    #[test]
    fn hides_keys_below_the_bound_in_every_direction() {
        let mem = Arc::new(MemTable::new(0));
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            mem.add(i as u64 + 1, ValueKind::Put, k.as_bytes(), b"v");
        }
        let mut it = LowerClamped::new(mem.iter(), b"c".to_vec());
        let keys = |it: &mut LowerClamped<_>, fwd: bool| {
            let mut v = Vec::new();
            while it.valid() {
                v.push(String::from_utf8(types::user_key(it.key()).to_vec()).unwrap());
                if fwd {
                    it.next()
                } else {
                    it.prev()
                }
            }
            v
        };
        it.seek_to_first();
        assert_eq!(keys(&mut it, true), ["c", "d"]);
        it.seek_to_last();
        assert_eq!(keys(&mut it, false), ["d", "c"]);
        it.seek(&types::lookup_key(b"a", 100));
        assert_eq!(keys(&mut it, true), ["c", "d"]);
        it.seek_for_prev(&types::lookup_key(b"b", 100));
        assert!(!it.valid());
    }
}
