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
    /// A serializable transaction's read set, and the range this iterator's current scan
    /// covers in it.
    tracking: Option<Tracking>,
}

/// Records the key range each scan covers: from the seek target to the key the iterator is
/// at (inclusive), or to the upper bound (or the end) once it is exhausted.
struct Tracking {
    reads: super::ReadSet,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// This scan's entry in `reads`.
    entry: Option<usize>,
}

impl TransactionIterator {
    pub(super) fn new(base: DbIterator, own: Vec<(Vec<u8>, Option<Bytes>)>) -> Self {
        TransactionIterator {
            base,
            own,
            pos: 0,
            at: None,
            tracking: None,
        }
    }

    /// Records the ranges scanned into a serializable transaction's read set.
    pub(super) fn tracking(
        mut self,
        reads: super::ReadSet,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Self {
        self.tracking = Some(Tracking {
            reads,
            lower,
            upper,
            entry: None,
        });
        self
    }

    /// A new scan from `target` (the lower bound if it is above).
    fn start_scan(&mut self, target: &[u8]) {
        if let Some(t) = &mut self.tracking {
            let start = match &t.lower {
                Some(l) if l.as_slice() > target => l.clone(),
                _ => target.to_vec(),
            };
            let mut reads = t.reads.lock();
            reads.push((start, None));
            t.entry = Some(reads.len() - 1);
        }
    }

    /// Extends the current scan's range to the iterator's position.
    fn record_position(&mut self) {
        let end = match self.at {
            Some(_) => Some(super::successor(self.key())),
            None => self.tracking.as_ref().and_then(|t| t.upper.clone()),
        };
        if let Some(t) = &self.tracking {
            if let Some(i) = t.entry {
                if let Some(e) = t.reads.lock().get_mut(i) {
                    e.1 = end;
                }
            }
        }
    }

    /// Positions at the first key.
    pub fn seek_to_first(&mut self) {
        self.start_scan(&[]);
        self.base.seek_to_first();
        self.pos = 0;
        self.settle();
    }

    /// Positions at the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.start_scan(key);
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
                    self.record_position();
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
            self.record_position();
            return;
        }
    }
}
