//! [`Version`]: an immutable snapshot of which tables make up each level.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::edit::VersionEdit;
use super::file_meta::{Reaper, TableFile};
use crate::error::{Error, Result};

/// Files sorted by key, pairwise disjoint.
///
/// `id` orders the runs of a level (newest first by descending id): 0 for L0's one-table runs
/// and a leveled level's single run; a file number for each split-forest tree. `cut` is set
/// while (or after a crash in) a split-forest merge with early cleaning: keys below it are
/// served by the merge's output run, not by this one (SifrDB's redirection map, §4.2).
#[derive(Clone, Default)]
pub struct SortedRun {
    /// The run's id: 0 for L0's one-table runs and a leveled level's run; a file number for a
    /// split-forest tree.
    pub id: u64,
    /// The run's tables, in key order.
    pub files: Vec<Arc<TableFile>>,
    /// Keys below this are served by the cutting merge's output run, not by this one; `None`: no
    /// cut.
    pub cut: Option<Vec<u8>>,
    /// With a cut: the run (of the next level, or of this one at the last level) the merge
    /// writes into — the merge this run belongs to.
    pub cut_into: u64,
}

impl SortedRun {
    /// Whether this run serves `user_key` (it is not below the run's cut).
    #[inline]
    pub fn serves(&self, user_key: &[u8]) -> bool {
        self.cut.as_deref().is_none_or(|c| user_key >= c)
    }

    /// The file whose range contains `user_key`.
    pub fn find(&self, user_key: &[u8]) -> Option<&Arc<TableFile>> {
        if !self.serves(user_key) {
            return None;
        }
        let i = self.files.partition_point(|f| f.ends_before(user_key));
        self.files
            .get(i)
            .filter(|f| f.smallest.as_slice() <= user_key)
    }

    /// Files meeting the inclusive user-key range `[lo, hi]`.
    pub fn overlapping(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> &[Arc<TableFile>] {
        let start = match lo {
            Some(lo) => self.files.partition_point(|f| f.ends_before(lo)),
            None => 0,
        };
        let end = match hi {
            Some(hi) => self.files.partition_point(|f| f.smallest.as_slice() <= hi),
            None => self.files.len(),
        };
        if start >= end {
            &[]
        } else {
            &self.files[start..end]
        }
    }

    /// Total bytes of the run's tables.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// One level: its sorted runs, newest first.
#[derive(Clone, Default)]
pub struct Level {
    /// The level's sorted runs, newest first.
    pub runs: Vec<SortedRun>,
}

impl Level {
    /// Every table of the level, run by run.
    pub fn files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.runs.iter().flat_map(|r| r.files.iter())
    }
    /// The number of tables in the level.
    pub fn num_files(&self) -> usize {
        self.runs.iter().map(|r| r.files.len()).sum()
    }
    /// Total bytes of the level's tables.
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.bytes()).sum()
    }
    /// Whether the level holds no table.
    pub fn is_empty(&self) -> bool {
        self.runs.iter().all(|r| r.files.is_empty())
    }
}

/// The tables of the tree at one moment.
#[derive(Clone)]
pub struct Version {
    /// The levels, L0 first.
    pub levels: Vec<Level>,
    /// Bytes of this version's tables on the fast tier (kept as the version is built, so the
    /// placement budget check does not sum every table per job).
    fast_bytes: u64,
}

impl Version {
    /// An empty version of `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![Level::default(); num_levels],
            fast_bytes: 0,
        }
    }

    /// The number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Bytes of tables on the fast tier.
    pub fn fast_bytes(&self) -> u64 {
        self.fast_bytes
    }

    /// The deepest level below L0 that holds a table (0 if none does).
    pub fn deepest_non_empty(&self) -> usize {
        (1..self.levels.len())
            .rev()
            .find(|&l| !self.levels[l].is_empty())
            .unwrap_or(0)
    }

    /// Every table of the version, level by level from L0.
    pub fn all_files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.levels.iter().flat_map(|l| l.files())
    }

    /// Applies an edit, producing the next version and the files it removed (not counting files
    /// re-added elsewhere by a trivial move). The caller marks those obsolete once the edit is
    /// durable.
    pub fn apply(
        &self,
        edit: &VersionEdit,
        reaper: &Arc<Reaper>,
    ) -> Result<(Version, Vec<Arc<TableFile>>)> {
        let n = self.levels.len();
        // (run id → (files, cut)) per level; L0's tables all sit in run 0 here.
        type Runs = BTreeMap<u64, (Vec<Arc<TableFile>>, Option<(Vec<u8>, u64)>)>;
        let mut by_level: Vec<Runs> = self
            .levels
            .iter()
            .map(|l| {
                let mut m = Runs::new();
                for r in &l.runs {
                    let e = m.entry(r.id).or_default();
                    e.0.extend(r.files.iter().cloned());
                    e.1 = r.cut.clone().map(|c| (c, r.cut_into));
                }
                m
            })
            .collect();
        let mut removed: HashMap<u64, Arc<TableFile>> = HashMap::new();
        for &(level, id) in &edit.deleted {
            let l = level as usize;
            let runs = by_level
                .get_mut(l)
                .ok_or_else(|| Error::corruption(format!("edit deletes from level {l} of {n}")))?;
            let found = runs.values_mut().find_map(|(files, _)| {
                let pos = files.iter().position(|f| f.id == id)?;
                Some(files.remove(pos))
            });
            let f = found.ok_or_else(|| {
                Error::corruption(format!("edit deletes table {id} absent from level {l}"))
            })?;
            removed.insert(id, f);
        }
        let adds = edit
            .added
            .iter()
            .map(|(l, m)| (*l, 0u64, m))
            .chain(edit.added_to_run.iter().map(|(l, r, m)| (*l, *r, m)));
        for (level, run, meta) in adds {
            let l = level as usize;
            if l >= n {
                return Err(Error::corruption(format!("edit adds to level {l} of {n}")));
            }
            if l == 0 && run != 0 {
                return Err(Error::corruption("edit adds to a numbered run of L0"));
            }
            let f = match removed.remove(&meta.id) {
                Some(f) => f,
                None => TableFile::new(meta.clone(), reaper.clone()),
            };
            by_level[l].entry(run).or_default().0.push(f);
        }
        for (level, run, key, into) in &edit.run_cuts {
            let l = *level as usize;
            let entry = by_level
                .get_mut(l)
                .and_then(|runs| runs.get_mut(run))
                .ok_or_else(|| {
                    Error::corruption(format!("edit cuts run {run} absent from level {l}"))
                })?;
            if entry.1.as_ref().is_some_and(|(c, i)| c > key || i != into) {
                return Err(Error::corruption(format!(
                    "edit moves the cut of run {run} of level {l} backwards or to another merge"
                )));
            }
            entry.1 = Some((key.clone(), *into));
        }
        let mut v = Version::new(n);
        for (l, runs) in by_level.into_iter().enumerate() {
            if l == 0 {
                // Newest first: by largest sequence number, then by id.
                let mut files: Vec<_> = runs.into_values().flat_map(|(f, _)| f).collect();
                files.sort_by_key(|f| std::cmp::Reverse((f.largest_seq, f.id)));
                v.levels[0].runs = files
                    .into_iter()
                    .map(|f| SortedRun {
                        id: 0,
                        files: vec![f],
                        cut: None,
                        cut_into: 0,
                    })
                    .collect();
                continue;
            }
            // Newest run first; a run left without tables (merged away) disappears with its cut.
            for (id, (mut files, cut)) in runs.into_iter().rev() {
                if files.is_empty() {
                    continue;
                }
                files.sort_by(|a, b| a.smallest.cmp(&b.smallest));
                let (cut, cut_into) = match cut {
                    Some((c, i)) => (Some(c), i),
                    None => (None, 0),
                };
                v.levels[l].runs.push(SortedRun {
                    id,
                    files,
                    cut,
                    cut_into,
                });
            }
        }
        // Saturating: sizes come from the manifest, and damaged ones must not overflow.
        v.fast_bytes = v
            .all_files()
            .filter(|f| f.tier == crate::tier::Tier::Fast)
            .fold(0u64, |acc, f| acc.saturating_add(f.size));
        v.check_invariants()?;
        Ok((v, removed.into_values().collect()))
    }

    /// Checks that runs are sorted and disjoint (always on; cheap relative to an edit). With
    /// the `invariants` feature it also checks L0 ordering and that only numbered runs
    /// (split-forest trees) share a level.
    pub fn check_invariants(&self) -> Result<()> {
        #[cfg(feature = "invariants")]
        {
            let l0: Vec<_> = self.levels[0].files().collect();
            for w in l0.windows(2) {
                if w[0].largest_seq < w[1].largest_seq {
                    return Err(Error::corruption("L0 runs are not newest first"));
                }
            }
            for (l, level) in self.levels.iter().enumerate().skip(1) {
                if level.runs.len() > 1 && level.runs.iter().any(|r| r.id == 0) {
                    return Err(Error::corruption(format!(
                        "level {l} holds a leveled run beside others"
                    )));
                }
            }
        }
        for (l, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                for w in run.files.windows(2) {
                    let (a, b) = (&w[0], &w[1]);
                    if !a.ends_before(&b.smallest) {
                        return Err(Error::corruption(format!(
                            "level {l}: tables {} and {} overlap",
                            a.id, b.id
                        )));
                    }
                }
                for f in &run.files {
                    if f.smallest > f.largest {
                        return Err(Error::corruption(format!(
                            "table {} has smallest key after largest",
                            f.id
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}
