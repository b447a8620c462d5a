//! The read path: point lookups newest-source-first and iterator construction, both over a
//! pinned super-version.
//!
//! A lookup stops at the first source (memtable, L0 table, level) holding a version of the key
//! visible at the snapshot, or holding a visible range tombstone covering it: sources are
//! ordered so that every version in an older source is older than every version in a newer one.
//!
//! HotRAP: the promotion cache sits between the fast tier and the capacity tier. It is
//! consulted just before the first capacity-tier table that could hold the key; a record found
//! on the capacity tier by a read of the latest state is offered to the cache, with the
//! capacity tables consulted for the §3.3 check; every found record is reported to RALT.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::family::Family;
use super::merge_lookup::{merge_lookup, Sources};
use super::search::{probe, probe_with, Local};
use super::{DbInner, SuperVersion};
use crate::error::{ErrorRepr, Result};
use crate::iter::{DbIterator, InternalIterator, LowerClamped, MergingIterator, RunIterator};
use crate::memtable::MemTable;
use crate::options::ReadOptions;
use crate::range_del::Fragments;
use crate::tier::hot::{HotRap, InsertOutcome};
use crate::tier::temperature::IoMark;
use crate::tier::Tier;
use crate::types::{self, SeqNo, ValueKind};
use crate::version::{TableFile, Version};

/// What a memtable says about a key.
pub(crate) enum Probe {
    /// Decided: the value, or `None` (deleted).
    Found(Option<Bytes>),
    /// The newest visible version is a merge operand: fold from here (`merge_lookup`).
    Merge,
    /// Nothing visible here: older sources decide.
    Continue,
}

/// Combines a source's newest point entry and covering tombstone into a decision.
fn resolve(point: Option<(SeqNo, ValueKind, Bytes)>, tombstone: SeqNo) -> Probe {
    match point {
        Some((seq, ValueKind::Merge, _)) if tombstone <= seq => Probe::Merge,
        Some((seq, kind, v)) => {
            if tombstone > seq || kind != ValueKind::Put {
                Probe::Found(None)
            } else {
                Probe::Found(Some(v))
            }
        }
        None if tombstone > 0 => Probe::Found(None),
        None => Probe::Continue,
    }
}

pub(super) fn snapshot_seq(inner: &DbInner, opts: &ReadOptions) -> SeqNo {
    match &opts.snapshot {
        Some(s) => s.sequence(),
        None => inner.last_seq.load(Ordering::Acquire),
    }
}

pub(crate) fn get(
    inner: &Arc<DbInner>,
    fam: &Family,
    opts: &ReadOptions,
    key: &[u8],
) -> Result<Option<Bytes>> {
    if inner.shutting_down.load(Ordering::Acquire) {
        return Err(ErrorRepr::Closed.into());
    }
    inner.stats.gets.fetch_add(1, Ordering::Relaxed);
    let r = get_inner(inner, fam, opts, key)?;
    if r.is_some() {
        inner.stats.get_found.fetch_add(1, Ordering::Relaxed);
    }
    Ok(r)
}

fn get_inner(
    inner: &Arc<DbInner>,
    fam: &Family,
    opts: &ReadOptions,
    key: &[u8],
) -> Result<Option<Bytes>> {
    // HotRAP: the promotion cache's epoch is taken before the version is pinned, so a
    // compaction into the capacity tier set up after the pin is seen by the insert (§3.3).
    let since = fam.hot.as_ref().map_or(0, |h| h.cache.epoch());
    // Pin the data before reading the sequence number: the pinned memtables and tables still
    // hold every version a sequence number read afterwards can see.
    let sv = fam.super_version_guard();
    let snapshot = snapshot_seq(inner, opts);
    match from_memtables(&sv, key, snapshot) {
        Probe::Found(v) => return Ok(v),
        Probe::Merge => {
            let hot = fam.hot.as_deref();
            return merge_from_memtables(inner, hot, &sv, key, snapshot, opts.cache_only);
        }
        Probe::Continue => {}
    }
    let lookup = types::lookup_key(key, snapshot);
    // The tables that may hold the key, newest first: one per sorted run at most.
    let candidates = candidates(&sv.version, key, (0, 0));
    let at = Lookup {
        since,
        snapshot,
        key,
        lookup: &lookup,
    };
    from_tables(inner, fam, opts, &at, &candidates)
}

/// The answer of the memtables (active, then immutable, newest first).
pub(crate) fn from_memtables(sv: &SuperVersion, key: &[u8], snapshot: SeqNo) -> Probe {
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        let t = mem.max_covering_tombstone(key, snapshot);
        match resolve(mem.get(key, snapshot), t) {
            Probe::Continue => continue,
            decided => return decided,
        }
    }
    Probe::Continue
}

/// [`merge_lookup`] through every source (a memtable's newest version was an operand).
pub(super) fn merge_from_memtables(
    inner: &DbInner,
    hot: Option<&HotRap>,
    sv: &SuperVersion,
    key: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> Result<Option<Bytes>> {
    let mems: Vec<&Arc<MemTable>> = std::iter::once(&sv.mem).chain(&sv.imms).collect();
    let tables = candidates(&sv.version, key, (0, 0));
    let sources = Sources {
        mems: &mems,
        tables: &tables,
    };
    merge_lookup(inner, hot, &sources, key, snapshot, cache_only)
}

/// [`merge_lookup`] through table candidates (every newer source held nothing for the key).
fn merge_in_tables(
    inner: &DbInner,
    hot: Option<&HotRap>,
    tables: &[&Arc<TableFile>],
    at: &Lookup<'_>,
    cache_only: bool,
) -> Result<Option<Bytes>> {
    let sources = Sources { mems: &[], tables };
    merge_lookup(inner, hot, &sources, at.key, at.snapshot, cache_only)
}

/// The tables that may hold `key`, newest first (one per sorted run at most), from sorted run
/// `from = (level, run)` on.
pub(crate) fn candidates<'v>(
    version: &'v Version,
    key: &[u8],
    from: (usize, usize),
) -> Vec<&'v Arc<TableFile>> {
    let mut out = Vec::with_capacity(8);
    for (l, level) in version.levels.iter().enumerate().skip(from.0) {
        let skip = if l == from.0 { from.1 } else { 0 };
        out.extend(level.runs.iter().skip(skip).filter_map(|r| r.find(key)));
    }
    out
}

/// One key's lookup state after the memtables.
pub(super) struct Lookup<'a> {
    /// HotRAP's promotion-cache epoch, taken before the super-version was pinned.
    pub since: u64,
    pub snapshot: SeqNo,
    pub key: &'a [u8],
    /// `types::lookup_key(key, snapshot)`.
    pub lookup: &'a [u8],
}

/// Bookkeeping of a point read a fast-tier table answered: HotRAP's access record.
pub(super) fn found_fast(hot: Option<&HotRap>, key: &[u8], v: &Option<Bytes>) {
    if let Some(hot) = hot {
        hot.counters.reads_fast.fetch_add(1, Ordering::Relaxed);
        if let Some(v) = v {
            hot.tracker.record_access(key, v.len() as u32);
        }
    }
}

/// The lookup through `candidates` (newest first): the fast-tier ones in turn, then HotRAP's
/// promotion cache, then the rest (in parallel when the search pool is on).
pub(super) fn from_tables(
    inner: &Arc<DbInner>,
    fam: &Family,
    opts: &ReadOptions,
    at: &Lookup<'_>,
    candidates: &[&Arc<TableFile>],
) -> Result<Option<Bytes>> {
    let Lookup {
        since,
        snapshot,
        key,
        lookup,
    } = *at;
    let lookup_at = at;
    let hot = fam.hot.as_deref();
    let (tables, stats) = (&*inner.tables, &*inner.stats);
    let cache_only = opts.cache_only;
    // The fast tier, in order.
    let first_capacity = candidates
        .iter()
        .position(|f| f.tier == Tier::Capacity)
        .unwrap_or(candidates.len());
    let temperatures = fam.logstore.is_some();
    let fast = &candidates[..first_capacity];
    // A lookup that will consult several fast-tier tables (one per sorted run that may hold
    // the key: many under the split forest) hints the filter line of each open one (the first
    // HINTED) before testing any, so their cache misses overlap instead of following one
    // another; the readers it fetched serve the probes.
    const HINTED: usize = 32;
    let mut opened: [Option<Arc<crate::sst::reader::Table>>; HINTED] = Default::default();
    if fast.len() > 1 {
        let h = crate::sst::filter::key_hash(key);
        for (slot, f) in opened.iter_mut().zip(fast) {
            if f.smallest_seq <= snapshot {
                *slot = tables.get_cached(f);
                if let Some(t) = slot {
                    t.prefetch_filter(h);
                }
            }
        }
    }
    for (i, f) in fast.iter().enumerate() {
        // Storage reads so far on this thread (LogStore only: whether the probe missed the cache).
        let mark = IoMark::new(temperatures);
        let t = opened.get_mut(i).and_then(Option::take);
        match probe_with(tables, stats, (f, t), key, lookup, snapshot, cache_only)? {
            Local::Found(v, _) => {
                if let Some(io) = mark.since() {
                    f.temperature.record(io);
                }
                found_fast(hot, key, &v);
                return Ok(v);
            }
            Local::Merge => return merge_in_tables(inner, hot, &candidates[i..], at, cache_only),
            Local::Continue => {}
        }
    }
    let rest = &candidates[first_capacity..];
    if rest.is_empty() {
        return Ok(None);
    }
    // HotRAP: the promotion cache sits between the fast tier and the capacity tier.
    if let Some(hot) = hot {
        if let Some(v) = hot.cache.get(key, snapshot) {
            let c = &hot.counters;
            c.cache_hits.fetch_add(1, Ordering::Relaxed);
            c.reads_fast.fetch_add(1, Ordering::Relaxed);
            hot.tracker.record_access(key, v.len() as u32);
            return Ok(Some(v));
        }
    }
    // The capacity tier: several candidates are probed in parallel (SifrDB §4.3), with the
    // sequential search's result.
    let mark = IoMark::new(temperatures);
    let (at, found) = match &inner.search {
        Some(pool) if rest.len() >= 2 && !cache_only => {
            stats
                .forest
                .parallel_searches
                .fetch_add(1, Ordering::Relaxed);
            pool.search(
                rest.iter().map(|f| (*f).clone()).collect(),
                key,
                lookup,
                snapshot,
            )
        }
        _ => sequential(tables, stats, rest, key, lookup, snapshot, cache_only),
    };
    let (v, seq) = match found? {
        Local::Found(v, seq) => (v, seq),
        Local::Merge => return merge_in_tables(inner, hot, &rest[at..], lookup_at, cache_only),
        Local::Continue => return Ok(None),
    };
    if let (Some(io), Some(f)) = (mark.since(), rest.get(at)) {
        // Parallel probes run on other threads: their storage reads are not seen here.
        f.temperature.record(io);
    }
    if let Some(hot) = hot {
        hot.counters.reads_capacity.fetch_add(1, Ordering::Relaxed);
        if let (Some(v), Some(seq)) = (&v, seq) {
            hot.tracker.record_access(key, v.len() as u32);
            // Only the newest version may be cached: reads at an explicit snapshot may have
            // found an older one. The capacity candidates down to the one that answered are
            // the sources the §3.3 check watches.
            if opts.snapshot.is_none() {
                let sources: Vec<Arc<TableFile>> =
                    rest[..=at].iter().map(|f| (*f).clone()).collect();
                promote(inner, hot, key, seq, v.clone(), &sources, since);
            }
        }
    }
    Ok(v)
}

/// Probes `candidates` one after another: the first that decides, or `candidates.len()`.
fn sequential(
    tables: &crate::cache::TableCache,
    stats: &crate::stats::EngineStats,
    candidates: &[&Arc<TableFile>],
    key: &[u8],
    lookup: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> (usize, Result<Local>) {
    for (i, f) in candidates.iter().enumerate() {
        match probe(tables, stats, f, key, lookup, snapshot, cache_only) {
            Ok(Local::Continue) => continue,
            r => return (i, r),
        }
    }
    (candidates.len(), Ok(Local::Continue))
}

/// SifrDB §4.3, range queries: with two or more trees on the capacity tier, a seek first loads
/// the block each of them would be read from, in parallel on the search threads, into the
/// block cache; the children's own seeks then find it there. Needs the block cache (and the
/// iterator filling it).
fn scan_prefetch(
    inner: &Arc<DbInner>,
    version: &crate::version::Version,
    fill: bool,
) -> Option<crate::iter::Prefetch> {
    let pool = inner.search.clone()?;
    if !fill || inner.block_cache.is_none() {
        return None;
    }
    let runs: Vec<crate::version::SortedRun> = version
        .levels
        .iter()
        .flat_map(|l| l.runs.iter())
        .filter(|r| !r.files.is_empty() && r.files.iter().all(|f| f.tier == Tier::Capacity))
        .cloned()
        .collect();
    if runs.len() < 2 {
        return None;
    }
    let tables = inner.tables.clone();
    let stats = inner.stats.clone();
    Some(Box::new(move |target: &[u8]| {
        let user = types::user_key(target);
        let jobs: Vec<_> = runs
            .iter()
            .filter(|r| r.serves(user))
            .filter_map(|r| {
                // The table holding `user`, else the first after it.
                let i = r.files.partition_point(|f| f.ends_before(user));
                let f = r.files.get(i)?.clone();
                let (tables, target) = (tables.clone(), target.to_vec());
                Some(move || {
                    if let Ok(t) = tables.get(&f) {
                        let mut it = t.iter(true);
                        it.seek(&target);
                    }
                })
            })
            .collect();
        if jobs.len() >= 2 {
            stats.forest.scan_prefetches.fetch_add(1, Ordering::Relaxed);
            pool.run_all(jobs);
        }
    }))
}

/// Offers a record read from the capacity tier to the promotion cache (HotRAP §3.3).
fn promote(
    inner: &DbInner,
    hot: &HotRap,
    key: &[u8],
    seq: SeqNo,
    value: Bytes,
    sources: &[Arc<TableFile>],
    since: u64,
) {
    let c = &hot.counters;
    match hot.cache.try_insert(key, seq, value, sources, since) {
        (InsertOutcome::Inserted, sealed) => {
            c.cache_inserts.fetch_add(1, Ordering::Relaxed);
            if sealed.is_some() {
                // Wake the Checker.
                inner.bg_cv.notify_all();
            }
        }
        (InsertOutcome::Aborted, _) => {
            c.cache_aborts.fetch_add(1, Ordering::Relaxed);
        }
    }
}

pub(crate) fn iter(inner: &Arc<DbInner>, fam: &Family, opts: &ReadOptions) -> Result<DbIterator> {
    if inner.shutting_down.load(Ordering::Acquire) {
        return Err(ErrorRepr::Closed.into());
    }
    let sv = fam.super_version();
    let snapshot = snapshot_seq(inner, opts);
    let fill = !opts.skip_cache_fill;
    let cache_only = opts.cache_only;
    let (children, tombstones) = iter_sources(&inner.tables, &sv, opts)?;
    let mut merged = MergingIterator::new(children);
    if let Some(p) = scan_prefetch(inner, &sv.version, fill && !cache_only) {
        merged = merged.with_prefetch(p);
    }
    Ok(DbIterator::new(
        merged,
        snapshot,
        Fragments::new(&tombstones),
        opts.lower_bound.clone(),
        opts.upper_bound.clone(),
        sv,
    )
    .with_merge_operator(inner.opts.merge_operator.clone()))
}

/// An iterator's children, newest first, and the range tombstones that cover them.
pub(crate) type IterSources = (
    Vec<Box<dyn InternalIterator>>,
    Vec<crate::range_del::RangeTombstone>,
);

/// The sources of an iterator over `sv` within `opts`' bounds, newest first (memtables, then
/// L0's tables and each sorted run), and the range tombstones that cover them.
pub(crate) fn iter_sources(
    tables: &Arc<crate::cache::TableCache>,
    sv: &SuperVersion,
    opts: &ReadOptions,
) -> Result<IterSources> {
    let fill = !opts.skip_cache_fill;
    let cache_only = opts.cache_only;
    // With `cache_only`, only tables already open: their range tombstones and indexes are in
    // memory, and their iterators read cached blocks only.
    let open = |f: &TableFile| -> Result<Arc<crate::sst::reader::Table>> {
        if cache_only {
            tables
                .get_cached(f)
                .ok_or_else(|| ErrorRepr::Incomplete("table not open").into())
        } else {
            tables.get(f)
        }
    };
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut tombstones = Vec::new();
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        children.push(Box::new(mem.iter()));
        tombstones.extend(mem.range_tombstones());
    }
    let (lo, hi) = (opts.lower_bound.as_deref(), opts.upper_bound.as_deref());
    for (l, level) in sv.version.levels.iter().enumerate() {
        for run in &level.runs {
            for f in run.overlapping(lo, hi) {
                if f.num_range_deletions > 0 {
                    tombstones.extend_from_slice(open(f)?.range_tombstones());
                }
            }
            if l == 0 {
                for f in &run.files {
                    if f.overlaps(lo, hi) {
                        children.push(Box::new(open(f)?.iter_opt(fill, cache_only)));
                    }
                }
            } else if !run.files.is_empty() {
                let mut it = RunIterator::new(run.files.clone(), tables.clone(), fill);
                if cache_only {
                    it = it.cache_only();
                }
                match &run.cut {
                    // Keys below a split-forest tree's cut are served by the merge's output.
                    Some(cut) => children.push(Box::new(LowerClamped::new(it, cut.clone()))),
                    None => children.push(Box::new(it)),
                }
            }
        }
    }
    Ok((children, tombstones))
}
