//! Executes a split-forest merge (SifrDB §4.1–4.2): follows the [`plan`](super::plan) in key
//! order, moving tables that overlap nothing and merging overlapping ones (each segment's
//! outputs cut at the segment's end), and hands a [`Checkpoint`] to the engine every
//! `cleaning_threshold` sealed outputs — the compaction journal: the engine installs the
//! outputs so far into the output tree, deletes the inputs entirely below the checkpoint's cut
//! (early cleaning) and records the cut on the input trees, so a crash resumes the merge at the
//! cut instead of starting over.
//!
//! Invariant: at a checkpoint every record of every input below `cut` is in an installed output
//! (or dropped as invisible to every snapshot), and nothing at or above `cut` is.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::plan::{plan, Segment};
use crate::compaction::executor::{write_tables_with, CompactionEnv, CompactionResult, WriteHooks};
use crate::compaction::job::{CompactionJob, ForestMerge};
use crate::error::{Error, ErrorRepr, Result};
use crate::iter::{InternalIterator, LowerClamped, MergingIterator, RunIterator};
use crate::version::{FileMeta, Reaper, TableFile};

/// Progress of a merge, handed to the engine to install (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checkpoint {
    /// Tables of the output tree written or moved since the previous checkpoint, in key order.
    pub outputs: Vec<FileMeta>,
    /// Input tables entirely below `cut` (merged or moved): delete them from their trees.
    pub consumed: Vec<u64>,
    /// Bytes of consumed inputs that were rewritten (their files can go: early cleaning).
    pub cleaned_bytes: u64,
    /// The first user key not yet merged.
    pub cut: Vec<u8>,
}

/// What the merge keeps between checkpoints.
struct Progress<'a> {
    env: &'a CompactionEnv<'a>,
    threshold: usize,
    /// Input tables not yet consumed.
    remaining: BTreeMap<u64, FileMeta>,
    moved: HashSet<u64>,
    /// Outputs and moves not yet handed over, in key order.
    pending: Vec<FileMeta>,
    /// New tables written and not yet handed over (removed if the merge fails).
    unhanded_new: HashSet<u64>,
    since: usize,
    checkpoints: u64,
    /// Bytes written and not yet offset by cleaned inputs: the merge's extra space.
    extra: i128,
    peak_extra: u64,
    written: u64,
}

impl Progress<'_> {
    fn note_written(&mut self, bytes: u64) {
        self.written += bytes;
        self.extra += bytes as i128;
        self.peak_extra = self.peak_extra.max(self.extra.max(0) as u64);
    }

    /// Hands `sealed` (this segment's tables sealed since the last hand-over) and the pending
    /// tables to the engine if the threshold is reached.
    fn maybe_checkpoint(&mut self, sealed: &mut Vec<FileMeta>, cut: &[u8]) -> Result<()> {
        let Some(ck) = self.env.checkpoint else {
            return Ok(());
        };
        if self.threshold == 0 || self.since < self.threshold {
            return Ok(());
        }
        let mut outputs = std::mem::take(&mut self.pending);
        outputs.append(sealed);
        let consumed: Vec<u64> = self
            .remaining
            .values()
            .filter(|f| f.ends_before(cut))
            .map(|f| f.id)
            .collect();
        let mut cleaned_bytes = 0;
        for id in &consumed {
            if let Some(f) = self.remaining.remove(id) {
                if !self.moved.contains(id) {
                    cleaned_bytes += f.size;
                }
            }
        }
        for f in &outputs {
            self.unhanded_new.remove(&f.id);
        }
        ck(Checkpoint {
            outputs,
            consumed,
            cleaned_bytes,
            cut: cut.to_vec(),
        })?;
        self.extra -= cleaned_bytes as i128;
        self.since = 0;
        self.checkpoints += 1;
        Ok(())
    }
}

/// Runs a split-forest merge job (`job.forest` is set; each input is one tree, newest first).
pub fn run_forest_merge(job: &CompactionJob, env: &CompactionEnv<'_>) -> Result<CompactionResult> {
    let fm: ForestMerge = job.forest.clone().unwrap_or_default();
    let trees: Vec<Vec<FileMeta>> = job.inputs.iter().map(|i| i.files.clone()).collect();
    let resume = fm.resume_from.as_deref();
    let segments = plan(&trees, resume, job.output_tier);
    let mut p = Progress {
        env,
        threshold: fm.cleaning_threshold,
        remaining: job
            .inputs
            .iter()
            .flat_map(|i| i.files.iter())
            .filter(|f| resume.is_none_or(|c| !f.ends_before(c)))
            .map(|f| (f.id, f.clone()))
            .collect(),
        moved: HashSet::new(),
        pending: Vec::new(),
        unhanded_new: HashSet::new(),
        since: 0,
        checkpoints: 0,
        extra: 0,
        peak_extra: 0,
        written: 0,
    };
    let r = merge_segments(job, env, &segments, resume, &mut p);
    match r {
        Ok(mut res) => {
            res.outputs = std::mem::take(&mut p.pending);
            res.write_bytes = p.written;
            res.checkpoints = p.checkpoints;
            res.peak_extra_bytes = p.peak_extra;
            Ok(res)
        }
        Err(e) => {
            // Handed-over tables are installed; the rest of this merge's new tables go.
            for f in &p.pending {
                if p.unhanded_new.contains(&f.id) {
                    let _ = env.tables.store().remove(f.id, f.tier);
                }
            }
            Err(e)
        }
    }
}

fn merge_segments(
    job: &CompactionJob,
    env: &CompactionEnv<'_>,
    segments: &[Segment],
    resume: Option<&[u8]>,
    p: &mut Progress<'_>,
) -> Result<CompactionResult> {
    let mut res = CompactionResult::default();
    let scratch_reaper: Arc<Reaper> = Arc::default();
    let filter = env.filter.as_deref().map(|f| (f, job.output_level));
    for (i, seg) in segments.iter().enumerate() {
        if env.cancel.load(Ordering::Relaxed) {
            return Err(Error::from(ErrorRepr::Closed));
        }
        match seg {
            Segment::Move(t) => {
                p.moved.insert(t.meta.id);
                p.pending.push(t.meta.clone());
                res.moved_tables += 1;
                res.moved_bytes += t.meta.size;
                p.since += 1;
            }
            Segment::Merge(tables) => {
                // One run iterator per input tree over its tables in this segment.
                let mut per_tree: HashMap<usize, Vec<Arc<TableFile>>> = HashMap::new();
                let mut tombstones = Vec::new();
                let mut starts_below_cut = false;
                for t in tables {
                    if t.meta.num_range_deletions > 0 {
                        tombstones.extend_from_slice(env.tables.get(&t.meta)?.range_tombstones());
                    }
                    starts_below_cut |= resume.is_some_and(|c| t.meta.smallest.as_slice() < c);
                    res.read_bytes += t.meta.size;
                    per_tree
                        .entry(t.tree)
                        .or_default()
                        .push(TableFile::new(t.meta.clone(), scratch_reaper.clone()));
                }
                let mut trees: Vec<_> = per_tree.into_iter().collect();
                trees.sort_by_key(|(tree, _)| *tree);
                let children: Vec<Box<dyn InternalIterator>> = trees
                    .into_iter()
                    .map(|(_, files)| {
                        let it = RunIterator::new(files, env.tables.clone(), false);
                        match resume {
                            Some(c) if starts_below_cut => {
                                Box::new(LowerClamped::new(it, c.to_vec()))
                                    as Box<dyn InternalIterator>
                            }
                            _ => Box::new(it),
                        }
                    })
                    .collect();
                let mut iter = MergingIterator::new(children);
                iter.seek_to_first();
                let r = {
                    let mut on_sealed = |sealed: &mut Vec<FileMeta>, next: &[u8]| -> Result<()> {
                        if let Some(f) = sealed.last() {
                            p.unhanded_new.insert(f.id);
                            p.note_written(f.size);
                        }
                        p.since += 1;
                        p.maybe_checkpoint(sealed, next)
                    };
                    write_tables_with(
                        &mut iter,
                        tombstones,
                        &job.snapshots,
                        job.bottommost,
                        job.target_file_size,
                        &job.table,
                        filter,
                        None,
                        env,
                        WriteHooks {
                            lower: resume.filter(|_| starts_below_cut).map(<[u8]>::to_vec),
                            on_sealed: Some(&mut on_sealed),
                        },
                    )?
                };
                // The last table of the segment (sealed at its end) and any not handed over.
                for f in &r.outputs {
                    if !p.unhanded_new.contains(&f.id) {
                        p.unhanded_new.insert(f.id);
                        p.note_written(f.size);
                        p.since += 1;
                    }
                }
                p.pending.extend(r.outputs.iter().cloned());
                res.records_in += r.records_in;
                res.records_dropped += r.records_dropped;
            }
        }
        // Segment boundary: a cut here needs no table split.
        if let Some(next) = segments.get(i + 1) {
            let cut = next.smallest().to_vec();
            p.maybe_checkpoint(&mut Vec::new(), &cut)?;
        }
    }
    Ok(res)
}
