//! K-way merge of runs: yields one record per key, the records of a key in every run merged
//! with [`Record::merge`] (scores decayed to the newest tick and added, counters combined).
//!
//! Invariant: output keys are strictly increasing. Runs are few (bounded by
//! `shape::MAX_RUNS`), so the smallest head is found by a linear scan. Depends on `run`,
//! `record`, `error`.

use std::sync::Arc;

use super::record::{Decay, Record};
use super::run::{Run, RunIter};
use crate::error::Result;

pub struct MergeIter {
    iters: Vec<RunIter>,
    heads: Vec<Option<Record>>,
    decay: Decay,
}

impl MergeIter {
    pub fn new(runs: &[Arc<Run>], decay: Decay) -> Result<MergeIter> {
        let mut iters: Vec<RunIter> = runs.iter().cloned().map(RunIter::new).collect();
        let heads = iters
            .iter_mut()
            .map(|it| it.next_record())
            .collect::<Result<Vec<_>>>()?;
        Ok(MergeIter {
            iters,
            heads,
            decay,
        })
    }

    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let mut min: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(r) = h {
                if min.is_none_or(|m| self.heads[m].as_ref().is_some_and(|x| r.key < x.key)) {
                    min = Some(i);
                }
            }
        }
        let Some(m) = min else {
            return Ok(None);
        };
        let Some(mut out) = self.heads[m].take() else {
            return Ok(None);
        };
        self.heads[m] = self.iters[m].next_record()?;
        for i in 0..self.heads.len() {
            if self.heads[i].as_ref().is_some_and(|r| r.key == out.key) {
                if let Some(r) = self.heads[i].take() {
                    out.merge(&r, &self.decay);
                }
                self.heads[i] = self.iters[i].next_record()?;
            }
        }
        Ok(Some(out))
    }
}

/// Sorts a batch of records by key and merges the duplicates (a buffer flush).
pub fn sort_and_merge(mut recs: Vec<Record>, decay: &Decay) -> Vec<Record> {
    // Unstable is enough: merging records of one key does not depend on their order (the
    // newer tick wins; records of one tick add their scores exactly and keep either's size).
    recs.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    let mut out: Vec<Record> = Vec::with_capacity(recs.len());
    for r in recs {
        match out.last_mut() {
            Some(last) if last.key == r.key => last.merge(&r, decay),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;
    use crate::tier::hot::ralt::run::RunWriter;

    const D: Decay = Decay {
        alpha: 0.1,
        tick_bytes: 1,
        decay_period_bytes: 1000,
    };

    #[test]
    fn merges_duplicates_across_runs_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for (id, keys) in [
            (1u64, vec![1u32, 3, 5, 7]),
            (2, vec![2, 3, 7, 8]),
            (3, vec![3]),
        ] {
            let path = dir.path().join(format!("{id}.ralt"));
            let mut w = RunWriter::create(&LocalFs, &path, id, 64).unwrap();
            for k in keys {
                w.add(&Record::first_access(format!("k{k}").as_bytes(), 1, id))
                    .unwrap();
            }
            runs.push(Arc::new(w.finish(&LocalFs).unwrap()));
        }
        let mut m = MergeIter::new(&runs, D).unwrap();
        let mut got = Vec::new();
        while let Some(r) = m.next_record().unwrap() {
            got.push((String::from_utf8(r.key).unwrap(), r.counter, r.tick));
        }
        let want = [
            ("k1", 1, 1),
            ("k2", 1, 2),
            ("k3", 3, 3),
            ("k5", 1, 1),
            ("k7", 2, 2),
            ("k8", 1, 2),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(k, c, t)| (k.to_string(), *c, *t))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn sort_and_merge_combines_a_buffer() {
        let recs = vec![
            Record::first_access(b"b", 1, 0),
            Record::first_access(b"a", 1, 1),
            Record::first_access(b"b", 2, 2),
        ];
        let out = sort_and_merge(recs, &D);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].key, b"b");
        assert_eq!((out[1].counter, out[1].value_size, out[1].tick), (2, 2, 2));
        assert!(out[1].tagged_stable() && !out[0].tagged_stable());
    }
}
