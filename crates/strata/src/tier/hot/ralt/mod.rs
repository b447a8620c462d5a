//! RALT, the Recent Access Lookup Table of HotRAP (§3.2, §3.7): a small LSM of access records
//! on the fast tier that scores key accesses and tells the engine which keys are hot.
//!
//! Owns [`Ralt`] (the handle the engine calls), its options and stats, and its directory
//! (`STATE` + `NNNNNN.ralt` runs, `docs/format.md` "RALT files"). Files: `record` (record
//! encoding, score and counter math), `run` (a sorted run and its in-memory index), `merge`
//! (k-way merge), `shape` (which runs to merge), `threshold` (sampled eviction thresholds),
//! `tuning` (Algorithm 1 limits), `manifest` (the state file), `options`.
//!
//! **What "hot" means.** At tick `now`, a record is a *candidate* when its real score is at
//! least the hot-set threshold decayed to `now` (ties split by key hash, see `threshold`); the
//! threshold is 0 — everything is a candidate — until an eviction sets one. Without auto-tune a
//! candidate is hot. With auto-tune a candidate is hot only if it is also *stable* (Algorithm
//! 1: accessed again after its first access, counter not decayed to 0): unstable records are
//! exactly what the next eviction drops first, so they are never reported hot. The hot-set
//! limit is enforced on the HotRAP bytes of all candidates (stable or not), which is what makes
//! `limit = stable + D` leave room for D bytes of unstable records. Hotness is decided when a
//! run is written (flush, merge, eviction) and kept in the run; with auto-tune every run is
//! rewritten once per decay period so decayed counters show.
//!
//! **Concurrency.** `record_access` only appends to a mutex-protected buffer. Readers take an
//! `Arc` of the immutable run set under a read lock held for a pointer copy; `maintain` (one at
//! a time) builds new runs and swaps the `Arc`, so readers never wait for I/O.
//!
//! **Damage.** `open` never fails on bad bytes: a missing, unreadable or corrupt state or run
//! makes RALT start empty (`tracing::warn`, counted in `damaged_opens`). A failed `maintain`
//! leaves the previous state in place (the flushed buffer is counted as dropped).
//! Depends on `storage`, `sst::filter`, `coding`, `wal::mask_crc`, `error`; never on `db`.

mod manifest;
mod merge;
mod options;
mod record;
mod run;
mod shape;
mod threshold;
mod tuning;

#[cfg(test)]
mod tests;

/// RALT's on-disk codecs (run blocks, records, the state file), reachable from outside the
/// crate only so the fuzz targets (`crates/strata-fuzz`) can call the real decoders and
/// encoders. Not a stable API.
#[doc(hidden)]
pub mod codec {
    pub use super::manifest::{RunEntry, StateFile};
    pub use super::record::Record;
    pub use super::run::{decode_block, encode_block, Run, RunIter, RunWriter};
    pub use super::threshold::Threshold;
    pub use super::tuning::Limits;
}

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

pub use options::RaltOptions;

use crate::error::{Error, Result};
use crate::storage::Storage;
use manifest::{RunEntry, StateFile};
use merge::{sort_and_merge, MergeIter};
use record::{Decay, Record, FLAG_CANDIDATE, FLAG_HOT, FLAG_STABLE};
use run::{Run, RunWriter};
use threshold::{pick, sample_positions, Sampler, Threshold};
use tuning::{eviction_target, rescale, tune, Limits, TuningParams};

const STATE_FILE: &str = "STATE";
const STATE_TMP: &str = "STATE.tmp";
const RUN_SUFFIX: &str = ".ralt";
/// Samples per threshold (§3.2, Figure 4): about ±3% error on the kept share.
const THRESHOLD_SAMPLES: usize = 1024;
/// Estimated in-memory bytes of a buffered access besides its key.
const BUFFERED_OVERHEAD: usize = std::mem::size_of::<Record>();

/// Counters and sizes, for `Db::stats()` and `strata inspect`. Sizes summed over runs count a
/// key once per run holding it (exact right after a full merge).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct RaltStats {
    /// The fast-tier size the auto-tuned limits' bounds are scaled to
    /// ([`Ralt::set_fast_tier_bytes`]; 0 until the engine sets it, or with fixed limits).
    pub fast_tier_bytes: u64,
    /// Bytes of RALT's run files.
    pub physical_bytes: u64,
    /// HotRAP bytes of hot records.
    pub hot_set_bytes: u64,
    /// HotRAP bytes of candidates (what the hot-set limit is enforced on).
    pub candidate_bytes: u64,
    /// Current limit on the HotRAP bytes of candidates (tuned after each eviction under
    /// auto-tune).
    pub hot_set_limit: u64,
    /// Current limit on the bytes of RALT's run files.
    pub physical_limit: u64,
    /// Access records in the runs (a key counts once per run holding it).
    pub records: u64,
    /// Live runs.
    pub runs: u64,
    /// Access-buffer flushes into a new run since RALT opened.
    pub flushes: u64,
    /// Run merges since RALT opened (full rewrites and evictions included).
    pub merges: u64,
    /// Evictions since RALT opened: full rewrites that dropped records because a limit was
    /// exceeded.
    pub evictions: u64,
    /// Records dropped by evictions since RALT opened.
    pub evicted_records: u64,
    /// Accesses dropped because maintenance lagged (or a flush failed).
    pub dropped_accesses: u64,
    /// Accesses recorded since RALT opened (dropped ones included).
    pub accesses: u64,
    /// Times `open` found damage and started empty.
    pub damaged_opens: u64,
}

/// The immutable view readers use.
struct State {
    /// Newest first.
    runs: Vec<Arc<Run>>,
    threshold_tick: u64,
    hot: Threshold,
    limits: Limits,
}

impl State {
    fn candidate_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.totals.candidate).sum()
    }
    fn physical_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.size).sum()
    }
}

#[derive(Default)]
struct Buffer {
    recs: Vec<Record>,
    bytes: usize,
}

#[derive(Default)]
struct Counters {
    flushes: AtomicU64,
    merges: AtomicU64,
    evictions: AtomicU64,
    evicted_records: AtomicU64,
    dropped: AtomicU64,
    accesses: AtomicU64,
    damaged_opens: AtomicU64,
}

/// The Recent Access Lookup Table. `Send + Sync`; all methods take `&self`.
pub struct Ralt {
    storage: Arc<dyn Storage>,
    opts: RaltOptions,
    decay: Decay,
    /// Accessed HotRAP bytes so far: the clock of scores and counters.
    clock: AtomicU64,
    buffer: Mutex<Buffer>,
    state: RwLock<Arc<State>>,
    /// Serializes `maintain`; holds the next run id.
    maint: Mutex<u64>,
    /// Decay epoch at which all runs were last rewritten (auto-tune refresh).
    refreshed_epoch: AtomicU64,
    /// Algorithm 1's bounds: from the options at open, rescaled by `set_fast_tier_bytes`.
    bounds: Mutex<TuningParams>,
    /// The fast-tier size `bounds` were last scaled to (0: the options').
    scaled_to: AtomicU64,
    counters: Counters,
}

/// The flags a record gets when written at `now` (the definition of hot; see the module doc).
fn classify(r: &Record, now: u64, d: &Decay, thr_tick: u64, thr: Threshold, auto_tune: bool) -> u8 {
    let score = d.score_at(r.score, r.tick, now);
    let t = Threshold {
        score: d.score_at(thr.score, thr_tick, now),
        tie_keep: thr.tie_keep,
    };
    let candidate = t.keeps(score, &r.key);
    let hot = candidate && (!auto_tune || r.is_stable(d, now));
    (r.flags & FLAG_STABLE)
        | if candidate { FLAG_CANDIDATE } else { 0 }
        | if hot { FLAG_HOT } else { 0 }
}

/// Algorithm 1's bounds as `o` sets them, for a RALT whose access buffer is `buffer_bytes`
/// (the physical limit never falls below two buffers, so a tiny hot set does not make every
/// flush evict).
fn bounds(o: &RaltOptions, buffer_bytes: usize) -> TuningParams {
    TuningParams {
        min_hot_set: o.min_hot_set_limit,
        max_hot_set: o.max_hot_set_limit,
        max_unstable: o.max_unstable_bytes,
        min_physical: 2 * buffer_bytes as u64,
    }
}

/// Conservative file size of a run holding `record_bytes` of encoded records.
fn file_estimate(record_bytes: u64, block_bytes: usize) -> u64 {
    5 + record_bytes + 12 * record_bytes.div_ceil(block_bytes.max(64) as u64)
}

/// What one maintenance pass builds before it is published.
struct Work {
    runs: Vec<Arc<Run>>,
    threshold_tick: u64,
    hot: Threshold,
    limits: Limits,
    created: Vec<PathBuf>,
    obsolete: Vec<Arc<Run>>,
    changed: bool,
}

/// Totals of a full scan (pass A of an eviction).
#[derive(Default)]
struct ScanTotals {
    candidate_all: u64,
    record_bytes_all: u64,
    survivor_hotrap: u64,
    survivor_record_bytes: u64,
}

impl Ralt {
    /// Opens RALT in `opts.dir`, reloading its runs if a valid state exists. Only I/O errors
    /// creating the directory and invalid options are errors; damage starts empty.
    pub fn open(storage: Arc<dyn Storage>, opts: RaltOptions) -> Result<Ralt> {
        opts.validate()?;
        storage.create_dir_all(&opts.dir)?;
        let decay = Decay {
            alpha: opts.alpha,
            tick_bytes: opts.tick_bytes,
            decay_period_bytes: opts.decay_period_bytes,
        };
        let empty = State {
            runs: Vec::new(),
            threshold_tick: 0,
            hot: Threshold::NONE,
            limits: Limits {
                hot_set: opts.hot_set_limit,
                physical: opts.physical_limit,
            },
        };
        let ralt = Ralt {
            storage,
            decay,
            clock: AtomicU64::new(0),
            buffer: Mutex::new(Buffer::default()),
            state: RwLock::new(Arc::new(empty)),
            maint: Mutex::new(1),
            refreshed_epoch: AtomicU64::new(0),
            bounds: Mutex::new(bounds(&opts, opts.buffer_bytes)),
            scaled_to: AtomicU64::new(0),
            counters: Counters::default(),
            opts,
        };
        let damaged = match ralt.load() {
            Ok(()) => false,
            Err(e) => {
                tracing::warn!(dir = %ralt.opts.dir.display(), error = %e,
                    "RALT state is damaged; starting with an empty access table");
                ralt.counters.damaged_opens.fetch_add(1, Relaxed);
                true
            }
        };
        ralt.collect_garbage(damaged);
        let epoch = ralt.decay.epoch(ralt.now_tick());
        ralt.refreshed_epoch.store(epoch, Relaxed);
        Ok(ralt)
    }

    fn run_path(&self, id: u64) -> PathBuf {
        self.opts.dir.join(format!("{id:06}{RUN_SUFFIX}"))
    }

    fn load(&self) -> Result<()> {
        let path = self.opts.dir.join(STATE_FILE);
        if !self.storage.exists(&path)? {
            return Ok(());
        }
        let sf = StateFile::decode(&self.storage.read_all(&path)?)?;
        let mut runs = Vec::with_capacity(sf.runs.len());
        for e in &sf.runs {
            let run = Run::load(&*self.storage, &self.run_path(e.id), e.id)?;
            if run.size != e.size || run.totals.records != e.records {
                return Err(Error::corruption(format!(
                    "RALT run {}: {} bytes / {} records, state says {} / {}",
                    e.id, run.size, run.totals.records, e.size, e.records
                )));
            }
            runs.push(Arc::new(run));
        }
        let limits = if self.opts.auto_tune {
            sf.limits
        } else {
            Limits {
                hot_set: self.opts.hot_set_limit,
                physical: self.opts.physical_limit,
            }
        };
        self.clock.store(sf.clock, Relaxed);
        *self.maint.lock() = sf.next_run_id;
        *self.state.write() = Arc::new(State {
            runs,
            threshold_tick: sf.threshold_tick,
            hot: sf.hot_threshold,
            limits,
        });
        Ok(())
    }

    /// Removes `STATE.tmp` and run files the state does not name (all of them after damage,
    /// and the damaged state itself). Best effort.
    fn collect_garbage(&self, damaged: bool) {
        let live: Vec<u64> = self.current().runs.iter().map(|r| r.id).collect();
        let Ok(names) = self.storage.list(&self.opts.dir) else {
            return;
        };
        for name in names {
            let dead = match name.strip_suffix(RUN_SUFFIX) {
                Some(stem) => stem.parse::<u64>().map_or(true, |id| !live.contains(&id)),
                None => name == STATE_TMP || (damaged && name == STATE_FILE),
            };
            if dead {
                let _ = self.storage.remove(&self.opts.dir.join(&name));
            }
        }
    }

    fn current(&self) -> Arc<State> {
        self.state.read().clone()
    }

    fn now_tick(&self) -> u64 {
        self.clock.load(Relaxed) / self.opts.tick_bytes
    }

    /// Records an access to `key` whose value is `value_size` bytes. Never does I/O; drops the
    /// access (counted) when maintenance lags by more than 4 buffers.
    pub fn record_access(&self, key: &[u8], value_size: u32) {
        let size = key.len() as u64 + value_size as u64;
        let before = self.clock.fetch_add(size, Relaxed);
        self.counters.accesses.fetch_add(1, Relaxed);
        let rec = Record::first_access(key, value_size, before / self.opts.tick_bytes);
        let mut b = self.buffer.lock();
        if b.bytes >= 4 * self.opts.buffer_bytes {
            drop(b);
            self.counters.dropped.fetch_add(1, Relaxed);
            return;
        }
        b.bytes += key.len() + BUFFERED_OVERHEAD;
        b.recs.push(rec);
    }

    /// Whether [`Ralt::maintain`] has work: a full buffer, a limit exceeded, or (auto-tune) a
    /// decay period passed since the runs were last rewritten.
    pub fn needs_maintenance(&self) -> bool {
        if self.buffer.lock().bytes >= self.opts.buffer_bytes {
            return true;
        }
        let s = self.current();
        if s.candidate_bytes() > s.limits.hot_set || s.physical_bytes() > s.limits.physical {
            return true;
        }
        self.opts.auto_tune
            && !s.runs.is_empty()
            && self.decay.epoch(self.now_tick()) > self.refreshed_epoch.load(Relaxed)
    }

    /// Flushes the buffer into a new run, merges runs (`shape`), and when a limit is exceeded
    /// merges everything into one run while evicting (§3.2, with Algorithm 1's unstable-first
    /// order and limit update under auto-tune). Publishes the result atomically.
    pub fn maintain(&self) -> Result<()> {
        let mut next_id = self.maint.lock();
        let cur = self.current();
        let mut w = Work {
            runs: cur.runs.clone(),
            threshold_tick: cur.threshold_tick,
            hot: cur.hot,
            limits: cur.limits,
            created: Vec::new(),
            obsolete: Vec::new(),
            changed: false,
        };
        let now = self.now_tick();
        let taken = {
            let mut b = self.buffer.lock();
            b.bytes = 0;
            std::mem::take(&mut b.recs)
        };
        let n_taken = taken.len() as u64;
        let result = self.maintain_inner(&mut next_id, &mut w, now, taken);
        if let Err(e) = result {
            for p in &w.created {
                let _ = self.storage.remove(p);
            }
            self.counters.dropped.fetch_add(n_taken, Relaxed);
            return Err(e);
        }
        if w.changed {
            *self.state.write() = Arc::new(State {
                runs: w.runs,
                threshold_tick: w.threshold_tick,
                hot: w.hot,
                limits: w.limits,
            });
            for r in &w.obsolete {
                let _ = self.storage.remove(&r.path);
            }
        }
        Ok(())
    }

    fn maintain_inner(
        &self,
        next_id: &mut u64,
        w: &mut Work,
        now: u64,
        taken: Vec<Record>,
    ) -> Result<()> {
        if !taken.is_empty() {
            let recs = sort_and_merge(taken, &self.decay);
            let mut it = recs.into_iter().map(Ok);
            if let Some(run) = self.write_run(next_id, w, now, &mut it)? {
                w.runs.insert(0, run);
            }
            self.counters.flushes.fetch_add(1, Relaxed);
            w.changed = true;
        }
        loop {
            let sizes: Vec<u64> = w.runs.iter().map(|r| r.size).collect();
            let Some(n) = shape::pick_merge(&sizes, self.opts.buffer_bytes as u64) else {
                break;
            };
            let inputs: Vec<Arc<Run>> = w.runs.drain(..n).collect();
            let mut m = MergeIter::new(&inputs, self.decay)?;
            let mut it = std::iter::from_fn(|| m.next_record().transpose());
            if let Some(run) = self.write_run(next_id, w, now, &mut it)? {
                w.runs.insert(0, run);
            }
            w.obsolete.extend(inputs);
            self.counters.merges.fetch_add(1, Relaxed);
            w.changed = true;
        }
        let candidate: u64 = w.runs.iter().map(|r| r.totals.candidate).sum();
        let physical: u64 = w.runs.iter().map(|r| r.size).sum();
        let epoch = self.decay.epoch(now);
        let refresh =
            self.opts.auto_tune && !w.runs.is_empty() && epoch > self.refreshed_epoch.load(Relaxed);
        if candidate > w.limits.hot_set || physical > w.limits.physical || refresh {
            self.rewrite_all(next_id, w, now)?;
            self.refreshed_epoch.store(epoch, Relaxed);
        }
        if w.changed {
            self.persist(*next_id, w)?;
        }
        Ok(())
    }

    /// Writes `records` (sorted, unique keys) as a new run, classifying each with the work's
    /// threshold at `now`. `None` if there were no records.
    fn write_run(
        &self,
        next_id: &mut u64,
        w: &mut Work,
        now: u64,
        records: &mut dyn Iterator<Item = Result<Record>>,
    ) -> Result<Option<Arc<Run>>> {
        let id = *next_id;
        *next_id += 1;
        let path = self.run_path(id);
        w.created.push(path.clone());
        let mut wr = RunWriter::create(&*self.storage, &path, id, self.opts.block_bytes)?;
        for r in records {
            let mut r = r?;
            r.flags = classify(
                &r,
                now,
                &self.decay,
                w.threshold_tick,
                w.hot,
                self.opts.auto_tune,
            );
            wr.add(&r)?;
        }
        let run = wr.finish(&*self.storage)?;
        if run.totals.records == 0 {
            self.storage.remove(&path)?;
            return Ok(None);
        }
        Ok(Some(Arc::new(run)))
    }

    /// Merges all runs into one, evicting if the exact sizes exceed a limit (§3.2 + §3.7):
    /// pass A totals, pass B samples thresholds (only if still over after dropping unstable
    /// records), pass C writes.
    fn rewrite_all(&self, next_id: &mut u64, w: &mut Work, now: u64) -> Result<()> {
        let d = self.decay;
        let auto = self.opts.auto_tune;
        let bb = self.opts.block_bytes;
        let inputs = std::mem::take(&mut w.runs);
        let old_thr = Threshold {
            score: d.score_at(w.hot.score, w.threshold_tick, now),
            tie_keep: w.hot.tie_keep,
        };
        // Pass A.
        let mut t = ScanTotals::default();
        let mut m = MergeIter::new(&inputs, d)?;
        while let Some(r) = m.next_record()? {
            let (hs, rb) = (r.hotrap_size(), r.encoded_len() as u64);
            if old_thr.keeps(d.score_at(r.score, r.tick, now), &r.key) {
                t.candidate_all += hs;
            }
            t.record_bytes_all += rb;
            if !auto || r.is_stable(&d, now) {
                t.survivor_hotrap += hs;
                t.survivor_record_bytes += rb;
            }
        }
        let evict = t.candidate_all > w.limits.hot_set
            || file_estimate(t.record_bytes_all, bb) > w.limits.physical;
        let mut keep = Threshold::NONE;
        if evict {
            // Phase 2 (score thresholds) on what phase 1 (unstable records) leaves.
            let hot_target = eviction_target(t.survivor_hotrap, w.limits.hot_set);
            let phys_file = file_estimate(t.survivor_record_bytes, bb);
            let phys_target = eviction_target(phys_file, w.limits.physical).map(|f| {
                (f as f64 * t.survivor_record_bytes as f64 / phys_file.max(1) as f64) as u64
            });
            let mut hot_thr = Threshold::NONE;
            if hot_target.is_some() || phys_target.is_some() {
                let seed = now ^ 0x5241_4c54;
                let mut hs =
                    Sampler::new(sample_positions(t.survivor_hotrap, THRESHOLD_SAMPLES, seed));
                let mut ps = Sampler::new(sample_positions(
                    t.survivor_record_bytes,
                    THRESHOLD_SAMPLES,
                    seed.rotate_left(17),
                ));
                let mut m = MergeIter::new(&inputs, d)?;
                while let Some(r) = m.next_record()? {
                    if auto && !r.is_stable(&d, now) {
                        continue;
                    }
                    let score = d.score_at(r.score, r.tick, now);
                    hs.offer(r.hotrap_size(), score);
                    ps.offer(r.encoded_len() as u64, score);
                }
                if let Some(target) = hot_target {
                    hot_thr = pick(hs.scores(), t.survivor_hotrap, target);
                }
                if let Some(target) = phys_target {
                    keep = pick(ps.scores(), t.survivor_record_bytes, target);
                }
            }
            w.hot = hot_thr.max(keep);
            w.threshold_tick = now;
        }
        // Pass C.
        let mut dropped = 0u64;
        let mut m = MergeIter::new(&inputs, d)?;
        let mut it = std::iter::from_fn(|| loop {
            match m.next_record() {
                Ok(Some(r)) => {
                    let gone = evict
                        && ((auto && !r.is_stable(&d, now))
                            || !keep.keeps(d.score_at(r.score, r.tick, now), &r.key));
                    if gone {
                        dropped += 1;
                        continue;
                    }
                    return Some(Ok(r));
                }
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        });
        let out = self.write_run(next_id, w, now, &mut it)?;
        w.runs = out.into_iter().collect();
        w.obsolete.extend(inputs);
        w.changed = true;
        self.counters.merges.fetch_add(1, Relaxed);
        if evict {
            self.counters.evictions.fetch_add(1, Relaxed);
            self.counters.evicted_records.fetch_add(dropped, Relaxed);
            if auto {
                let (stable, hotrap, physical) = w
                    .runs
                    .first()
                    .map_or((0, 0, 0), |r| (r.totals.hotrap, r.totals.hotrap, r.size));
                let p = *self.bounds.lock();
                w.limits = tune(stable, hotrap, physical, w.limits, &p);
            }
        }
        Ok(())
    }

    fn persist(&self, next_id: u64, w: &Work) -> Result<()> {
        let sf = StateFile {
            clock: self.clock.load(Relaxed),
            next_run_id: next_id,
            threshold_tick: w.threshold_tick,
            hot_threshold: w.hot,
            limits: w.limits,
            runs: w
                .runs
                .iter()
                .map(|r| RunEntry {
                    id: r.id,
                    size: r.size,
                    records: r.totals.records,
                })
                .collect(),
        };
        let dir: &Path = &self.opts.dir;
        let tmp = dir.join(STATE_TMP);
        let mut f = self.storage.create(&tmp)?;
        f.append(&sf.encode())?;
        f.sync()?;
        drop(f);
        self.storage.rename(&tmp, &dir.join(STATE_FILE))?;
        self.storage.sync_dir(dir)
    }

    /// Whether `key` is hot: in-memory blooms of hot keys only (rare false positives; keys
    /// only in the unflushed buffer are not hot yet).
    pub fn is_hot(&self, key: &[u8]) -> bool {
        self.current().runs.iter().any(|r| r.may_be_hot(key))
    }

    /// HotRAP bytes of hot keys in `[lo, hi]` from the runs' prefix sums (no data-block I/O).
    /// Overestimates: the edge blocks of each run count whole, and a key in several runs counts
    /// once per run.
    pub fn hot_bytes_in_range(&self, lo: &[u8], hi: &[u8]) -> u64 {
        self.current()
            .runs
            .iter()
            .map(|r| r.hot_bytes_in_range(lo, hi))
            .sum()
    }

    /// Hot keys in `[lo, hi]`, sorted and deduplicated (reads the runs' blocks in range).
    pub fn hot_keys_in_range(&self, lo: &[u8], hi: &[u8]) -> Result<Vec<Vec<u8>>> {
        let s = self.current();
        let mut out = Vec::new();
        for r in &s.runs {
            r.hot_keys_in_range(lo, hi, &mut out)?;
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Rescales the auto-tuned limits' bounds (the hot-set limit's range and D, as
    /// [`RaltOptions::for_fast_tier`] derives them) to a fast tier of `fast_tier_bytes`, and
    /// clamps the current limits into them at once (the physical limit keeps its ratio to the
    /// hot-set limit). The engine calls it as the fast tier grows or shrinks: with relative
    /// placement and no budget, the fast tier is what the tree's fast levels may hold, which
    /// follows the data. The decay period and tick stay as opened (stored scores count in
    /// ticks). No effect without auto-tune (the limits are the caller's).
    pub fn set_fast_tier_bytes(&self, fast_tier_bytes: u64) {
        if !self.opts.auto_tune {
            return;
        }
        let p = bounds(
            &RaltOptions::for_fast_tier(PathBuf::new(), fast_tier_bytes),
            self.opts.buffer_bytes,
        );
        // Serialized with `maintain`, which publishes limits too.
        let _maint = self.maint.lock();
        *self.bounds.lock() = p;
        self.scaled_to.store(fast_tier_bytes, Relaxed);
        let cur = self.current();
        let limits = rescale(cur.limits, &p);
        if limits != cur.limits {
            *self.state.write() = Arc::new(State {
                runs: cur.runs.clone(),
                threshold_tick: cur.threshold_tick,
                hot: cur.hot,
                limits,
            });
        }
    }

    /// The current sizes and limits, and the counters since RALT opened.
    pub fn stats(&self) -> RaltStats {
        let s = self.current();
        let c = &self.counters;
        RaltStats {
            fast_tier_bytes: self.scaled_to.load(Relaxed),
            physical_bytes: s.physical_bytes(),
            hot_set_bytes: s.runs.iter().map(|r| r.totals.hot).sum(),
            candidate_bytes: s.candidate_bytes(),
            hot_set_limit: s.limits.hot_set,
            physical_limit: s.limits.physical,
            records: s.runs.iter().map(|r| r.totals.records).sum(),
            runs: s.runs.len() as u64,
            flushes: c.flushes.load(Relaxed),
            merges: c.merges.load(Relaxed),
            evictions: c.evictions.load(Relaxed),
            evicted_records: c.evicted_records.load(Relaxed),
            dropped_accesses: c.dropped.load(Relaxed),
            accesses: c.accesses.load(Relaxed),
            damaged_opens: c.damaged_opens.load(Relaxed),
        }
    }
}
