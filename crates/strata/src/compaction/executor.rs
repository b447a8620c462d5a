//! Executes a [`CompactionJob`] (and, through [`write_tables`], a memtable flush): merges the
//! inputs, drops what no snapshot can see, and writes size-bounded output tables with their
//! range tombstones clipped to each table's key range.
//!
//! HotRAP routing: with a [`HotRoute`], every version of a hot user key in the route's range
//! goes to a second stream of fast-tier tables for the route's level; everything else goes to
//! the job's output level. Range tombstones stay in the main stream, so a key covered by any
//! tombstone of the job is never routed (a tombstone below a newer-looking record would be
//! missed by reads). Promoted records (copies from the promotion cache) merge in as one more
//! input; a copy and the capacity-tier original share a sequence number and collapse into one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::filter::{CompactionFilter, FilterDecision};
use super::job::{CompactionJob, HotRoute};
use super::rate_limiter::RateLimiter;
use crate::cache::persistent::MetaKinds;
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator, RunIterator};
use crate::range_del::{Fragments, RangeTombstone};
use crate::sst::{TableBuilder, TableBuilderOptions};
use crate::storage::WritableFile;
use crate::tier::Tier;
use crate::types::{self, SeqNo, ValueKind};
use crate::version::{FileMeta, Reaper, TableFile};

/// Reserves table numbers durably: the database's manifest records the counter past them
/// before they are handed out, so a reopened database never reuses numbers a remote worker
/// may still be writing.
pub trait IdReserver: Sync {
    /// Returns the first of `n` consecutive reserved numbers.
    fn reserve_ids(&self, n: u64) -> Result<u64>;
}

/// The handles a job needs to run.
pub struct CompactionEnv<'a> {
    /// Opens input tables and creates, on `output_tier`, the output tables.
    pub tables: Arc<TableCache>,
    /// The tier new tables are written to.
    pub output_tier: Tier,
    /// The database's table-number counter; each output table takes the next number.
    pub file_numbers: Arc<AtomicU64>,
    /// Table numbers from `file_numbers` must stay below this (a remote job's reserved
    /// range); reaching it fails the job.
    pub id_limit: Option<u64>,
    /// Durable reservations of table numbers for remote jobs; `None`: plain `fetch_add` on
    /// `file_numbers` (no remote jobs, or a database that is not running yet).
    pub reserve_ids: Option<&'a dyn IdReserver>,
    /// Throttles output-table writes (RocksDB's `rate_limiter`); `None`: unthrottled.
    pub rate_limiter: Option<Arc<RateLimiter>>,
    /// Set when the database shuts down; the job stops early with an error.
    pub cancel: &'a AtomicBool,
    /// Applied by compactions (not flushes) to records no snapshot can see.
    pub filter: Option<Arc<dyn CompactionFilter>>,
    /// Folds merge operands (flushes and compactions); `None`: a job that meets an operand
    /// fails.
    pub merge: Option<Arc<dyn crate::merge::MergeOperator>>,
    /// Installs a split-forest merge's progress (its compaction journal and early cleaning);
    /// `None` runs the merge without early cleaning.
    #[allow(clippy::type_complexity)]
    pub checkpoint:
        Option<&'a (dyn Fn(crate::compaction::forest::Checkpoint) -> Result<()> + Sync)>,
    /// Puts the fast-tier outputs' data blocks into the block cache as they are written
    /// (`Options::prepopulate_block_cache`: memtable flushes only).
    pub prepopulate_block_cache: bool,
}

/// What a job produced: what the engine verifies and installs with one manifest edit.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CompactionResult {
    /// Tables of the job's output level.
    pub outputs: Vec<FileMeta>,
    /// Fast-tier tables of the route's level (HotRAP retention and promotion).
    pub fast_outputs: Vec<FileMeta>,
    /// Bytes of records routed to `fast_outputs`, and how many came from promoted records.
    pub routed_bytes: u64,
    /// Records routed to `fast_outputs`.
    pub routed_records: u64,
    /// Bytes of the input tables read (for a split-forest merge, only the merged ones).
    pub read_bytes: u64,
    /// Bytes of the output tables written (moved tables not included).
    pub write_bytes: u64,
    /// Input records read, promoted records included.
    pub records_in: u64,
    /// Input records not written: shadowed by a newer version no snapshot separates them from,
    /// covered by a range tombstone, or deletions and filter removals at the bottommost level.
    pub records_dropped: u64,
    /// Split forest: tables moved into the output tree by metadata alone (among `outputs`).
    #[serde(default)]
    pub moved_tables: u64,
    /// Split forest: bytes of the moved tables.
    #[serde(default)]
    pub moved_bytes: u64,
    /// Split forest: checkpoints handed to the engine (their outputs are not in `outputs`).
    #[serde(default)]
    pub checkpoints: u64,
    /// Split forest: the most bytes written and not yet offset by early-cleaned inputs.
    #[serde(default)]
    pub peak_extra_bytes: u64,
}

/// Runs a compaction job. Output tables are written and synced but not installed.
pub fn run_compaction(job: &CompactionJob, env: &CompactionEnv<'_>) -> Result<CompactionResult> {
    if job.forest.is_some() {
        return super::forest::run_forest_merge(job, env);
    }
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut tombstones = Vec::new();
    let scratch_reaper: Arc<Reaper> = Arc::default();
    for input in &job.inputs {
        for f in &input.files {
            // Deeper levels are read through one run iterator: a table is opened here only
            // for its range tombstones.
            if input.level > 0 && f.num_range_deletions == 0 {
                continue;
            }
            let t = env.tables.get(f)?;
            tombstones.extend_from_slice(t.range_tombstones());
            if input.level == 0 {
                children.push(Box::new(t.iter(false)));
            }
        }
        if input.level > 0 && !input.files.is_empty() {
            let files = input
                .files
                .iter()
                .map(|m| TableFile::new(m.clone(), scratch_reaper.clone()))
                .collect();
            children.push(Box::new(RunIterator::new(files, env.tables.clone(), false)));
        }
    }
    if !job.promoted.is_empty() {
        let mem = Arc::new(crate::memtable::MemTable::new(0));
        for r in &job.promoted {
            mem.add(r.seq, ValueKind::Put, &r.key, &r.value);
        }
        children.push(Box::new(mem.iter()));
    }
    let mut iter = MergingIterator::new(children);
    iter.seek_to_first();
    let filter = env.filter.as_deref().map(|f| (f, job.output_level));
    let mut r = write_tables(
        &mut iter,
        tombstones,
        &job.snapshots,
        job.bottommost,
        job.target_file_size,
        &job.table,
        filter,
        job.route.as_ref(),
        env,
    )?;
    r.read_bytes = job.input_bytes();
    Ok(r)
}

/// The index of the snapshot stripe holding `seq`: the first snapshot that can see it.
fn stripe(snapshots: &[SeqNo], seq: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seq)
}

struct RateLimitedFile {
    inner: Box<dyn WritableFile>,
    limiter: Arc<RateLimiter>,
}

impl WritableFile for RateLimitedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.limiter.request(data.len() as u64);
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn start_writeback(&mut self) -> Result<()> {
        self.inner.start_writeback()
    }
}

struct Outputs<'a, 'b> {
    env: &'a CompactionEnv<'b>,
    tier: Tier,
    opts: &'a TableBuilderOptions,
    tombstones: Vec<RangeTombstone>,
    current: Option<(u64, TableBuilder)>,
    lo: Option<Vec<u8>>,
    done: Vec<FileMeta>,
    created: Vec<u64>,
}

impl<'a, 'b> Outputs<'a, 'b> {
    fn new(
        env: &'a CompactionEnv<'b>,
        tier: Tier,
        opts: &'a TableBuilderOptions,
        tombstones: Vec<RangeTombstone>,
    ) -> Self {
        Outputs {
            env,
            tier,
            opts,
            tombstones,
            current: None,
            lo: None,
            done: Vec::new(),
            created: Vec::new(),
        }
    }

    fn open(&mut self) -> Result<&mut TableBuilder> {
        if self.current.is_none() {
            let id = self.env.file_numbers.fetch_add(1, Ordering::SeqCst);
            if self.env.id_limit.is_some_and(|limit| id >= limit) {
                return Err(Error::invalid(format!(
                    "compaction ran out of its reserved table numbers (next {id})"
                )));
            }
            self.created.push(id);
            let mut file = self.env.tables.store().create(id, self.tier)?;
            if let Some(l) = &self.env.rate_limiter {
                file = Box::new(RateLimitedFile {
                    inner: file,
                    limiter: l.clone(),
                });
            }
            let mut b = TableBuilder::new(file, self.opts.clone());
            if self.env.prepopulate_block_cache && self.tier == Tier::Fast {
                if let Some(cache) = self.env.tables.block_cache() {
                    b.prepopulate(cache.clone(), id);
                }
            }
            if self.tier == Tier::Capacity {
                b.set_index(self.opts.capacity_index);
                b.capture_meta_tail();
            }
            self.current = Some((id, b));
        }
        Ok(&mut self.current.as_mut().expect("just opened").1)
    }

    /// Finishes the current table, whose keys lie in `[self.lo, hi)`.
    fn finish(&mut self, hi: Option<&[u8]>) -> Result<()> {
        let lo = self.lo.clone();
        let mut ts_lo: Option<Vec<u8>> = None;
        let mut ts_hi: Option<Vec<u8>> = None;
        let clipped: Vec<RangeTombstone> = self
            .tombstones
            .iter()
            .filter(|t| hi.is_none_or(|h| t.start.as_slice() < h))
            .filter(|t| lo.as_deref().is_none_or(|l| t.end.as_slice() > l))
            .map(|t| {
                let mut c = t.clone();
                if let Some(l) = &lo {
                    if c.start < *l {
                        c.start = l.clone();
                    }
                }
                if let Some(h) = hi {
                    if c.end.as_slice() > h {
                        c.end = h.to_vec();
                    }
                }
                c
            })
            .filter(|c| !c.is_empty())
            .collect();
        if self.current.is_none() && clipped.is_empty() {
            return Ok(());
        }
        for c in clipped {
            if ts_lo.as_ref().is_none_or(|x| c.start < *x) {
                ts_lo = Some(c.start.clone());
            }
            if ts_hi.as_ref().is_none_or(|x| c.end > *x) {
                ts_hi = Some(c.end.clone());
            }
            self.open()?.add_range_tombstone(c);
        }
        let (id, builder) = self.current.take().expect("opened above");
        let s = builder.finish()?;
        if let Some((off, tail)) = &s.meta_tail {
            self.env.tables.store().record_meta_tail(
                id,
                s.file_size,
                *off,
                tail,
                Some(MetaKinds::of(&s.props)),
            )?;
        }
        let p_lo = s.smallest_point.as_deref().map(types::user_key);
        let p_hi = s.largest_point.as_deref().map(types::user_key);
        let smallest = match (p_lo, ts_lo.as_deref()) {
            (Some(a), Some(b)) => a.min(b).to_vec(),
            (Some(a), None) => a.to_vec(),
            (None, Some(b)) => b.to_vec(),
            (None, None) => Vec::new(),
        };
        let (largest, largest_exclusive) = match (p_hi, ts_hi) {
            (Some(a), Some(b)) if b.as_slice() > a => (b, true),
            (Some(a), _) => (a.to_vec(), false),
            (None, Some(b)) => (b, true),
            (None, None) => (Vec::new(), false),
        };
        self.done.push(FileMeta {
            id,
            size: s.file_size,
            smallest,
            largest,
            largest_exclusive,
            smallest_seq: s.props.smallest_seq,
            largest_seq: s.props.largest_seq,
            num_entries: s.props.num_entries,
            num_deletions: s.props.num_deletions,
            num_range_deletions: s.props.num_range_deletions,
            tier: self.tier,
        });
        Ok(())
    }

    fn cleanup(&self) {
        for id in &self.created {
            let _ = self.env.tables.store().remove(*id, self.tier);
        }
    }

    /// Stops tracking tables a hook took out of `done`: they are the caller's now, and a
    /// later failure must not remove them. (Every created table is in `done`, handed over, or
    /// the current one: a table is only created to receive an entry.)
    fn forget_handed_over(&mut self) {
        let kept: std::collections::HashSet<u64> = self.done.iter().map(|f| f.id).collect();
        let current = self.current.as_ref().map(|(id, _)| *id);
        self.created
            .retain(|id| kept.contains(id) || Some(*id) == current);
    }

    /// Removes files created for tables that turned out empty.
    fn remove_unused(&self) {
        let kept: std::collections::HashSet<u64> = self.done.iter().map(|f| f.id).collect();
        for id in &self.created {
            if !kept.contains(id) {
                let _ = self.env.tables.store().remove(*id, self.tier);
            }
        }
    }
}

/// A run of merge operands of one key and snapshot stripe, as a job meets them.
struct OperandRun<'a> {
    key: &'a [u8],
    stripe: usize,
    snapshots: &'a [SeqNo],
    fragments: &'a Fragments,
    bottommost: bool,
}

/// What a run of merge operands becomes in the output.
#[derive(Debug, PartialEq)]
enum Folded {
    /// A value, with the sequence number of the newest operand: the operands were folded
    /// with the base (a put, a deletion, a covering range tombstone, or nothing at all).
    Value(SeqNo, Vec<u8>),
    /// Operands, newest first, with their sequence numbers: the base is not in the job, or
    /// in an older stripe (combined into one by the operator's partial merge when it can); or
    /// the operator failed to fold them (`true`: the base of the stripe is kept as well, so a
    /// read of the key fails as it would have, and the job does not).
    Operands(Vec<(SeqNo, Vec<u8>)>, bool),
}

/// Takes the merge operands of `run` from `iter` (positioned at the first, which is neither
/// shadowed nor covered) and folds them. Stops at the first entry that is not an operand of
/// the run: a base of the same stripe (a put, a deletion, or an entry a range tombstone of the
/// stripe covers) is left for the caller, which drops it as shadowed by the result; another
/// stripe or key is the caller's next record. Without the base in the stripe, the operands
/// are folded onto nothing only at the bottommost level when no older version of the key
/// follows.
fn fold_operands(
    iter: &mut dyn InternalIterator,
    run: &OperandRun<'_>,
    op: Option<&dyn crate::merge::MergeOperator>,
    res: &mut CompactionResult,
) -> Result<Folded> {
    let op = op.ok_or_else(|| crate::merge::missing_operator(run.key))?;
    let first = types::parse_internal_key(iter.key())?.seq;
    let mut operands: Vec<(SeqNo, Vec<u8>)> = vec![(first, iter.value().to_vec())];
    iter.next();
    // `Some(base)` once the stripe's base is found (`None` inside: deleted).
    let mut base: Option<Option<Vec<u8>>> = None;
    let mut older_version = false;
    while iter.valid() {
        let p = types::parse_internal_key(iter.key())?;
        if p.user_key != run.key {
            break;
        }
        if stripe(run.snapshots, p.seq) != run.stripe {
            older_version = true;
            break;
        }
        let covered = run
            .fragments
            .min_covering_above(run.key, p.seq)
            .is_some_and(|t| stripe(run.snapshots, t) == run.stripe);
        if covered {
            base = Some(None);
            break;
        }
        match p.kind {
            ValueKind::Merge => {
                operands.push((p.seq, iter.value().to_vec()));
                res.records_in += 1;
                iter.next();
            }
            ValueKind::Put => {
                base = Some(Some(iter.value().to_vec()));
                break;
            }
            ValueKind::Delete | ValueKind::RangeDelete => {
                base = Some(None);
                break;
            }
        }
    }
    if base.is_none() && run.bottommost && !older_version {
        base = Some(None);
    }
    let values: Vec<Vec<u8>> = operands.iter().map(|(_, v)| v.clone()).collect();
    let folded = match base {
        Some(b) => match crate::merge::full_merge(op, run.key, b.as_deref(), &values) {
            Ok(v) => Folded::Value(first, v),
            Err(e) => {
                // A flush or compaction must not fail for one key's bad value: that would stop
                // every write, and a reopen (which flushes the replayed log) too.
                tracing::warn!(error = %e, "merge operands kept unfolded");
                Folded::Operands(operands, true)
            }
        },
        None if operands.len() >= 2 => match crate::merge::partial_merge(op, run.key, &values) {
            Some(one) => Folded::Operands(vec![(first, one)], false),
            None => Folded::Operands(operands, false),
        },
        None => Folded::Operands(operands, false),
    };
    // The operands taken beyond the first that are not written as they were.
    if let Folded::Value(..) = &folded {
        res.records_dropped += values.len() as u64 - 1;
    } else if let Folded::Operands(o, _) = &folded {
        res.records_dropped += (values.len() - o.len()) as u64;
    }
    Ok(folded)
}

/// Optional behaviour of [`write_tables_with`] used by split-forest merges.
#[derive(Default)]
pub struct WriteHooks<'h> {
    /// Output tables start at this user key (a resumed merge): range tombstones are clipped
    /// to it.
    pub lower: Option<Vec<u8>>,
    /// Called each time a main-stream table is sealed because it reached the target size,
    /// with the sealed tables not yet handed over and the user key the next table starts
    /// at. Tables it drains from the vector are handed over (installed by the caller) and are
    /// no longer removed if the job fails later.
    #[allow(clippy::type_complexity)]
    pub on_sealed: Option<&'h mut dyn FnMut(&mut Vec<FileMeta>, &[u8]) -> Result<()>>,
}

/// Writes the entries of `iter` (positioned at its first entry) into new tables, applying the
/// drop rules of the module docs and, if given, a compaction filter with the output level.
/// With a `route` (HotRAP), hot keys of its range go to fast-tier tables (the result's
/// `fast_outputs`), the rest to `env.output_tier`. Used by compactions and L0 writes.
#[allow(clippy::too_many_arguments)]
pub fn write_tables(
    iter: &mut dyn InternalIterator,
    tombstones: Vec<RangeTombstone>,
    snapshots: &[SeqNo],
    bottommost: bool,
    target_file_size: u64,
    table: &TableBuilderOptions,
    filter: Option<(&dyn CompactionFilter, usize)>,
    route: Option<&HotRoute>,
    env: &CompactionEnv<'_>,
) -> Result<CompactionResult> {
    write_tables_with(
        iter,
        tombstones,
        snapshots,
        bottommost,
        target_file_size,
        table,
        filter,
        route,
        env,
        WriteHooks::default(),
    )
}

/// [`write_tables`] with [`WriteHooks`].
#[allow(clippy::too_many_arguments)]
pub fn write_tables_with(
    iter: &mut dyn InternalIterator,
    tombstones: Vec<RangeTombstone>,
    snapshots: &[SeqNo],
    bottommost: bool,
    target_file_size: u64,
    table: &TableBuilderOptions,
    filter: Option<(&dyn CompactionFilter, usize)>,
    route: Option<&HotRoute>,
    env: &CompactionEnv<'_>,
    mut hooks: WriteHooks<'_>,
) -> Result<CompactionResult> {
    let newest_stripe = snapshots.len();
    let any_tombstone = !tombstones.is_empty();
    let fragments = Fragments::new(&tombstones);
    let kept: Vec<RangeTombstone> = tombstones
        .into_iter()
        .filter(|t| !t.is_empty())
        .filter(|t| !(bottommost && stripe(snapshots, t.seq) == 0))
        .collect();
    let mut out = Outputs::new(env, env.output_tier, table, kept);
    out.lo = hooks.lower.take();
    // The fast stream holds no range tombstones (keys a tombstone covers are never routed).
    let mut fast = Outputs::new(env, Tier::Fast, table, Vec::new());
    let r = (|| -> Result<CompactionResult> {
        let mut res = CompactionResult::default();
        let mut cur_key: Vec<u8> = Vec::new();
        let mut have_key = false;
        let mut to_fast = false;
        let mut prev_stripe: Option<usize> = None;
        let mut n = 0u64;
        while iter.valid() {
            n += 1;
            if n.is_multiple_of(1024) && env.cancel.load(Ordering::Relaxed) {
                return Err(Error::from(crate::error::ErrorRepr::Closed));
            }
            let ik = iter.key();
            let p = types::parse_internal_key(ik)?;
            res.records_in += 1;
            if !have_key || p.user_key != cur_key.as_slice() {
                // A new user key: the only place an output table may be cut, and where routing
                // is decided (all versions of a key go to one stream).
                to_fast = route.is_some_and(|r| r.is_hot(p.user_key))
                    && !(any_tombstone && fragments.min_covering_above(p.user_key, 0).is_some());
                let stream = if to_fast { &mut fast } else { &mut out };
                if let Some((_, b)) = &stream.current {
                    if b.estimated_size() >= target_file_size {
                        stream.finish(Some(p.user_key))?;
                        stream.lo = Some(p.user_key.to_vec());
                        if let (false, Some(hook)) = (to_fast, hooks.on_sealed.as_mut()) {
                            hook(&mut out.done, p.user_key)?;
                            out.forget_handed_over();
                        }
                    }
                }
                cur_key.clear();
                cur_key.extend_from_slice(p.user_key);
                have_key = true;
                prev_stripe = None;
            }
            let st = stripe(snapshots, p.seq);
            let shadowed = prev_stripe == Some(st);
            prev_stripe = Some(st);
            let covered = fragments
                .min_covering_above(p.user_key, p.seq)
                .is_some_and(|t| stripe(snapshots, t) == st);
            let obsolete_delete = p.kind == ValueKind::Delete && bottommost && st == 0;
            if shadowed || covered || obsolete_delete {
                res.records_dropped += 1;
            } else if p.kind == ValueKind::Merge {
                // The stripe's operands, folded with its base value where the job holds it.
                let key = p.user_key.to_vec();
                let run = OperandRun {
                    key: &key,
                    stripe: st,
                    snapshots,
                    fragments: &fragments,
                    bottommost,
                };
                let folded = fold_operands(iter, &run, env.merge.as_deref(), &mut res)?;
                let stream = if to_fast { &mut fast } else { &mut out };
                let mut written = 0;
                match folded {
                    // Compaction filters see puts only: a folded value is not in the format a
                    // filter expects (a TTL stamp, say), so it is never filtered.
                    Folded::Value(seq, v) => {
                        let ik = types::internal_key(&key, seq, ValueKind::Put as u8);
                        stream.open()?.add(&ik, &v)?;
                        written += ik.len() + v.len();
                    }
                    Folded::Operands(operands, keep_base) => {
                        if keep_base {
                            // The stripe's base follows and is written too.
                            prev_stripe = None;
                        }
                        for (seq, v) in operands {
                            let ik = types::internal_key(&key, seq, ValueKind::Merge as u8);
                            stream.open()?.add(&ik, &v)?;
                            written += ik.len() + v.len();
                        }
                    }
                }
                if to_fast {
                    res.routed_records += 1;
                    res.routed_bytes += written as u64;
                }
                // `fold_operands` moved the iterator past the operands it took.
                continue;
            } else {
                let decision = match filter {
                    Some((f, level)) if p.kind == ValueKind::Put && st == newest_stripe => {
                        f.filter(level, p.user_key, iter.value())
                    }
                    _ => FilterDecision::Keep,
                };
                let stream = if to_fast { &mut fast } else { &mut out };
                let written = match decision {
                    FilterDecision::Keep => {
                        let v = iter.value();
                        stream.open()?.add(ik, v)?;
                        ik.len() + v.len()
                    }
                    FilterDecision::ChangeValue(v) => {
                        stream.open()?.add(ik, &v)?;
                        ik.len() + v.len()
                    }
                    FilterDecision::Remove if bottommost && st == 0 => {
                        res.records_dropped += 1;
                        0
                    }
                    FilterDecision::Remove => {
                        let del = types::internal_key(p.user_key, p.seq, ValueKind::Delete as u8);
                        stream.open()?.add(&del, &[])?;
                        del.len()
                    }
                };
                if to_fast {
                    res.routed_records += 1;
                    res.routed_bytes += written as u64;
                }
            }
            iter.next();
        }
        iter.status()?;
        out.finish(None)?;
        fast.finish(None)?;
        res.write_bytes = out.done.iter().chain(&fast.done).map(|f| f.size).sum();
        Ok(res)
    })();
    match r {
        Ok(mut res) => {
            out.remove_unused();
            fast.remove_unused();
            res.outputs = std::mem::take(&mut out.done);
            res.fast_outputs = std::mem::take(&mut fast.done);
            res.outputs.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            res.fast_outputs.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            Ok(res)
        }
        Err(e) => {
            out.current = None;
            out.cleanup();
            fast.current = None;
            fast.cleanup();
            Err(e)
        }
    }
}
