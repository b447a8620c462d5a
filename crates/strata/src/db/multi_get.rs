//! Batched point lookups (RocksDB's MultiGet): many keys read at one snapshot through one
//! pinned super-version, with the fast tier's tables probed a table at a time.
//!
//! The answers are exactly those of one [`super::read`] lookup per key at the same snapshot:
//! every key visits the same sources in the same order (memtables, then each sorted run newest
//! first). What changes is the order of work: the keys still undecided after the memtables are
//! sorted, and at each sorted run the keys falling in one table are probed together
//! ([`super::search::probe_many`]: filter lines hinted for the whole group, index searches in
//! key order, each data block fetched once). A key whose next candidate lies on the capacity
//! tier leaves the batch there and finishes as a single lookup would (the promotion cache, then
//! the maybe parallel capacity-tier search); with the search threads on (a tiered database),
//! those keys run concurrently on them, so a batch waits for about one round of capacity-tier
//! requests rather than one per key. Depends on the read path's helpers; never on the write
//! path.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::family::Family;
use super::merge_lookup::{merge_lookup, Sources};
use super::read::{
    candidates, found_fast, from_memtables, from_tables, merge_from_memtables, snapshot_seq,
    Lookup, Probe,
};
use super::search::{probe_many, Local};
use super::DbInner;
use crate::error::{ErrorRepr, Result};
use crate::options::ReadOptions;
use crate::tier::temperature::IoMark;
use crate::tier::Tier;
use crate::types;
use crate::version::TableFile;

/// One key's answer.
type Answer = Result<Option<Bytes>>;

pub(crate) fn multi_get(
    inner: &Arc<DbInner>,
    fam: &Arc<Family>,
    opts: &ReadOptions,
    keys: &[&[u8]],
) -> Vec<Result<Option<Bytes>>> {
    if inner.shutting_down.load(Ordering::Acquire) {
        return keys.iter().map(|_| Err(ErrorRepr::Closed.into())).collect();
    }
    let stats = &*inner.stats;
    stats.gets.fetch_add(keys.len() as u64, Ordering::Relaxed);
    let out = lookup_all(inner, fam, opts, keys);
    let found = out.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
    stats.get_found.fetch_add(found as u64, Ordering::Relaxed);
    out
}

fn lookup_all(
    inner: &Arc<DbInner>,
    fam: &Arc<Family>,
    opts: &ReadOptions,
    keys: &[&[u8]],
) -> Vec<Result<Option<Bytes>>> {
    // As in a single lookup: the promotion cache's epoch, then the pin, then the sequence.
    let since = fam.hot.as_ref().map_or(0, |h| h.cache.epoch());
    let sv = fam.super_version_guard();
    let snapshot = snapshot_seq(inner, opts);
    // A key no source decides is absent: every answer starts so.
    let mut out: Vec<Answer> = Vec::with_capacity(keys.len());
    sv.mem.prefetch_gets(keys);
    let mut pending: Vec<usize> = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        out.push(match from_memtables(&sv, key, snapshot) {
            Probe::Found(v) => Ok(v),
            Probe::Merge => {
                let hot = fam.hot.as_deref();
                merge_from_memtables(inner, hot, &sv, key, snapshot, opts.cache_only)
            }
            Probe::Continue => {
                pending.push(i);
                Ok(None)
            }
        });
    }
    // Sorted, neighbouring keys fall in the same table and share its index's search path.
    pending.sort_by(|&a, &b| keys[a].cmp(keys[b]));
    let mut lookups: Vec<Vec<u8>> = vec![Vec::new(); keys.len()];
    for &i in &pending {
        lookups[i] = types::lookup_key(keys[i], snapshot);
    }
    let (tables, hot) = (&*inner.tables, fam.hot.as_deref());
    let temperatures = fam.logstore.is_some();
    // Keys whose next candidate is on the capacity tier, with the sorted run it is in.
    let mut to_capacity: Vec<(usize, (usize, usize))> = Vec::new();
    let mut next: Vec<usize> = Vec::with_capacity(pending.len());
    for (l, level) in sv.version.levels.iter().enumerate() {
        for (r, run) in level.runs.iter().enumerate() {
            if pending.is_empty() {
                break;
            }
            next.clear();
            let mut g = 0;
            let mut found = pending.first().and_then(|&i| run.find(keys[i]));
            while g < pending.len() {
                let f = found;
                let mut e = g + 1;
                found = None;
                while let Some(&i) = pending.get(e) {
                    found = run.find(keys[i]);
                    if found.map(Arc::as_ptr) != f.map(Arc::as_ptr) {
                        break;
                    }
                    e += 1;
                }
                let group = &pending[g..e];
                g = e;
                let Some(f) = f else {
                    next.extend_from_slice(group);
                    continue;
                };
                if f.tier == Tier::Capacity {
                    to_capacity.extend(group.iter().map(|&i| (i, (l, r))));
                    continue;
                }
                let reqs: Vec<(&[u8], &[u8])> =
                    group.iter().map(|&i| (keys[i], &lookups[i][..])).collect();
                let mark = IoMark::new(temperatures);
                let answers = probe_many(tables, &inner.stats, f, &reqs, snapshot, opts.cache_only);
                // LogStore: every key found is an access; the group's storage reads (if any)
                // count once, on the first (per key they cannot be told apart here).
                let mut io = mark.since();
                for (&i, a) in group.iter().zip(answers) {
                    match a {
                        Ok(Local::Continue) => next.push(i),
                        Ok(Local::Merge) => {
                            let tables = candidates(&sv.version, keys[i], (l, r));
                            let sources = Sources {
                                mems: &[],
                                tables: &tables,
                            };
                            let cache_only = opts.cache_only;
                            out[i] =
                                merge_lookup(inner, hot, &sources, keys[i], snapshot, cache_only);
                        }
                        Ok(Local::Found(v, _)) => {
                            if let Some(read) = io {
                                f.temperature.record(read);
                                io = Some(false);
                            }
                            found_fast(hot, keys[i], &v);
                            out[i] = Ok(v);
                        }
                        Err(e) => out[i] = Err(e),
                    }
                }
            }
            std::mem::swap(&mut pending, &mut next);
        }
    }
    match &inner.search {
        // Capacity-tier reads are network requests: the keys that need them are looked up
        // concurrently on the search threads (and this one), each as a single lookup would.
        Some(pool) if to_capacity.len() >= 2 && !opts.cache_only => {
            // A job owns what its lookup needs; the pool drops it once run, so a finished batch
            // does not keep the database (its LOCK) or tables alive.
            let jobs: Vec<_> = to_capacity
                .iter()
                .map(|&(i, from)| {
                    let key = keys[i].to_vec();
                    let candidates: Vec<Arc<TableFile>> = candidates(&sv.version, &key, from)
                        .into_iter()
                        .cloned()
                        .collect();
                    let (inner, fam, opts) = (inner.clone(), fam.clone(), opts.clone());
                    let lookup = std::mem::take(&mut lookups[i]);
                    move || -> Answer {
                        let refs: Vec<&Arc<TableFile>> = candidates.iter().collect();
                        let at = Lookup {
                            since,
                            snapshot,
                            key: &key,
                            lookup: &lookup,
                        };
                        from_tables(&inner, &fam, &opts, &at, &refs)
                    }
                })
                .collect();
            for (&(i, _), answer) in to_capacity.iter().zip(pool.run_all(jobs)) {
                out[i] = answer;
            }
        }
        _ => {
            for (i, from) in to_capacity {
                let candidates = candidates(&sv.version, keys[i], from);
                let at = Lookup {
                    since,
                    snapshot,
                    key: keys[i],
                    lookup: &lookups[i],
                };
                out[i] = from_tables(inner, fam, opts, &at, &candidates);
            }
        }
    }
    out
}
