//! Range tombstones and their fragmented form.
//!
//! A [`RangeTombstone`] deletes every version with a smaller sequence number of every user key in
//! `[start, end)`. [`Fragments`] splits a set of possibly overlapping tombstones at every boundary
//! into disjoint, sorted fragments, each carrying the sequence numbers of the tombstones covering
//! it (descending), so "the newest tombstone covering key k visible at snapshot s" is a binary
//! search plus a short scan. Depends only on `types`.

use crate::types::SeqNo;

/// Deletes user keys in `[start, end)` written before `seq`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RangeTombstone {
    /// First user key deleted (inclusive).
    pub start: Vec<u8>,
    /// End of the deleted range (exclusive).
    pub end: Vec<u8>,
    /// The tombstone's sequence number: it deletes versions with a smaller one.
    pub seq: SeqNo,
}

impl RangeTombstone {
    /// A tombstone deleting `[start, end)` at sequence number `seq`.
    pub fn new(start: impl Into<Vec<u8>>, end: impl Into<Vec<u8>>, seq: SeqNo) -> Self {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            seq,
        }
    }
    /// Whether the range is empty (`start >= end`), deleting nothing.
    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }
    /// Whether `key` lies in `[start, end)` (regardless of sequence numbers).
    pub fn covers(&self, key: &[u8]) -> bool {
        self.start.as_slice() <= key && key < self.end.as_slice()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Fragment {
    start: Vec<u8>,
    end: Vec<u8>,
    /// Descending.
    seqs: Vec<SeqNo>,
}

/// Disjoint fragments of a set of range tombstones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fragments {
    frags: Vec<Fragment>,
}

impl Fragments {
    /// Fragments `tombstones` (in any order, possibly overlapping; empty ones are ignored).
    pub fn new(tombstones: &[RangeTombstone]) -> Self {
        let mut bounds: Vec<&[u8]> = Vec::with_capacity(tombstones.len() * 2);
        for t in tombstones.iter().filter(|t| !t.is_empty()) {
            bounds.push(&t.start);
            bounds.push(&t.end);
        }
        bounds.sort_unstable();
        bounds.dedup();
        if bounds.len() < 2 {
            return Fragments::default();
        }
        // Sweep: tombstones sorted by start; active set holds those whose range contains the
        // current fragment.
        let mut ts: Vec<&RangeTombstone> = tombstones.iter().filter(|t| !t.is_empty()).collect();
        ts.sort_by(|a, b| a.start.cmp(&b.start));
        let mut next = 0;
        let mut active: Vec<&RangeTombstone> = Vec::new();
        let mut frags = Vec::new();
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while next < ts.len() && ts[next].start.as_slice() <= lo {
                active.push(ts[next]);
                next += 1;
            }
            active.retain(|t| t.end.as_slice() > lo);
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<SeqNo> = active.iter().map(|t| t.seq).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            // Merge with the previous fragment when contiguous and identical.
            if let Some(last) = frags.last_mut() {
                let last: &mut Fragment = last;
                if last.end.as_slice() == lo && last.seqs == seqs {
                    last.end = hi.to_vec();
                    continue;
                }
            }
            frags.push(Fragment {
                start: lo.to_vec(),
                end: hi.to_vec(),
                seqs,
            });
        }
        Fragments { frags }
    }

    /// Whether there are no fragments (no non-empty tombstone).
    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The largest sequence number `<= snapshot` of a tombstone covering `key`, or 0.
    pub fn max_covering(&self, key: &[u8], snapshot: SeqNo) -> SeqNo {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        match self.frags.get(i) {
            Some(f) if f.start.as_slice() <= key => {
                f.seqs.iter().copied().find(|&s| s <= snapshot).unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// The smallest sequence number `> seq` of a tombstone covering `key`, if any.
    pub fn min_covering_above(&self, key: &[u8], seq: SeqNo) -> Option<SeqNo> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        match self.frags.get(i) {
            Some(f) if f.start.as_slice() <= key => f.seqs.iter().rev().copied().find(|&s| s > seq),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_match_brute_force() {
        let mut state = 7u64;
        let mut rnd = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for _ in 0..200 {
            let ts: Vec<RangeTombstone> = (0..rnd(8))
                .map(|_| {
                    let a = rnd(20) as u8;
                    let b = rnd(20) as u8;
                    RangeTombstone::new(vec![a], vec![b], 1 + rnd(10))
                })
                .collect();
            let f = Fragments::new(&ts);
            for k in 0..21u8 {
                for snap in 0..12 {
                    let want = ts
                        .iter()
                        .filter(|t| t.covers(&[k]) && t.seq <= snap)
                        .map(|t| t.seq)
                        .max()
                        .unwrap_or(0);
                    assert_eq!(f.max_covering(&[k], snap), want, "{ts:?} k={k} snap={snap}");
                    let want_above = ts
                        .iter()
                        .filter(|t| t.covers(&[k]) && t.seq > snap)
                        .map(|t| t.seq)
                        .min();
                    assert_eq!(f.min_covering_above(&[k], snap), want_above);
                }
            }
        }
    }
}
