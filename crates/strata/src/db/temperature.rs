//! LogStore's run-time side: the ticker that decays table temperatures, samples the read rate
//! (deferring compaction while reads are rare) and measures the tiers' costs; the side file
//! that keeps temperatures across restarts; inheritance when compaction replaces tables; and
//! the [`TemperatureSnapshot`] a picker gets.
//!
//! The decisions themselves are pure (`compaction::logstore`, `tier::temperature`); this file
//! only feeds them. Reads count into `TableFile::temperature` in `db/read.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::family::Family;
use super::{DbInner, DbState};
use crate::compaction::{CompactionReason, CompactionResult, Pick};
use crate::error::Result;
use crate::tier::temperature::{
    self, decay_factor, file, inherit::inherit, LogStoreOptions, TemperatureSnapshot, TierCosts,
};
use crate::tier::Tier;
use crate::version::{FileMeta, TableFile, Version};

/// LogStore's shared state, present when `placement_policy = logstore`.
pub(crate) struct LogStore {
    pub opts: LogStoreOptions,
    pub deferring: AtomicBool,
    /// Callers waiting for compactions (`Db::wait_for_compactions`): deferral is suspended.
    settling: Arc<AtomicU64>,
    costs: Mutex<TierCosts>,
    /// `(gets, keys written)` at the last tick.
    last: Mutex<(u64, u64)>,
    pub counters: LogStoreCounters,
}

/// LogStore's counters (reported in `DbStats::logstore`).
#[derive(Default)]
pub(crate) struct LogStoreCounters {
    pub informed: AtomicU64,
    pub reverse: AtomicU64,
    pub reverse_bytes: AtomicU64,
    pub staging: AtomicU64,
    pub staging_bytes: AtomicU64,
    pub deferred_ticks: AtomicU64,
    pub ticks: AtomicU64,
    pub side_file_errors: AtomicU64,
}

/// Suspends deferral while it lives (see [`LogStore::settle`]).
pub(crate) struct Settling(Arc<AtomicU64>);

impl Drop for Settling {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

impl LogStore {
    /// Suspends deferral until the guard is dropped.
    pub(crate) fn settle(&self) -> Settling {
        self.settling.fetch_add(1, Relaxed);
        Settling(self.settling.clone())
    }

    /// Compaction is deferred now.
    pub(crate) fn deferring(&self) -> bool {
        self.deferring.load(Relaxed) && self.settling.load(Relaxed) == 0
    }

    /// Whether the fast tier, holding `l0` tables in L0 and `fast_bytes` in all, buffers L0
    /// now: compaction is deferred and neither deferral limit reached (the bytes, and
    /// [`l0_ceiling`] tables, which bounds what a read searches once reads return), so L0's
    /// tables wait uncompacted and do not stall writes. The picker applies the same limits
    /// ([`snapshot`]) and counts the outputs of running compactions into the bytes too, so it
    /// may resume compacting a little before writers count L0 again, never after.
    pub(crate) fn buffers_l0(&self, o: &crate::Options, l0: usize, fast_bytes: u64) -> bool {
        self.deferring() && l0 < l0_ceiling(o) && fast_bytes < defer_fast_bytes(o, &self.opts)
    }

    pub(crate) fn new(opts: LogStoreOptions) -> Self {
        LogStore {
            costs: Mutex::new(opts.costs.unwrap_or_default()),
            opts,
            deferring: AtomicBool::new(false),
            settling: Arc::default(),
            last: Mutex::new((0, 0)),
            counters: LogStoreCounters::default(),
        }
    }
}

/// Fast-tier bytes deferred compaction may fill: the option, else twice the fast-tier
/// budget, else 1 GiB.
fn defer_fast_bytes(o: &crate::Options, l: &LogStoreOptions) -> u64 {
    l.defer_fast_bytes
        .or(o.fast_tier_budget.map(|b| b.saturating_mul(2)))
        .unwrap_or(1 << 30)
}

/// L0 tables beyond which deferral ends whatever their bytes: four times the stop trigger.
fn l0_ceiling(o: &crate::Options) -> usize {
    o.level0_stop_writes_trigger.saturating_mul(4)
}

/// The picker's view of temperatures of a family with options `o`, under the database lock.
pub(crate) fn snapshot(o: &crate::Options, ls: &LogStore, v: &Version) -> TemperatureSnapshot {
    TemperatureSnapshot {
        by_table: v
            .all_files()
            .map(|f| {
                let t = &f.temperature;
                (f.id, (t.get(), t.own(), t.rate()))
            })
            .collect(),
        costs: *ls.costs.lock(),
        deferring: ls.deferring() && v.levels[0].num_files() < l0_ceiling(o),
        defer_fast_bytes: defer_fast_bytes(o, &ls.opts),
        cold_fraction: ls.opts.cold_fraction,
        reverse_margin: ls.opts.reverse_margin,
        fast_budget: o.fast_tier_budget,
    }
}

/// The column families placed by LogStore, with their current trees (under the database
/// lock). Table ids are unique across families, so one side file holds them all.
fn logstore_trees(st: &DbState) -> Vec<(Arc<Family>, Arc<Version>)> {
    st.families
        .values()
        .filter(|fs| fs.handle.logstore.is_some())
        .filter_map(|fs| {
            let v = st.versions.current_of(fs.handle.id)?;
            Some((fs.handle.clone(), v))
        })
        .collect()
}

/// Whether any column family is placed by LogStore.
pub(crate) fn any(inner: &DbInner) -> bool {
    inner.all_families().iter().any(|f| f.logstore.is_some())
}

/// Loads the side file's temperatures into the tables of every LogStore family (a missing or
/// damaged file only loses temperatures: it is reported and ignored).
pub(crate) fn load(inner: &DbInner) {
    let trees = logstore_trees(&inner.state.lock());
    if trees.is_empty() {
        return;
    }
    match file::read(inner.storage.as_ref(), &inner.dir) {
        Ok(None) => {}
        Ok(Some(m)) => {
            for (_, v) in &trees {
                for f in v.all_files() {
                    if let Some((t, own)) = m.get(&f.id) {
                        // The short-term count is not kept: estimated from the long-term one.
                        let o = &inner.opts.logstore;
                        let ratio =
                            o.rate_half_life.as_secs_f64() / o.half_life.as_secs_f64().max(1e-9);
                        f.temperature.restore(*t, *own, *t * ratio.min(1.0));
                    }
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "table temperatures lost"),
    }
}

/// Writes the temperatures of every LogStore family's tables to the side file.
pub(crate) fn save(inner: &DbInner) -> Result<()> {
    let trees = logstore_trees(&inner.state.lock());
    let all: Vec<file::Entry> = trees.iter().flat_map(|(_, v)| entries(v)).collect();
    file::write(inner.storage.as_ref(), &inner.dir, &all)
}

fn entries(v: &Version) -> Vec<file::Entry> {
    v.all_files()
        .map(|f| (f.id, f.temperature.get(), f.temperature.own()))
        .collect()
}

/// Gives the tables a compaction installed the temperatures of the tables it replaced.
pub(crate) fn inherit_into(
    st: &DbState,
    family: u32,
    inputs: &[&Arc<TableFile>],
    outputs: impl Iterator<Item = u64>,
) {
    let Some(v) = st.versions.current_of(family) else {
        return;
    };
    let ids: Vec<u64> = outputs.collect();
    let outs: Vec<&Arc<TableFile>> = v.all_files().filter(|f| ids.contains(&f.id)).collect();
    let ins: Vec<(&FileMeta, f64)> = inputs
        .iter()
        .map(|f| (&f.meta, f.temperature.get()))
        .collect();
    let metas: Vec<&FileMeta> = outs.iter().map(|f| &f.meta).collect();
    let rates: Vec<(&FileMeta, f64)> = inputs
        .iter()
        .map(|f| (&f.meta, f.temperature.rate()))
        .collect();
    let temps = inherit(&ins, &metas);
    for ((f, t), r) in outs.iter().zip(temps).zip(inherit(&rates, &metas)) {
        f.temperature.inherit(t, r);
    }
}

/// One tick of every LogStore family: decay, read-rate sample (deferral), cost measurement,
/// and (with `persist`) the side file.
pub(crate) fn tick(inner: &DbInner, factor: (f64, f64), persist: bool) {
    // Versions are held only under the database lock: a tick never keeps a table a
    // compaction made obsolete alive past the compaction's end (waiting for compactions then
    // finds its file deleted).
    let (families, entries) = {
        let st = inner.state.lock();
        let trees = logstore_trees(&st);
        for (_, v) in &trees {
            for f in v.all_files() {
                f.temperature.decay(factor.0, factor.1);
            }
        }
        let all: Vec<file::Entry> = if persist {
            trees.iter().flat_map(|(_, v)| entries(v)).collect()
        } else {
            Vec::new()
        };
        let families: Vec<Arc<Family>> = trees.into_iter().map(|(f, _)| f).collect();
        (families, all)
    };
    let gets = inner.stats.gets.load(Relaxed);
    let writes = inner.stats.keys_written.load(Relaxed);
    for fam in &families {
        let Some(ls) = fam.logstore.as_ref() else {
            continue;
        };
        let (dg, dw) = {
            let mut last = ls.last.lock();
            let d = (gets.saturating_sub(last.0), writes.saturating_sub(last.1));
            *last = (gets, writes);
            d
        };
        let ops = dg + dw;
        let defer = dw > 0 && (dg as f64) < ls.opts.defer_read_fraction * ops as f64;
        if ls.deferring.swap(defer, Relaxed) != defer {
            tracing::info!(
                family = %fam.name,
                deferring = defer,
                reads = dg,
                writes = dw,
                "LogStore deferral"
            );
            if !defer {
                // Reads are back: let the compaction threads catch up now.
                let _st = inner.state.lock();
                inner.bg_cv.notify_all();
            }
        }
        ls.counters.ticks.fetch_add(1, Relaxed);
        if defer {
            ls.counters.deferred_ticks.fetch_add(1, Relaxed);
        }
        *ls.costs.lock() = ls
            .opts
            .costs
            .unwrap_or_else(|| TierCosts::measured(&inner.stats.tier));
    }
    if !persist || families.is_empty() {
        return;
    }
    if let Err(e) = file::write(inner.storage.as_ref(), &inner.dir, &entries) {
        for ls in families.iter().filter_map(|f| f.logstore.as_ref()) {
            ls.counters.side_file_errors.fetch_add(1, Relaxed);
        }
        tracing::warn!(error = %e, "could not write table temperatures");
    }
}

/// Starts the ticker thread once a column family is placed by LogStore (at open, or when such
/// a family is created); one thread serves every such family. Idempotent.
pub(crate) fn start(inner: &Arc<DbInner>) {
    if !any(inner) || inner.temperature_ticker.swap(true, Relaxed) {
        return;
    }
    // Every family takes its LogStore options from the database's.
    let o = inner.opts.logstore.clone();
    let i = inner.clone();
    let every = o.tick.max(std::time::Duration::from_millis(10));
    let factor = (
        decay_factor(every, o.half_life),
        decay_factor(every, o.rate_half_life),
    );
    // The side file is written about every `persist_interval` (and at close).
    let persist_every = (o.persist_interval.as_secs_f64() / every.as_secs_f64())
        .ceil()
        .max(1.0) as u64;
    let handle = std::thread::Builder::new()
        .name("strata-temperature".into())
        .spawn(move || {
            let mut next = Instant::now() + every;
            let mut n = 0u64;
            while !i.shutting_down.load(std::sync::atomic::Ordering::Acquire) {
                {
                    let mut st = i.state.lock();
                    let now = Instant::now();
                    if now < next {
                        i.bg_cv.wait_for(&mut st, next - now);
                        continue;
                    }
                }
                next += every;
                n += 1;
                tick(&i, factor, n.is_multiple_of(persist_every));
            }
        })
        .expect("spawn temperature thread");
    inner.threads.lock().push(handle);
}

/// The per-level temperature histogram of `v` (tables per decade of reads).
pub(crate) fn histogram(v: &Version, level: usize) -> [u64; temperature::TEMPERATURE_BUCKETS] {
    let mut h = [0u64; temperature::TEMPERATURE_BUCKETS];
    for f in v.levels[level].files() {
        h[temperature::bucket_of(f.temperature.get())] += 1;
    }
    h
}

/// LogStore's figures for `DbStats`.
pub(crate) fn stats(ls: &LogStore) -> crate::stats::LogStoreStats {
    let c = &ls.counters;
    let k = *ls.costs.lock();
    crate::stats::LogStoreStats {
        informed_compactions: c.informed.load(Relaxed),
        reverse_compactions: c.reverse.load(Relaxed),
        reverse_bytes: c.reverse_bytes.load(Relaxed),
        staging_compactions: c.staging.load(Relaxed),
        staging_bytes: c.staging_bytes.load(Relaxed),
        deferring: ls.deferring.load(Relaxed),
        deferred_ticks: c.deferred_ticks.load(Relaxed),
        ticks: c.ticks.load(Relaxed),
        side_file_errors: c.side_file_errors.load(Relaxed),
        fast_seek_us: k.fast_seek * 1e6,
        capacity_seek_us: k.capacity_seek * 1e6,
        fast_mb_per_s: k.fast_bw / 1e6,
        capacity_mb_per_s: k.capacity_bw / 1e6,
    }
}

/// LogStore: the outputs of an installed job inherit its inputs' temperatures (a trivial move
/// keeps its table, and so its temperature), and the job is counted by kind.
pub(crate) fn count_installed(
    ls: &LogStore,
    family: u32,
    pick: &Pick,
    r: Option<&CompactionResult>,
    st: &DbState,
) {
    let inputs: Vec<&Arc<TableFile>> = pick.inputs.iter().flat_map(|(_, fs)| fs.iter()).collect();
    if let Some(r) = r {
        let outputs = r.outputs.iter().chain(&r.fast_outputs).map(|f| f.id);
        inherit_into(st, family, &inputs, outputs);
    }
    let bytes: u64 = inputs.iter().map(|f| f.size).sum();
    let c = &ls.counters;
    match pick.reason {
        CompactionReason::Reverse => {
            c.reverse.fetch_add(1, Relaxed);
            c.reverse_bytes.fetch_add(bytes, Relaxed);
        }
        CompactionReason::Staging => {
            c.staging.fetch_add(1, Relaxed);
            c.staging_bytes.fetch_add(bytes, Relaxed);
        }
        CompactionReason::LevelSize
            if pick.output_tier == Tier::Capacity && pick.inputs[0].1[0].tier == Tier::Fast =>
        {
            c.informed.fetch_add(1, Relaxed);
        }
        _ => {}
    }
}
