//! The read path: point lookups newest-source-first and iterator construction, both over a
//! pinned super-version.
//!
//! A lookup stops at the first source (memtable, L0 table, level) holding a version of the key
//! visible at the snapshot, or holding a visible range tombstone covering it: sources are
//! ordered so that every version in an older source is older than every version in a newer one.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::DbInner;
use crate::error::{ErrorRepr, Result};
use crate::iter::{DbIterator, InternalIterator, MergingIterator, RunIterator};
use crate::options::ReadOptions;
use crate::range_del::Fragments;
use crate::types::{self, SeqNo, ValueKind};

enum Probe {
    Found(Option<Bytes>),
    Continue,
}

/// Combines a source's newest point entry and covering tombstone into a decision.
fn resolve(point: Option<(SeqNo, ValueKind, Bytes)>, tombstone: SeqNo) -> Probe {
    match point {
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

fn snapshot_seq(inner: &DbInner, opts: &ReadOptions) -> SeqNo {
    match &opts.snapshot {
        Some(s) => s.sequence(),
        None => inner.last_seq.load(Ordering::Acquire),
    }
}

pub(crate) fn get(inner: &Arc<DbInner>, opts: &ReadOptions, key: &[u8]) -> Result<Option<Bytes>> {
    if inner.shutting_down.load(Ordering::Acquire) {
        return Err(ErrorRepr::Closed.into());
    }
    inner.stats.gets.fetch_add(1, Ordering::Relaxed);
    let r = get_inner(inner, opts, key)?;
    if r.is_some() {
        inner.stats.get_found.fetch_add(1, Ordering::Relaxed);
    }
    Ok(r)
}

fn get_inner(inner: &Arc<DbInner>, opts: &ReadOptions, key: &[u8]) -> Result<Option<Bytes>> {
    // Pin the data before reading the sequence number: the pinned memtables and tables still
    // hold every version a sequence number read afterwards can see.
    let sv = inner.super_version();
    let snapshot = snapshot_seq(inner, opts);
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        let t = mem.max_covering_tombstone(key, snapshot);
        if let Probe::Found(v) = resolve(mem.get(key, snapshot), t) {
            return Ok(v);
        }
    }
    let lookup = types::lookup_key(key, snapshot);
    for level in &sv.version.levels {
        for run in &level.runs {
            let Some(f) = run.find(key) else { continue };
            if f.smallest_seq > snapshot {
                continue;
            }
            let table = inner.tables.get(f)?;
            let t = table.max_covering_tombstone(key, snapshot);
            if let Probe::Found(v) = resolve(table.get(&lookup, key)?, t) {
                return Ok(v);
            }
        }
    }
    Ok(None)
}

pub(crate) fn iter(inner: &Arc<DbInner>, opts: &ReadOptions) -> Result<DbIterator> {
    if inner.shutting_down.load(Ordering::Acquire) {
        return Err(ErrorRepr::Closed.into());
    }
    let sv = inner.super_version();
    let snapshot = snapshot_seq(inner, opts);
    let fill = !opts.skip_cache_fill;
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
                    tombstones.extend_from_slice(inner.tables.get(f)?.range_tombstones());
                }
            }
            if l == 0 {
                for f in &run.files {
                    if f.overlaps(lo, hi) {
                        children.push(Box::new(inner.tables.get(f)?.iter(fill)));
                    }
                }
            } else if !run.files.is_empty() {
                children.push(Box::new(RunIterator::new(
                    run.files.clone(),
                    inner.tables.clone(),
                    fill,
                )));
            }
        }
    }
    Ok(DbIterator::new(
        MergingIterator::new(children),
        snapshot,
        Fragments::new(&tombstones),
        opts.lower_bound.clone(),
        opts.upper_bound.clone(),
        sv,
    ))
}
