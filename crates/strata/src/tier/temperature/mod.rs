//! Table temperatures (LogStore §IV–V): how often each table's data answers reads, decayed
//! over time, and the tier cost model that turns those counts into compaction decisions.
//!
//! - [`Temperature`]: the per-table counter, lives on [`crate::version::TableFile`]. Reads
//!   increment an atomic; a periodic tick folds the increments into an exponentially decayed
//!   value (half-life [`LogStoreOptions::half_life`]). Only the tick and installation write the
//!   decayed part, so the read path is one relaxed `fetch_add`.
//! - [`inherit`]: when compaction replaces tables, the outputs inherit their inputs' counts by
//!   the share of each input's key range they cover (LogStore keeps access history across
//!   compactions so a range that was hot stays known as hot).
//! - [`cost`]: the measured seek time and bandwidth of each tier, and equations 10–11.
//! - [`file`]: the `TEMPERATURE` side file that carries counts across restarts.
//! - [`TemperatureSnapshot`]: the read-only data a picker gets (counts by table id, costs, the
//!   deferral state).
//!
//! Invariants: a temperature is finite and non-negative; inheritance never creates heat (the
//! outputs' sum is at most the inputs' sum). Depends on `version::FileMeta` only; never on `db`.

pub mod cost;
pub mod file;
pub mod inherit;

use std::collections::HashMap;
use std::sync::atomic::{
    fence, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::time::Duration;

pub use cost::TierCosts;

/// Where tables go: by level only, or also by temperature (LogStore).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PlacementPolicy {
    /// Placement by level alone (RocksMash's relative placement; HotRAP, when on, moves records).
    #[default]
    Static,
    /// LogStore: informed, reverse, deferred and staging compactions driven by table
    /// temperatures and the tier cost model.
    LogStore,
}

impl PlacementPolicy {
    /// The policy's name, as [`PlacementPolicy::parse`] accepts it: `"static"` or `"logstore"`.
    pub fn name(self) -> &'static str {
        match self {
            PlacementPolicy::Static => "static",
            PlacementPolicy::LogStore => "logstore",
        }
    }

    /// The policy named `s` (`"static"` or `"logstore"`); `None` for any other name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "static" => Some(PlacementPolicy::Static),
            "logstore" => Some(PlacementPolicy::LogStore),
            _ => None,
        }
    }
}

impl std::str::FromStr for PlacementPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PlacementPolicy::parse(s)
            .ok_or_else(|| format!("unknown placement policy {s:?} (expected static or logstore)"))
    }
}

/// LogStore tuning.
#[derive(Clone, Debug, PartialEq)]
pub struct LogStoreOptions {
    /// A table's read count halves over this long without reads. Default 120 s.
    pub half_life: Duration,
    /// Half-life of the short-term count that reverse compaction compares (how fast a hot
    /// range that moved is noticed: the long-term count of the old range would otherwise hold
    /// the fast tier for minutes). Default 5 s.
    pub rate_half_life: Duration,
    /// How often counts are decayed and the read rate sampled (how fast deferral reacts).
    /// Default 250 ms.
    pub tick: Duration,
    /// How often the `TEMPERATURE` side file is written (also at close). Default 10 s.
    pub persist_interval: Duration,
    /// Reverse compaction's first condition (§V-B): the hottest capacity table must be read more
    /// than this coldest fraction of the last fast level's tables. Default 0.1.
    pub cold_fraction: f64,
    /// ... by this factor at least (so tables that are all about as hot do not swap places
    /// back and forth, each swap costing two compactions). Default 2.
    pub reverse_margin: f64,
    /// Compaction is deferred (§V-C) while reads are below this fraction of operations (reads +
    /// written keys) over the last tick, and writes are happening. Default 0.05.
    pub defer_read_fraction: f64,
    /// Bytes the fast tier may fill in tables while compaction is deferred; compaction
    /// resumes beyond them (or beyond four times `level0_stop_writes_trigger` L0 tables).
    /// Until then L0's tables are neither compacted nor counted toward the L0 write stall
    /// triggers: the fast tier buffers the burst. The L0 compaction that follows takes every
    /// L0 table at once and holds its output beside its inputs, so the fast disk needs about
    /// twice this much headroom. `None`: twice the fast-tier budget if one is set, else 1 GiB.
    pub defer_fast_bytes: Option<u64>,
    /// Fixed cost-model inputs instead of the measured ones (a tier whose latency is known, or
    /// tests). Default `None`: measured.
    pub costs: Option<TierCosts>,
}

impl Default for LogStoreOptions {
    fn default() -> Self {
        LogStoreOptions {
            half_life: Duration::from_secs(120),
            rate_half_life: Duration::from_secs(5),
            tick: Duration::from_millis(250),
            persist_interval: Duration::from_secs(10),
            cold_fraction: 0.1,
            reverse_margin: 2.0,
            defer_read_fraction: 0.05,
            defer_fast_bytes: None,
            costs: None,
        }
    }
}

/// A table's decayed read count (its own reads plus what it inherited from the tables it
/// replaced), and apart from it the reads it answered itself that cost a storage read (not
/// served by the block cache): only those pay for moving the table.
#[derive(Debug, Default)]
pub struct Temperature {
    /// Reads since the last tick, and those of them that read storage.
    recent: AtomicU64,
    recent_io: AtomicU64,
    /// The decayed count up to the last tick, inherited part included (f64 bits).
    decayed: AtomicU64,
    /// The decayed count of the table's own storage-reading reads (f64 bits).
    io: AtomicU64,
    /// The count decayed with the short half-life (f64 bits): the recent read rate, which
    /// notices a hot range that moved in seconds.
    rate: AtomicU64,
    /// A sequence lock over the folding writers ([`Temperature::decay`],
    /// [`Temperature::restore`]): odd while one runs. Readers retry across it, so a count read
    /// while a tick moves `recent` into `decayed` is never short of the moved reads (the race
    /// made a table read 200 times report 197). `record` does not take part: increments are
    /// monotone and a reader sees each either in `recent` or, after the tick, in `decayed`.
    seq: AtomicU64,
}

fn clean(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v
    } else {
        0.0
    }
}

impl Temperature {
    /// One read answered by the table's data; `io`: it read storage (a block-cache miss).
    #[inline]
    pub fn record(&self, io: bool) {
        self.recent.fetch_add(1, Relaxed);
        if io {
            self.recent_io.fetch_add(1, Relaxed);
        }
    }

    /// The current count: decayed history (inherited included) plus reads since the last tick.
    pub fn get(&self) -> f64 {
        self.read(|| f64::from_bits(self.decayed.load(Relaxed)) + self.recent.load(Relaxed) as f64)
    }

    /// Runs `f` (relaxed loads of the counts) until no folding writer overlapped it.
    fn read(&self, f: impl Fn() -> f64) -> f64 {
        let mut spins = 0u32;
        loop {
            let before = self.seq.load(Acquire);
            if before & 1 == 1 {
                // A writer is folding (a few loads and stores); should it have been preempted,
                // give it the CPU rather than spin through its time slice.
                spins += 1;
                if spins.is_multiple_of(64) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            let v = f();
            fence(Acquire);
            if self.seq.load(Relaxed) == before {
                return v;
            }
        }
    }

    /// Runs the folding writer `f` inside the sequence lock. Writers are the ticker and
    /// installation; should two ever overlap, the increments still pair up (the count ends
    /// even), so readers may see one mixed value but never wait for ever.
    fn write(&self, f: impl FnOnce()) {
        let prev = self.seq.fetch_add(1, Relaxed);
        // One writer at a time today: the ticker and installation both hold the state lock.
        debug_assert!(prev & 1 == 0, "two temperature writers overlapped");
        fence(Release);
        f();
        self.seq.fetch_add(1, Release);
    }

    /// The reads this table answered itself that read storage (decayed): what moving it saves
    /// and has to pay for. A table a compaction just wrote has none, however hot its range (so
    /// a range does not bounce between tiers on inherited heat), and reads the block cache
    /// serves cost nothing (so hot keys scattered over cached blocks move no table).
    pub fn own(&self) -> f64 {
        self.read(|| f64::from_bits(self.io.load(Relaxed)) + self.recent_io.load(Relaxed) as f64)
            .min(self.get())
    }

    /// The count decayed with the short half-life (reads since the last tick included).
    pub fn rate(&self) -> f64 {
        self.read(|| f64::from_bits(self.rate.load(Relaxed)) + self.recent.load(Relaxed) as f64)
    }

    /// Sets the count and short-term count a just-installed table inherits.
    pub fn inherit(&self, v: f64, rate: f64) {
        self.restore(v, 0.0, rate);
    }

    /// Sets the count, its own part and the short-term count (a reopened database loads the
    /// first two and estimates the third).
    pub fn restore(&self, total: f64, own: f64, rate: f64) {
        let total = clean(total);
        self.write(|| {
            self.recent.store(0, Relaxed);
            self.recent_io.store(0, Relaxed);
            self.decayed.store(total.to_bits(), Relaxed);
            self.io.store(clean(own).min(total).to_bits(), Relaxed);
            self.rate.store(clean(rate).to_bits(), Relaxed);
        });
    }

    /// Folds the recent reads in and decays by `factor` (in `(0, 1]`), the short-term count by
    /// `short`. Called by one ticker.
    pub fn decay(&self, factor: f64, short: f64) {
        self.write(|| {
            let recent = self.recent.swap(0, Relaxed) as f64;
            let r = f64::from_bits(self.rate.load(Relaxed));
            let recent_io = self.recent_io.swap(0, Relaxed) as f64;
            let d = f64::from_bits(self.decayed.load(Relaxed));
            let i = f64::from_bits(self.io.load(Relaxed));
            // Counts below a hundredth of a read are noise: keep the values finite and small.
            let small = |v: f64| if v < 0.01 { 0.0 } else { v };
            let v = small((d + recent) * factor);
            self.decayed.store(v.to_bits(), Relaxed);
            self.io
                .store(small((i + recent_io) * factor).min(v).to_bits(), Relaxed);
            self.rate
                .store(small((r + recent) * short).to_bits(), Relaxed);
        });
    }
}

thread_local! {
    static TABLE_IO: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one table read that went to storage on this thread (the tier layer calls it for
/// fast-tier reads and capacity-tier requests, not for the persistent cache's hits).
#[inline]
pub fn note_table_io() {
    TABLE_IO.with(|c| c.set(c.get() + 1));
}

/// Table reads this thread sent to storage so far: compared before and after a lookup's
/// probe, it tells whether the probe missed the block cache.
#[inline]
pub fn table_io() -> u64 {
    TABLE_IO.with(|c| c.get())
}

/// This thread's [`table_io`] before a probe, taken only when temperatures are tracked:
/// [`IoMark::since`] then tells whether the probe went to storage.
#[derive(Clone, Copy, Debug)]
pub struct IoMark(Option<u64>);

impl IoMark {
    /// A mark of this thread's [`table_io`] now if `tracked`, else an untracked mark.
    #[inline]
    pub fn new(tracked: bool) -> Self {
        IoMark(tracked.then(table_io))
    }

    /// Whether this thread read a table from storage since the mark (`None`: not tracked).
    #[inline]
    pub fn since(self) -> Option<bool> {
        self.0.map(|before| table_io() != before)
    }
}

/// The decay factor of one tick.
pub fn decay_factor(tick: Duration, half_life: Duration) -> f64 {
    if half_life.is_zero() {
        return 0.0;
    }
    0.5f64.powf(tick.as_secs_f64() / half_life.as_secs_f64())
}

/// What a picker reads about temperatures: a copy taken under the database lock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TemperatureSnapshot {
    /// `(temperature, own reads, short-term count)` of each live table (see
    /// [`Temperature::own`], [`Temperature::rate`]).
    pub by_table: HashMap<u64, (f64, f64, f64)>,
    /// The tiers' measured costs.
    pub costs: TierCosts,
    /// Reads are rare and writes are flowing: fast levels' compactions may wait (§V-C).
    pub deferring: bool,
    /// Fast-tier bytes beyond which deferred compaction resumes.
    pub defer_fast_bytes: u64,
    /// See [`LogStoreOptions::cold_fraction`].
    pub cold_fraction: f64,
    /// See [`LogStoreOptions::reverse_margin`].
    pub reverse_margin: f64,
    /// The fast-tier budget LogStore keeps by evicting the coldest tables (`None`: unbounded).
    pub fast_budget: Option<u64>,
}

impl TemperatureSnapshot {
    /// The temperature of table `id` (0 when unknown).
    pub fn of(&self, id: u64) -> f64 {
        self.by_table.get(&id).map_or(0.0, |t| t.0)
    }

    /// The reads table `id` answered itself (0 when unknown).
    pub fn own(&self, id: u64) -> f64 {
        self.by_table.get(&id).map_or(0.0, |t| t.1)
    }

    /// The short-term count of table `id` (0 when unknown).
    pub fn rate(&self, id: u64) -> f64 {
        self.by_table.get(&id).map_or(0.0, |t| t.2)
    }
}

/// Counts of live tables, bucketed by decade of temperature: bucket 0 is `< 1` read, bucket
/// `i` is `[10^(i-1), 10^i)`, the last is everything above.
pub const TEMPERATURE_BUCKETS: usize = 6;

/// The histogram bucket of a temperature.
pub fn bucket_of(t: f64) -> usize {
    if t < 1.0 {
        return 0;
    }
    ((t.log10().floor() as usize) + 1).min(TEMPERATURE_BUCKETS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without decay (factor 1) the count only grows: a reader racing the ticker must never
    /// see the reads a tick is moving from `recent` into `decayed` vanish.
    #[test]
    fn a_count_read_during_a_tick_loses_no_reads() {
        use std::sync::{atomic::AtomicBool, Arc, Barrier};
        let t = Arc::new(Temperature::default());
        let done = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(2));
        let ticker = {
            let (t, done, start) = (t.clone(), done.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut ticks = 0u64;
                while !done.load(Relaxed) {
                    t.record(false);
                    t.decay(1.0, 1.0);
                    ticks += 1;
                }
                ticks
            })
        };
        start.wait();
        let (mut last, mut reads) = (0.0, 0u64);
        // Read until the ticker has folded many times under the reader (each record is one
        // read, so the count is the ticks so far).
        while last < 20_000.0 || reads < 100_000 {
            let v = t.get();
            assert!(v >= last, "the count went back from {last} to {v}");
            last = v;
            reads += 1;
        }
        done.store(true, Relaxed);
        let ticks = ticker.join().unwrap();
        assert!(ticks >= 20_000, "{ticks} ticks raced {reads} reads");
    }

    #[test]
    fn temperature_decays_and_keeps_recent_reads() {
        let t = Temperature::default();
        for i in 0..8 {
            t.record(i % 2 == 0);
        }
        assert_eq!(
            (t.get(), t.own()),
            (8.0, 4.0),
            "own: the reads that read storage"
        );
        t.decay(0.5, 0.5);
        assert_eq!((t.get(), t.own()), (4.0, 2.0));
        t.record(true);
        assert_eq!((t.get(), t.own()), (5.0, 3.0));
        t.decay(0.5, 0.5);
        assert_eq!((t.get(), t.own()), (2.5, 1.5));
        t.inherit(f64::NAN, 0.0);
        assert_eq!(t.get(), 0.0);
        t.inherit(10.0, 10.0);
        assert_eq!(
            (t.get(), t.own()),
            (10.0, 0.0),
            "inherited heat is not its own"
        );
        t.record(true);
        t.decay(0.5, 0.5);
        assert_eq!((t.get(), t.own()), (5.5, 0.5));
        t.restore(8.0, 20.0, 8.0);
        assert_eq!((t.get(), t.own()), (8.0, 8.0), "own is at most the total");
        t.record(false);
        t.decay(0.5, 0.25);
        assert_eq!(
            (t.get(), t.rate()),
            (4.5, 2.25),
            "the short-term count decays faster"
        );
        t.decay(0.001, 0.001);
        assert_eq!((t.get(), t.own()), (0.0, 0.0), "tiny counts vanish");
        let before = table_io();
        note_table_io();
        assert_eq!(table_io(), before + 1);
    }

    #[test]
    fn decay_factor_halves_over_a_half_life() {
        let f = decay_factor(Duration::from_secs(2), Duration::from_secs(120));
        assert!((f.powi(60) - 0.5).abs() < 1e-9);
        assert_eq!(decay_factor(Duration::from_secs(1), Duration::ZERO), 0.0);
    }

    #[test]
    fn buckets_by_decade() {
        let cases = [
            (0.0, 0),
            (0.99, 0),
            (1.0, 1),
            (9.9, 1),
            (10.0, 2),
            (999.0, 3),
            (1e4, 5),
            (1e9, 5),
        ];
        for (t, b) in cases {
            assert_eq!(bucket_of(t), b, "{t}");
        }
        assert_eq!(
            PlacementPolicy::parse("logstore"),
            Some(PlacementPolicy::LogStore)
        );
        assert_eq!(PlacementPolicy::parse("x"), None);
    }
}
