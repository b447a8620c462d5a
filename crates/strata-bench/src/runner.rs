//! Runs one phase against an engine: worker threads, the unmeasured warm-up, a count of
//! operations or a duration, HDR latency histograms per operation type, a per-second sample of
//! throughput, latency and tier figures, and a live progress bar with the current ops/s.
//!
//! Invariants: workers claim operation numbers from one shared counter, so a count is exact
//! over all threads and `fillseq`/`load` write records `0..n` once each; a worker records each
//! operation into its own (uncontended) interval histograms, which the sampler swaps out every
//! second, so no operation is lost or counted twice; the elapsed time is that of the last
//! measured worker to finish, not of the sampler's tick. The first error stops every worker and
//! is returned. Depends on `engine` (the trait only), `keys`, `distributions`, `workloads`,
//! `latency`, `report` and `results`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};

use crate::distributions::{Permutation, ScheduledChooser};
use crate::engine::{EngineCounters, KvEngine};
use crate::keys::{KeySpace, ValueSource};
use crate::latency::{new_histogram, OpHistograms};
use crate::report;
use crate::results::{PhaseResult, Prices, Sample};
use crate::rng::Rng;
use crate::workloads::{FillOrder, Limit, OpType, PhaseKind, PhaseRole, PhaseSpec};

/// What every phase of a run shares.
pub struct RunContext<'a> {
    pub engine: &'a dyn KvEngine,
    pub keys: KeySpace,
    pub values: &'a ValueSource,
    /// Records loaded (the range distributions sample from).
    pub num: u64,
    /// Records that exist now: `num` plus the run phases' inserts (new indices come from here).
    pub inserted: &'a AtomicU64,
    pub seed: u64,
    pub progress: bool,
    pub prices: Prices,
    /// When the whole run started (phases report their start relative to it).
    pub run_start: Instant,
}

/// Entries a `readseq` worker reads per engine call.
const READSEQ_CHUNK: usize = 100;
/// How often the sampler wakes up (progress bar, deadlines, finished workers).
const TICK: Duration = Duration::from_millis(50);
/// The time series interval.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// A worker's shared state, read by the sampler. Aligned to keep workers off each other's
/// cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    interval: Mutex<OpHistograms>,
    counts: [AtomicU64; OpType::COUNT],
}

/// Counters shared by all workers of a segment.
#[derive(Default)]
struct Shared {
    next: AtomicU64,
    stop: AtomicBool,
    /// Measured workers still running, and all workers still running.
    primary_running: AtomicUsize,
    running: AtomicUsize,
    /// Nanoseconds from the segment start to the last measured worker's finish.
    finished_ns: AtomicU64,
    reads: AtomicU64,
    found: AtomicU64,
    write_bytes: AtomicU64,
    /// Transactions whose commit was refused as a conflict.
    conflicts: AtomicU64,
}

/// What a segment (the warm-up or the measured part of a phase) produced.
struct Segment {
    elapsed: Duration,
    hists: OpHistograms,
    counts: [u64; OpType::COUNT],
    reads: u64,
    found: u64,
    write_bytes: u64,
    conflicts: u64,
    samples: Vec<Sample>,
}

/// Runs `spec` (its warm-up, then its measured part; after a load phase, the engine settles).
/// `index` distinguishes the random streams of phases.
pub fn run_phase(ctx: &RunContext, spec: &PhaseSpec, index: u64) -> anyhow::Result<PhaseResult> {
    if spec.warmup_secs > 0.0 {
        run_segment(
            ctx,
            spec,
            Limit::Secs(spec.warmup_secs),
            index | 1 << 32,
            &format!("{} warm-up", spec.name),
            false,
        )?;
    }
    let before = ctx.engine.counters();
    let proc_before = crate::process::sample();
    let start_secs = ctx.run_start.elapsed().as_secs_f64();
    let seg = run_segment(ctx, spec, spec.limit, index, &spec.name, true)?;
    let settle_secs = if spec.role == PhaseRole::Load {
        let t = Instant::now();
        ctx.engine.settle()?;
        Some(t.elapsed().as_secs_f64())
    } else {
        None
    };
    let after = ctx.engine.counters();
    let proc_after = crate::process::sample();
    let mut r = result(ctx, spec, seg, start_secs, settle_secs, &before, &after);
    r.process = proc_before
        .zip(proc_after)
        .map(|(b, a)| crate::process::report(&b, &a, r.ops));
    Ok(r)
}

fn result(
    ctx: &RunContext,
    spec: &PhaseSpec,
    seg: Segment,
    start_secs: f64,
    settle_secs: Option<f64>,
    before: &EngineCounters,
    after: &EngineCounters,
) -> PhaseResult {
    let secs = seg.elapsed.as_secs_f64().max(1e-9);
    let ops: u64 = OpType::ALL
        .into_iter()
        .filter(|&op| spec.is_primary(op))
        .map(|op| seg.counts[op.index()])
        .sum();
    let writes_primary = OpType::ALL
        .into_iter()
        .any(|op| op.writes() && spec.is_primary(op) && seg.counts[op.index()] > 0);
    let mut tier = report::tier_report(before, after);
    tier.capacity_requests_per_kop = report::requests_per_kop(&tier, ops);
    let cost = report::cost(&tier, secs, &ctx.prices);
    PhaseResult {
        name: spec.name.clone(),
        role: spec.role,
        threads: spec.threads,
        start_secs,
        warmup_secs: spec.warmup_secs,
        ops,
        elapsed_secs: secs,
        micros_per_op: if ops > 0 {
            secs * 1e6 * spec.threads as f64 / ops as f64
        } else {
            0.0
        },
        ops_per_sec: ops as f64 / secs,
        write_mb_per_sec: (writes_primary && seg.write_bytes > 0)
            .then(|| seg.write_bytes as f64 / 1_048_576.0 / secs),
        reads_found: seg.found,
        txn_conflicts: seg.conflicts,
        reads: seg.reads,
        latency: seg.hists.summaries(),
        settle_secs,
        tier,
        process: None,
        hotrap: ctx.engine.hotrap(),
        logstore: ctx.engine.logstore(),
        compaction: ctx.engine.compaction(),
        cost,
        stages: spec
            .schedule()
            .map(|s| {
                s.stages
                    .iter()
                    .map(|st| (st.at_secs, st.dist.to_string()))
                    .collect()
            })
            .unwrap_or_default(),
        timeseries: seg.samples,
    }
}

/// Per-segment read-only state the workers share.
struct Plan<'a> {
    ctx: &'a RunContext<'a>,
    spec: &'a PhaseSpec,
    limit: Limit,
    chooser: Option<ScheduledChooser>,
    perm: Option<Permutation>,
    start: Instant,
    salt: u64,
}

fn run_segment(
    ctx: &RunContext,
    spec: &PhaseSpec,
    limit: Limit,
    salt: u64,
    label: &str,
    measured: bool,
) -> anyhow::Result<Segment> {
    let chooser = spec.schedule().map(|s| s.choosers(ctx.num, ctx.seed));
    let perm = matches!(
        spec.kind,
        PhaseKind::Fill {
            order: FillOrder::UniqueRandom
        }
    )
    .then(|| Permutation::new(ctx.num, ctx.seed));
    let writer = matches!(spec.kind, PhaseKind::ReadWhileWriting { .. });
    let workers = spec.threads + usize::from(writer);
    let slots: Vec<Slot> = (0..workers).map(|_| Slot::default()).collect();
    let shared = Shared::default();
    shared.primary_running.store(spec.threads, Relaxed);
    shared.running.store(workers, Relaxed);
    let bar = progress_bar(ctx.progress, limit, label);
    let plan = Plan {
        ctx,
        spec,
        limit,
        chooser,
        perm,
        start: Instant::now(),
        salt,
    };
    let mut sampler = Sampler::new(ctx, spec, slots.len(), measured);
    let outcome = std::thread::scope(|s| -> anyhow::Result<()> {
        let mut handles = Vec::new();
        for (t, slot) in slots.iter().enumerate() {
            let (plan, shared) = (&plan, &shared);
            let is_writer = writer && t == spec.threads;
            handles.push(
                std::thread::Builder::new()
                    .name(format!("bench-{t}"))
                    .spawn_scoped(s, move || {
                        let r = worker(plan, shared, slot, t as u64, is_writer);
                        if r.is_err() {
                            shared.stop.store(true, Relaxed);
                        }
                        if !is_writer {
                            let ns = plan.start.elapsed().as_nanos() as u64;
                            shared.finished_ns.fetch_max(ns, Relaxed);
                            if shared.primary_running.fetch_sub(1, Relaxed) == 1 {
                                // The measured workers are done: stop the writer.
                                shared.stop.store(true, Relaxed);
                            }
                        }
                        shared.running.fetch_sub(1, Relaxed);
                        r
                    })?,
            );
        }
        let mut last_sample = Instant::now();
        loop {
            std::thread::sleep(TICK);
            let done = shared.running.load(Relaxed) == 0;
            let elapsed = plan.start.elapsed();
            match limit {
                Limit::Ops(_) => bar.set_position(sampler.primary_ops(&slots)),
                Limit::Secs(_) => bar.set_position(elapsed.as_millis() as u64),
            }
            if done || last_sample.elapsed() >= SAMPLE_EVERY {
                last_sample = Instant::now();
                let ops_per_sec = sampler.sample(&slots, &plan, elapsed);
                bar.set_message(format!("{:.0} ops/s", ops_per_sec));
            }
            if done {
                break;
            }
        }
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow::anyhow!("a benchmark worker panicked"));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    });
    bar.finish_and_clear();
    outcome?;
    let elapsed = Duration::from_nanos(shared.finished_ns.load(Relaxed).max(1));
    let Sampler {
        cumulative,
        samples,
        ..
    } = sampler;
    let mut counts = [0u64; OpType::COUNT];
    for slot in &slots {
        for (c, a) in counts.iter_mut().zip(&slot.counts) {
            *c += a.load(Relaxed);
        }
    }
    Ok(Segment {
        elapsed,
        hists: cumulative,
        counts,
        reads: shared.reads.load(Relaxed),
        found: shared.found.load(Relaxed),
        write_bytes: shared.write_bytes.load(Relaxed),
        conflicts: shared.conflicts.load(Relaxed),
        samples,
    })
}

fn progress_bar(enabled: bool, limit: Limit, label: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let (len, template) = match limit {
        Limit::Ops(n) => (
            n,
            "{prefix:>16} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} {msg}",
        ),
        Limit::Secs(s) => (
            (s * 1000.0) as u64,
            "{prefix:>16} [{elapsed_precise}] {wide_bar} {msg} (eta {eta})",
        ),
    };
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label.to_string());
    bar
}

/// Collects the per-second samples and the cumulative histograms.
struct Sampler<'a> {
    ctx: &'a RunContext<'a>,
    spec: &'a PhaseSpec,
    measured: bool,
    spare: Vec<OpHistograms>,
    cumulative: OpHistograms,
    interval: Histogram<u64>,
    last_counts: [u64; OpType::COUNT],
    last_t: Duration,
    last_counters: EngineCounters,
    samples: Vec<Sample>,
}

impl<'a> Sampler<'a> {
    fn new(ctx: &'a RunContext<'a>, spec: &'a PhaseSpec, slots: usize, measured: bool) -> Self {
        Sampler {
            ctx,
            spec,
            measured,
            spare: vec![OpHistograms::default(); slots],
            cumulative: OpHistograms::default(),
            interval: new_histogram(),
            last_counts: [0; OpType::COUNT],
            last_t: Duration::ZERO,
            last_counters: if measured {
                ctx.engine.counters()
            } else {
                EngineCounters::default()
            },
            samples: Vec::new(),
        }
    }

    fn primary_ops(&self, slots: &[Slot]) -> u64 {
        slots
            .iter()
            .flat_map(|s| {
                OpType::ALL
                    .into_iter()
                    .filter(|&op| self.spec.is_primary(op))
                    .map(|op| s.counts[op.index()].load(Relaxed))
            })
            .sum()
    }

    /// Drains the workers' interval histograms and records a sample; returns the interval's
    /// primary ops/s.
    fn sample(&mut self, slots: &[Slot], plan: &Plan, elapsed: Duration) -> f64 {
        self.interval.reset();
        for (slot, spare) in slots.iter().zip(self.spare.iter_mut()) {
            {
                let mut g = slot.interval.lock().unwrap_or_else(|e| e.into_inner());
                std::mem::swap(&mut *g, spare);
            }
            self.cumulative.merge(spare);
            spare.merge_all_into(&mut self.interval);
            spare.reset();
        }
        let mut counts = [0u64; OpType::COUNT];
        for slot in slots {
            for (c, a) in counts.iter_mut().zip(&slot.counts) {
                *c += a.load(Relaxed);
            }
        }
        let dt = (elapsed - self.last_t).as_secs_f64().max(1e-9);
        let mut ops = 0;
        let mut by_type = BTreeMap::new();
        for op in OpType::ALL {
            let d = counts[op.index()] - self.last_counts[op.index()];
            if d > 0 {
                by_type.insert(op, d);
            }
            if self.spec.is_primary(op) {
                ops += d;
            }
        }
        let ops_per_sec = ops as f64 / dt;
        if self.measured {
            let now = self.ctx.engine.counters();
            let tier = report::tier_report(&self.last_counters, &now);
            let q = |q: f64| {
                if self.interval.is_empty() {
                    0.0
                } else {
                    self.interval.value_at_quantile(q) as f64 / 1000.0
                }
            };
            self.samples.push(Sample {
                t: elapsed.as_secs_f64(),
                interval_secs: dt,
                ops,
                ops_per_sec,
                ops_by_type: by_type,
                p50_us: q(0.5),
                p99_us: q(0.99),
                p999_us: q(0.999),
                fast_hit_rate: tier.fast_hit_rate,
                block_cache_hit_rate: tier.block_cache_hit_rate,
                pcache_hit_rate: tier.pcache_hit_rate,
                capacity_gets: tier.delta.capacity_gets,
                capacity_get_bytes: tier.delta.capacity_get_bytes,
                capacity_puts: tier.delta.capacity_puts,
                stage: plan
                    .chooser
                    .as_ref()
                    .map_or(0, |c| c.stage(elapsed.as_secs_f64())),
            });
            self.last_counters = now;
        }
        self.last_counts = counts;
        self.last_t = elapsed;
        ops_per_sec
    }
}

/// One worker's loop.
fn worker(
    plan: &Plan,
    shared: &Shared,
    slot: &Slot,
    t: u64,
    is_writer: bool,
) -> anyhow::Result<()> {
    let ctx = plan.ctx;
    let spec = plan.spec;
    let engine = ctx.engine;
    let mut rng = Rng::for_thread(ctx.seed, plan.salt, t);
    let mut key = Vec::with_capacity(ctx.keys.key_size());
    let mut last = Vec::new();
    let mut batch_keys: Vec<Vec<u8>> = Vec::new();
    let mut seq_pos: Vec<u8> = Vec::new();
    let claim = match spec.kind {
        PhaseKind::Fill { .. } | PhaseKind::MultiRead { .. } => spec.batch_size as u64,
        PhaseKind::ReadSeq => READSEQ_CHUNK as u64,
        _ => 1,
    };
    let deadline = match plan.limit {
        Limit::Secs(s) => Some(Duration::from_secs_f64(s)),
        Limit::Ops(_) => None,
    };
    // A batch of writes is one latency sample (as in db_bench); a run of `readseq` entries, or
    // a `multireadrandom` batch, is `n` samples of the average per-key latency (db_bench
    // records one sample per MultiGet: its latencies are per batch).
    let record = |op: OpType, ns: u64, n: u64| {
        let mut g = slot.interval.lock().unwrap_or_else(|e| e.into_inner());
        if n == 1 || op != OpType::Read {
            g.record(op, ns);
        } else {
            g.record_n(op, ns / n.max(1), n);
        }
        drop(g);
        slot.counts[op.index()].fetch_add(n, Relaxed);
    };
    // The writer of readwhilewriting writes at least once, even when the readers finish first.
    let mut wrote = false;
    loop {
        if shared.stop.load(Relaxed) && (!is_writer || wrote) {
            return Ok(());
        }
        let t0 = Instant::now();
        let since = t0 - plan.start;
        if deadline.is_some_and(|d| since >= d) {
            return Ok(());
        }
        if is_writer {
            let i = rng.below(ctx.num);
            ctx.keys.key(i, &mut key);
            let v = ctx.values.value(&mut rng);
            engine.put(&key, v)?;
            record(OpType::Write, t0.elapsed().as_nanos() as u64, 1);
            wrote = true;
            continue;
        }
        // Claim operation numbers [k, k + n).
        let k = shared.next.fetch_add(claim, Relaxed);
        let n = match plan.limit {
            Limit::Ops(total) if k >= total => return Ok(()),
            Limit::Ops(total) => claim.min(total - k),
            Limit::Secs(_) => claim,
        };
        let stage = plan
            .chooser
            .as_ref()
            .map(|c| c.stage(since.as_secs_f64()))
            .unwrap_or(0);
        let choose = |rng: &mut Rng| -> u64 {
            let c = plan.chooser.as_ref().expect("phase with a distribution");
            c.chooser(stage).sample(rng, ctx.inserted.load(Relaxed))
        };
        let read = |key: &[u8]| -> anyhow::Result<()> {
            let found = engine.get(key)?;
            shared.reads.fetch_add(1, Relaxed);
            if found {
                shared.found.fetch_add(1, Relaxed);
            }
            Ok(())
        };
        let wrote = |bytes: usize| {
            shared.write_bytes.fetch_add(bytes as u64, Relaxed);
        };
        let (op, count) = match &spec.kind {
            PhaseKind::Fill { order } => {
                let index = |j: u64, rng: &mut Rng| match order {
                    FillOrder::Sequential => k + j,
                    FillOrder::Random => rng.below(ctx.num),
                    FillOrder::UniqueRandom => plan
                        .perm
                        .as_ref()
                        .expect("permutation")
                        .apply((k + j) % ctx.num),
                };
                if n == 1 {
                    ctx.keys.key(index(0, &mut rng), &mut key);
                    let v = ctx.values.value(&mut rng);
                    engine.put(&key, v)?;
                    wrote(key.len() + v.len());
                } else {
                    batch_keys.resize_with(n as usize, Vec::new);
                    for j in 0..n {
                        ctx.keys
                            .key(index(j, &mut rng), &mut batch_keys[j as usize]);
                    }
                    let pairs: Vec<(&[u8], &[u8])> = batch_keys
                        .iter()
                        .map(|k| (k.as_slice(), ctx.values.value(&mut rng)))
                        .collect();
                    engine.put_batch(&pairs)?;
                    wrote(pairs.iter().map(|(k, v)| k.len() + v.len()).sum());
                }
                (OpType::Write, n)
            }
            PhaseKind::Read { .. } | PhaseKind::ReadWhileWriting { .. } => {
                let i = choose(&mut rng);
                if matches!(spec.kind, PhaseKind::Read { missing: true, .. }) {
                    ctx.keys.missing_key(i, &mut key);
                } else {
                    ctx.keys.key(i, &mut key);
                }
                read(&key)?;
                (OpType::Read, 1)
            }
            PhaseKind::MultiRead { .. } => {
                batch_keys.resize_with(n as usize, Vec::new);
                for k in &mut batch_keys {
                    ctx.keys.key(choose(&mut rng), k);
                }
                let keys: Vec<&[u8]> = batch_keys.iter().map(Vec::as_slice).collect();
                let found = engine.multi_get(&keys)?;
                shared.reads.fetch_add(n, Relaxed);
                shared.found.fetch_add(found as u64, Relaxed);
                (OpType::Read, n)
            }
            PhaseKind::Overwrite { .. } => {
                ctx.keys.key(choose(&mut rng), &mut key);
                let v = ctx.values.value(&mut rng);
                engine.put(&key, v)?;
                wrote(key.len() + v.len());
                (OpType::Write, 1)
            }
            PhaseKind::Update { txn, .. } => {
                ctx.keys.key(choose(&mut rng), &mut key);
                let v = ctx.values.value(&mut rng);
                if !engine.update(&key, v, *txn)? {
                    shared.conflicts.fetch_add(1, Relaxed);
                }
                wrote(key.len() + v.len());
                (OpType::Write, 1)
            }
            PhaseKind::Merge { .. } => {
                ctx.keys.key(choose(&mut rng), &mut key);
                let one = 1u64.to_le_bytes();
                engine.merge(&key, &one)?;
                wrote(key.len() + one.len());
                (OpType::Write, 1)
            }
            PhaseKind::Delete { .. } => {
                ctx.keys.key(choose(&mut rng), &mut key);
                engine.delete(&key)?;
                wrote(key.len());
                (OpType::Delete, 1)
            }
            PhaseKind::Seek { nexts, .. } => {
                ctx.keys.key(choose(&mut rng), &mut key);
                engine.scan(&key, *nexts, &mut last)?;
                (OpType::Scan, 1)
            }
            PhaseKind::ReadSeq => {
                let mut got = 0u64;
                while got < n {
                    let want = (n - got) as usize;
                    let g = engine.scan(&seq_pos, want, &mut last)? as u64;
                    got += g;
                    if (g as usize) < want {
                        if seq_pos.is_empty() && g == 0 {
                            break; // an empty database
                        }
                        seq_pos.clear(); // wrap around to the first key
                    } else {
                        seq_pos.clear();
                        seq_pos.extend_from_slice(&last);
                        seq_pos.push(0);
                    }
                }
                if got == 0 {
                    return Ok(());
                }
                shared.reads.fetch_add(got, Relaxed);
                shared.found.fetch_add(got, Relaxed);
                (OpType::Read, got)
            }
            PhaseKind::Mix { mix, max_scan, .. } => {
                let op = mix.pick(&mut rng);
                match op {
                    OpType::Read => {
                        ctx.keys.key(choose(&mut rng), &mut key);
                        read(&key)?;
                    }
                    OpType::Update => {
                        ctx.keys.key(choose(&mut rng), &mut key);
                        let v = ctx.values.value(&mut rng);
                        engine.put(&key, v)?;
                        wrote(key.len() + v.len());
                    }
                    OpType::Insert => {
                        let i = ctx.inserted.fetch_add(1, Relaxed);
                        ctx.keys.key(i, &mut key);
                        let v = ctx.values.value(&mut rng);
                        engine.put(&key, v)?;
                        wrote(key.len() + v.len());
                    }
                    OpType::Scan => {
                        ctx.keys.key(choose(&mut rng), &mut key);
                        let len = rng.range_inclusive(1, *max_scan as u64) as usize;
                        engine.scan(&key, len, &mut last)?;
                    }
                    OpType::Rmw => {
                        ctx.keys.key(choose(&mut rng), &mut key);
                        engine.get(&key)?;
                        let v = ctx.values.value(&mut rng);
                        engine.put(&key, v)?;
                        wrote(key.len() + v.len());
                    }
                    OpType::Write | OpType::Delete => unreachable!("not in a mix"),
                }
                (op, 1)
            }
        };
        record(op, t0.elapsed().as_nanos() as u64, count);
    }
}
