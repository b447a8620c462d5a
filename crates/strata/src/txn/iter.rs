//! [`TransactionIterator`]: a forward iterator over the database at a transaction's snapshot
//! with the transaction's own writes laid over it — an own write hides the database's value of
//! its key, an own deletion hides the key. Depends on `iter::DbIterator`.

use bytes::Bytes;

use crate::error::Result;
use crate::iter::DbIterator;

/// Where the current entry comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum From {
    Base,
    Own,
    /// An own write of a key the database also has: both advance past it.
    Both,
}

/// See the module docs. Unpositioned until a seek.
pub struct TransactionIterator {
    base: DbIterator,
    /// The transaction's writes when the iterator was made, in key order (`None`: deleted).
    own: Vec<(Vec<u8>, Option<Bytes>)>,
    pos: usize,
    at: Option<From>,
}

impl TransactionIterator {
    pub(super) fn new(base: DbIterator, own: Vec<(Vec<u8>, Option<Bytes>)>) -> Self {
        TransactionIterator {
            base,
            own,
            pos: 0,
            at: None,
        }
    }

    /// Positions at the first key.
    pub fn seek_to_first(&mut self) {
        self.base.seek_to_first();
        self.pos = 0;
        self.settle();
    }

    /// Positions at the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.base.seek(key);
        self.pos = self.own.partition_point(|(k, _)| k.as_slice() < key);
        self.settle();
    }

    /// Moves to the next key. Only when [`TransactionIterator::valid`].
    pub fn next(&mut self) {
        match self.at {
            Some(From::Base) => self.base.next(),
            Some(From::Own) => self.pos += 1,
            Some(From::Both) => {
                self.base.next();
                self.pos += 1;
            }
            None => return,
        }
        self.settle();
    }

    /// Whether it is at an entry (false at the end, and after an error: see
    /// [`TransactionIterator::status`]).
    pub fn valid(&self) -> bool {
        self.at.is_some()
    }

    /// The current key. Only when valid.
    pub fn key(&self) -> &[u8] {
        match self.at {
            Some(From::Base) => self.base.key(),
            _ => &self.own[self.pos].0,
        }
    }

    /// The current value. Only when valid.
    pub fn value(&self) -> &[u8] {
        match self.at {
            Some(From::Base) => self.base.value(),
            _ => self.own[self.pos].1.as_deref().unwrap_or_default(),
        }
    }

    /// The error that ended the iteration, if any.
    pub fn status(&self) -> Result<()> {
        self.base.status()
    }

    /// Moves forward to the next visible entry (skipping own deletions and the database
    /// entries they hide) and records where it comes from.
    fn settle(&mut self) {
        loop {
            let own = self.own.get(self.pos);
            let base = self.base.valid().then(|| self.base.key());
            let from = match (base, own) {
                (None, None) => {
                    self.at = None;
                    return;
                }
                (Some(_), None) => From::Base,
                (None, Some(_)) => From::Own,
                (Some(b), Some((o, _))) => match b.cmp(o.as_slice()) {
                    std::cmp::Ordering::Less => From::Base,
                    std::cmp::Ordering::Equal => From::Both,
                    std::cmp::Ordering::Greater => From::Own,
                },
            };
            if from != From::Base && self.own[self.pos].1.is_none() {
                // An own deletion: skip it (and the key it deletes).
                if from == From::Both {
                    self.base.next();
                }
                self.pos += 1;
                continue;
            }
            self.at = Some(from);
            return;
        }
    }
}
