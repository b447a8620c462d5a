//! Checks a remote job's result before the engine installs it (CaaS-LSM §4.1 step ⑥):
//! the outputs use the attempt's table numbers, lie on the tiers the job asked for, are
//! sorted, disjoint and inside the inputs' key range, account for every record the job read,
//! and every table opens (footer, index, filter and properties pass their checksums) with the
//! entry counts, sequence numbers and first and last keys its metadata claims (two data
//! blocks read, one at a time: no scan readahead). At [`VerifyLevel::Full`] every data block
//! is read and checked too.
//!
//! Depends on the table cache and the job types; pure apart from reading the outputs.

use std::collections::HashSet;

use super::runner::VerifyLevel;
use super::RemoteJob;
use crate::cache::TableCache;
use crate::compaction::CompactionResult;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::tier::Tier;
use crate::types;
use crate::version::FileMeta;

/// Verifies `r`, produced by attempt `attempt` of `job`; on error nothing was installed and
/// the caller discards the outputs.
pub fn verify_result(
    job: &RemoteJob,
    attempt: u32,
    r: &CompactionResult,
    tables: &TableCache,
    level: VerifyLevel,
) -> Result<()> {
    check_shape(job, attempt, r)?;
    for f in r.outputs.iter().chain(&r.fast_outputs) {
        if let Err(e) = check_table(f, tables, level == VerifyLevel::Full) {
            tables.evict(f.id);
            return Err(e);
        }
    }
    Ok(())
}

fn bad(m: String) -> Error {
    Error::corruption(format!("remote compaction result: {m}"))
}

/// The checks that need no I/O.
pub(crate) fn check_shape(job: &RemoteJob, attempt: u32, r: &CompactionResult) -> Result<()> {
    let ids = job.attempt_ids(attempt)?;
    let j = &job.job;
    let mut seen = HashSet::new();
    for (f, tier) in r
        .outputs
        .iter()
        .map(|f| (f, j.output_tier))
        .chain(r.fast_outputs.iter().map(|f| (f, Tier::Fast)))
    {
        if !ids.contains(&f.id) {
            return Err(bad(format!(
                "table {} is outside attempt {attempt}'s numbers {ids:?}",
                f.id
            )));
        }
        if !seen.insert(f.id) {
            return Err(bad(format!("table {} appears twice", f.id)));
        }
        if f.tier != tier {
            return Err(bad(format!(
                "table {} is on the {:?} tier, not {tier:?}",
                f.id, f.tier
            )));
        }
        if f.smallest > f.largest || f.size == 0 {
            return Err(bad(format!(
                "table {} has an empty or inverted range",
                f.id
            )));
        }
    }
    if !r.fast_outputs.is_empty() && j.route.is_none() {
        return Err(bad(
            "fast-tier outputs from a job without hot routing".into()
        ));
    }
    for stream in [&r.outputs, &r.fast_outputs] {
        for w in stream.windows(2) {
            let ordered = if w[0].largest_exclusive {
                w[0].largest <= w[1].smallest
            } else {
                w[0].largest < w[1].smallest
            };
            if !ordered {
                return Err(bad(format!(
                    "tables {} and {} overlap or are out of order",
                    w[0].id, w[1].id
                )));
            }
        }
    }
    // Inside the inputs' key range (promoted records come from inside it too).
    let lo = j
        .inputs
        .iter()
        .flat_map(|i| &i.files)
        .map(|f| f.smallest.as_slice())
        .chain(j.promoted.iter().map(|p| p.key.as_slice()))
        .min();
    let hi = j
        .inputs
        .iter()
        .flat_map(|i| &i.files)
        .map(|f| f.largest.as_slice())
        .chain(j.promoted.iter().map(|p| p.key.as_slice()))
        .max();
    if let (Some(lo), Some(hi)) = (lo, hi) {
        for f in r.outputs.iter().chain(&r.fast_outputs) {
            if f.smallest.as_slice() < lo || f.largest.as_slice() > hi {
                return Err(bad(format!(
                    "table {} lies outside the inputs' key range",
                    f.id
                )));
            }
        }
    }
    // Every record read was written or dropped.
    let entries: u64 = r
        .outputs
        .iter()
        .chain(&r.fast_outputs)
        .map(|f| f.num_entries)
        .sum();
    let available: u64 = j
        .inputs
        .iter()
        .flat_map(|i| &i.files)
        .map(|f| f.num_entries)
        .sum::<u64>()
        + j.promoted.len() as u64;
    // The executor reads every input record (and every promoted copy) exactly once.
    if r.records_in != available
        || r.records_dropped > r.records_in
        || entries != r.records_in - r.records_dropped
    {
        return Err(bad(format!(
            "record counts do not add up: {} read of {available}, {} dropped, {entries} written",
            r.records_in, r.records_dropped
        )));
    }
    // No output record is newer (or older) than every input record.
    let seqs = j
        .inputs
        .iter()
        .flat_map(|i| &i.files)
        .flat_map(|f| [f.smallest_seq, f.largest_seq])
        .chain(j.promoted.iter().map(|p| p.seq));
    let (lo_seq, hi_seq) = seqs.fold((u64::MAX, 0), |(l, h), s| (l.min(s), h.max(s)));
    for f in r.outputs.iter().chain(&r.fast_outputs) {
        if f.num_entries > 0 && (f.smallest_seq < lo_seq || f.largest_seq > hi_seq) {
            return Err(bad(format!(
                "table {} holds sequence numbers {}..={} outside the inputs' {lo_seq}..={hi_seq}",
                f.id, f.smallest_seq, f.largest_seq
            )));
        }
    }
    Ok(())
}

fn check_table(f: &FileMeta, tables: &TableCache, full: bool) -> Result<()> {
    if f.tier == Tier::Fast {
        let actual = tables.store().open(f.id, f.tier, f.size)?.size();
        if actual != f.size {
            return Err(bad(format!(
                "table {} is {actual} bytes, {} claimed",
                f.id, f.size
            )));
        }
    }
    let t = tables.get(f)?;
    let p = t.properties();
    let claimed = (
        f.num_entries,
        f.num_deletions,
        f.num_range_deletions,
        f.smallest_seq,
        f.largest_seq,
    );
    let actual = (
        p.num_entries,
        p.num_deletions,
        p.num_range_deletions,
        p.smallest_seq,
        p.largest_seq,
    );
    if claimed != actual {
        return Err(bad(format!(
            "table {}: metadata (entries, deletions, range deletions, seqs) {claimed:?} but the file says {actual:?}",
            f.id
        )));
    }
    // A full pass reads like a scan; the metadata check reads two blocks, each on its own
    // (a scan's readahead would fetch megabytes of a capacity table for them).
    let mut it = t.iter(!full);
    let in_range = |k: &[u8]| {
        k >= f.smallest.as_slice()
            && (k < f.largest.as_slice() || (!f.largest_exclusive && k == f.largest.as_slice()))
    };
    let exact = f.num_range_deletions == 0;
    let mut first: Option<Vec<u8>> = None;
    let mut last: Option<Vec<u8>> = None;
    if full {
        let mut n = 0u64;
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            let k = it.key();
            if prev
                .as_deref()
                .is_some_and(|p| types::compare_internal(p, k).is_ge())
            {
                return Err(bad(format!("table {}: keys out of order", f.id)));
            }
            prev = Some(k.to_vec());
            if first.is_none() {
                first = Some(types::user_key(k).to_vec());
            }
            n += 1;
            it.next();
        }
        it.status()?;
        last = prev.map(|k| types::user_key(&k).to_vec());
        if n != f.num_entries {
            return Err(bad(format!(
                "table {}: {n} entries read, {} claimed",
                f.id, f.num_entries
            )));
        }
    } else if f.num_entries > 0 {
        it.seek_to_first();
        if it.valid() {
            first = Some(types::user_key(it.key()).to_vec());
        }
        it.status()?;
        it.seek_to_last();
        if it.valid() {
            last = Some(types::user_key(it.key()).to_vec());
        }
        it.status()?;
    }
    if f.num_entries > 0 && (first.is_none() || last.is_none()) {
        return Err(bad(format!("table {}: claims entries but has none", f.id)));
    }
    for (what, k, bound) in [("first", &first, &f.smallest), ("last", &last, &f.largest)] {
        if let Some(k) = k {
            if !in_range(k) || (exact && k != bound) {
                return Err(bad(format!(
                    "table {}: {what} key does not match its metadata range",
                    f.id
                )));
            }
        }
    }
    Ok(())
}
