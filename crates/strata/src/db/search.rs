//! Parallel search of a point lookup's candidate tables (SifrDB §4.3).
//!
//! A lookup whose remaining candidates (tables that may hold the key, in priority order: newer
//! first) include several on the capacity tier — each probe a network request — builds a
//! [`Query`] and appends it to the pool's queue. Search threads, and the calling thread itself,
//! repeatedly *select* the query's next unprobed candidate (its COUNTER), *search* it without
//! any lock, and *update* the query: the candidate's local result (LOCALR), and the global
//! result (GLOBALR) once it is determined — by the highest-priority candidate that decided
//! (found a version, a covering tombstone, or failed) with every higher-priority one having
//! found nothing. The caller returns as soon as GLOBALR is set; late probes of lower-priority
//! candidates are discarded. The result is therefore exactly the sequential search's.
//!
//! Range scans use the same threads to prefetch, at a seek, the block each candidate tree on
//! the capacity tier would be read from (§4.3 "range query"): the seek then finds them cached.
//!
//! Bounded: `threads` search threads plus the callers, no thread per lookup. Selection always
//! takes the oldest unfinished query's highest-priority unprobed candidate, so early decisions
//! come first. Depends on the table cache and version types; never on the write path.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::cache::{RowCache, TableCache};
use crate::error::Result;
use crate::sst::reader::Table;
use crate::stats::EngineStats;
use crate::types::{SeqNo, ValueKind};
use crate::version::TableFile;

/// What one candidate says about the key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Local {
    /// Holds nothing visible for the key: the search continues below it.
    Continue,
    /// Decides the lookup: the newest visible version (`None`: deleted), and the point
    /// entry's sequence number when a point entry (not a tombstone) decided.
    Found(Option<Bytes>, Option<SeqNo>),
    /// The newest visible version is a merge operand: the lookup is folded from here on
    /// (`merge_lookup`).
    Merge,
}

/// The row cache's answer for `key` in `f`, if it holds one (`rows` is `None` when the cache
/// is off or the lookup's snapshot does not see the whole table).
fn cached(
    rows: Option<&RowCache>,
    stats: &EngineStats,
    f: &TableFile,
    key: &[u8],
) -> Option<Local> {
    let answer = rows?.get(f.id, key);
    let counter = match answer {
        Some(_) => &stats.row_cache_hits,
        None => &stats.row_cache_misses,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    Some(match answer? {
        Some((v, seq)) => Local::Found(Some(v), Some(seq)),
        None => Local::Found(None, None),
    })
}

/// What table `f` says about `key` given its newest point entry at the snapshot and its
/// newest covering tombstone; a decided answer is recorded in the row cache.
fn answer(
    rows: Option<&RowCache>,
    f: &TableFile,
    key: &[u8],
    point: Option<(SeqNo, ValueKind, Bytes)>,
    tombstone: SeqNo,
) -> Local {
    match point {
        // Not cached: the row cache holds decided answers only.
        Some((seq, ValueKind::Merge, _)) if tombstone <= seq => Local::Merge,
        Some((seq, kind, v)) => {
            let live = tombstone <= seq && kind == ValueKind::Put;
            if let Some(rows) = rows {
                rows.insert(f.id, key, live.then_some((&v[..], seq)));
            }
            if live {
                Local::Found(Some(v), Some(seq))
            } else {
                Local::Found(None, None)
            }
        }
        None if tombstone > 0 => Local::Found(None, None),
        None => Local::Continue,
    }
}

/// The reader of `f`; with `cache_only`, only if it is open.
fn open(tables: &TableCache, f: &TableFile, cache_only: bool) -> Result<Arc<Table>> {
    if cache_only {
        tables.get_cached(f).ok_or_else(|| {
            crate::Error::from(crate::error::ErrorRepr::Incomplete("table not open"))
        })
    } else {
        tables.get(f)
    }
}

/// Probes one table for `key` at `snapshot`; with `cache_only`, only if the table is open and
/// the block needed is cached (else `ErrorKind::Incomplete`, nothing read).
pub(crate) fn probe(
    tables: &TableCache,
    stats: &EngineStats,
    f: &TableFile,
    key: &[u8],
    lookup: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> Result<Local> {
    probe_with(tables, stats, (f, None), key, lookup, snapshot, cache_only)
}

/// [`probe`] of `f` with its reader, when the caller already holds it (`opened`).
pub(crate) fn probe_with(
    tables: &TableCache,
    stats: &EngineStats,
    (f, opened): (&TableFile, Option<Arc<Table>>),
    key: &[u8],
    lookup: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> Result<Local> {
    if f.smallest_seq > snapshot {
        return Ok(Local::Continue);
    }
    // The row cache answers for lookups that see the whole table (all of them but reads at an
    // older snapshot).
    let rows = tables.rows().filter(|_| snapshot >= f.largest_seq);
    if let Some(hit) = cached(rows, stats, f, key) {
        return Ok(hit);
    }
    let table = match opened {
        Some(t) => t,
        None => open(tables, f, cache_only)?,
    };
    stats.table_probes.fetch_add(1, Ordering::Relaxed);
    let tombstone = table.max_covering_tombstone(key, snapshot);
    let point = table.get_opt(lookup, key, cache_only)?;
    Ok(answer(rows, f, key, point, tombstone))
}

/// [`probe`] of several keys in one table (`(user key, lookup key)` pairs, at best sorted by
/// key), through [`Table::get_many`]; one answer per key, in order.
pub(crate) fn probe_many(
    tables: &TableCache,
    stats: &EngineStats,
    f: &TableFile,
    keys: &[(&[u8], &[u8])],
    snapshot: SeqNo,
    cache_only: bool,
) -> Vec<Result<Local>> {
    let mut out: Vec<Result<Local>> = Vec::with_capacity(keys.len());
    out.resize_with(keys.len(), || Ok(Local::Continue));
    if f.smallest_seq > snapshot {
        return out;
    }
    let rows = tables.rows().filter(|_| snapshot >= f.largest_seq);
    let mut misses: Vec<usize> = Vec::with_capacity(keys.len());
    for (i, (key, _)) in keys.iter().enumerate() {
        match cached(rows, stats, f, key) {
            Some(hit) => out[i] = Ok(hit),
            None => misses.push(i),
        }
    }
    if misses.is_empty() {
        return out;
    }
    let table = match open(tables, f, cache_only) {
        Ok(t) => t,
        Err(e) => {
            for i in misses {
                out[i] = Err(e.clone());
            }
            return out;
        }
    };
    stats
        .table_probes
        .fetch_add(misses.len() as u64, Ordering::Relaxed);
    let reqs: Vec<(&[u8], &[u8])> = misses.iter().map(|&i| keys[i]).collect();
    for (&i, point) in misses.iter().zip(table.get_many(&reqs, cache_only)) {
        let key = keys[i].0;
        let tombstone = table.max_covering_tombstone(key, snapshot);
        out[i] = point.map(|p| answer(rows, f, key, p, tombstone));
    }
    out
}

/// The global result, if the local results so far determine it: the first candidate (in
/// priority order) that did not continue, provided every one before it has answered.
/// `Some((index, result))`; an index of `locals.len()` means nothing was found anywhere.
pub(crate) fn decide(locals: &[Option<Result<Local>>]) -> Option<(usize, Result<Local>)> {
    for (i, l) in locals.iter().enumerate() {
        match l {
            None => return None,
            Some(Ok(Local::Continue)) => continue,
            Some(r) => return Some((i, r.clone())),
        }
    }
    Some((locals.len(), Ok(Local::Continue)))
}

struct QueryState {
    /// Candidates selected so far (COUNTER).
    counter: usize,
    /// LOCALR.
    locals: Vec<Option<Result<Local>>>,
    /// GLOBALR.
    global: Option<(usize, Result<Local>)>,
}

/// One lookup's search.
struct Query {
    key: Vec<u8>,
    lookup: Vec<u8>,
    snapshot: SeqNo,
    candidates: Vec<Arc<TableFile>>,
    state: Mutex<QueryState>,
    done: Condvar,
}

impl Query {
    /// Takes the next unprobed candidate, unless the result is already known.
    fn select(&self) -> Option<usize> {
        let mut s = self.state.lock();
        if s.global.is_some() || s.counter >= self.candidates.len() {
            return None;
        }
        s.counter += 1;
        Some(s.counter - 1)
    }

    fn finished(&self) -> bool {
        let s = self.state.lock();
        s.global.is_some() || s.counter >= self.candidates.len()
    }

    fn search(&self, i: usize, tables: &TableCache, stats: &EngineStats) {
        // A probe that panics decides the lookup as an error: the caller would otherwise wait
        // for ever for a result (and a search thread would die).
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            probe(
                tables,
                stats,
                &self.candidates[i],
                &self.key,
                &self.lookup,
                self.snapshot,
                false,
            )
        }))
        .unwrap_or_else(|_| Err(crate::Error::invalid("a parallel search probe panicked")));
        let mut s = self.state.lock();
        if s.global.is_some() {
            return; // decided without this probe: discard it
        }
        s.locals[i] = Some(r);
        if let Some(g) = decide(&s.locals) {
            s.global = Some(g);
            self.done.notify_all();
        }
    }
}

/// A job of a [`Batch`].
type Job = Box<dyn FnOnce() + Send>;

/// Independent jobs run by the pool and the caller together (a range scan's prefetches, a
/// multi-get's capacity-tier lookups).
struct Batch {
    /// Each job is taken when it runs, so a finished batch that the queue still holds keeps
    /// nothing the jobs captured (a database handle, tables) alive.
    jobs: Vec<Mutex<Option<Job>>>,
    next: std::sync::atomic::AtomicUsize,
    left: Mutex<usize>,
    done: Condvar,
    /// The first panic of a job, resumed on the caller (a search thread survives it).
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl Batch {
    fn select(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::AcqRel);
        (i < self.jobs.len()).then_some(i)
    }

    fn finished(&self) -> bool {
        self.next.load(Ordering::Acquire) >= self.jobs.len()
    }

    fn run(&self, i: usize) {
        let job = self.jobs[i].lock().take();
        if let Some(job) = job {
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
                self.panic.lock().get_or_insert(p);
            }
        }
        let mut left = self.left.lock();
        *left -= 1;
        if *left == 0 {
            self.done.notify_all();
        }
    }
}

enum Work {
    Query(Arc<Query>),
    Batch(Arc<Batch>),
}

struct Shared {
    queue: Mutex<VecDeque<Work>>,
    work: Condvar,
    stop: AtomicBool,
    tables: Arc<TableCache>,
    stats: Arc<EngineStats>,
}

/// The search threads.
pub(crate) struct SearchPool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl SearchPool {
    pub fn new(threads: usize, tables: Arc<TableCache>, stats: Arc<EngineStats>) -> Arc<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            work: Condvar::new(),
            stop: AtomicBool::new(false),
            tables,
            stats,
        });
        let handles = (0..threads)
            .map(|n| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("strata-search-{n}"))
                    .spawn(move || worker(&s))
                    .expect("spawn search thread")
            })
            .collect();
        Arc::new(SearchPool {
            shared,
            threads: Mutex::new(handles),
        })
    }

    /// Searches `candidates` (priority order) in parallel; returns the index of the deciding
    /// candidate (`candidates.len()`: none decided) and its result.
    pub fn search(
        &self,
        candidates: Vec<Arc<TableFile>>,
        key: &[u8],
        lookup: &[u8],
        snapshot: SeqNo,
    ) -> (usize, Result<Local>) {
        let n = candidates.len();
        let q = Arc::new(Query {
            key: key.to_vec(),
            lookup: lookup.to_vec(),
            snapshot,
            candidates,
            state: Mutex::new(QueryState {
                counter: 0,
                locals: vec![None; n],
                global: None,
            }),
            done: Condvar::new(),
        });
        {
            let mut queue = self.shared.queue.lock();
            queue.push_back(Work::Query(q.clone()));
        }
        // One candidate is the caller's: wake a thread for each of the others.
        for _ in 1..n {
            self.shared.work.notify_one();
        }
        let sh = &self.shared;
        while let Some(i) = q.select() {
            q.search(i, &sh.tables, &sh.stats);
        }
        let mut s = q.state.lock();
        while s.global.is_none() {
            q.done.wait(&mut s);
        }
        s.global.clone().expect("decided")
    }

    /// Runs `jobs` on the search threads and the calling thread; returns their results in
    /// order once all have run. A job that panicked (on any thread) panics the caller.
    pub fn run_all<T, F>(&self, jobs: Vec<F>) -> Vec<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let n = jobs.len();
        if n == 0 {
            return Vec::new();
        }
        let results: Arc<Vec<Mutex<Option<T>>>> =
            Arc::new((0..n).map(|_| Mutex::new(None)).collect());
        let jobs = jobs
            .into_iter()
            .enumerate()
            .map(|(i, job)| {
                let results = results.clone();
                let job: Job = Box::new(move || *results[i].lock() = Some(job()));
                Mutex::new(Some(job))
            })
            .collect();
        let b = Arc::new(Batch {
            jobs,
            next: std::sync::atomic::AtomicUsize::new(0),
            left: Mutex::new(n),
            done: Condvar::new(),
            panic: Mutex::new(None),
        });
        self.shared.queue.lock().push_back(Work::Batch(b.clone()));
        for _ in 1..n {
            self.shared.work.notify_one();
        }
        while let Some(i) = b.select() {
            b.run(i);
        }
        {
            let mut left = b.left.lock();
            while *left > 0 {
                b.done.wait(&mut left);
            }
        }
        if let Some(p) = b.panic.lock().take() {
            std::panic::resume_unwind(p);
        }
        results
            .iter()
            .map(|r| {
                r.lock()
                    .take()
                    .expect("every job of a finished batch stored its result")
            })
            .collect()
    }

    /// Stops the search threads (lookups still in flight finish on their callers).
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _q = self.shared.queue.lock();
            self.shared.work.notify_all();
        }
        for t in std::mem::take(&mut *self.threads.lock()) {
            let _ = t.join();
        }
    }
}

fn worker(s: &Shared) {
    loop {
        let job = {
            let mut queue = s.queue.lock();
            loop {
                if s.stop.load(Ordering::Acquire) {
                    return;
                }
                // The oldest unfinished work's next job; finished work leaves the queue.
                let mut picked = None;
                while let Some(w) = queue.front() {
                    let (sel, finished) = match w {
                        Work::Query(q) => (
                            q.select().map(|i| (Work::Query(q.clone()), i)),
                            q.finished(),
                        ),
                        Work::Batch(b) => (
                            b.select().map(|i| (Work::Batch(b.clone()), i)),
                            b.finished(),
                        ),
                    };
                    if finished || sel.is_none() {
                        queue.pop_front();
                    }
                    if sel.is_some() {
                        picked = sel;
                        break;
                    }
                }
                match picked {
                    Some(p) => break p,
                    None => s.work.wait(&mut queue),
                }
            }
        };
        match job {
            (Work::Query(q), i) => q.search(i, &s.tables, &s.stats),
            (Work::Batch(b), i) => b.run(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> (tempfile::TempDir, Arc<SearchPool>) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::tier::TableStore::new(crate::tier::TablesConfig {
            dir: dir.path().to_path_buf(),
            fast: Arc::new(crate::storage::LocalFs),
            capacity: None,
            meta: None,
            data_cache: None,
            stats: Arc::default(),
            shared: None,
        });
        let stats = Arc::new(EngineStats::default());
        let tables = Arc::new(TableCache::new(Arc::new(store), 16, None, stats.clone()));
        (dir, SearchPool::new(threads, tables, stats))
    }

    #[test]
    fn run_all_returns_every_result_in_order_and_drops_each_job_once_run() {
        for threads in [0, 1, 3] {
            let (_dir, pool) = pool(threads);
            // What each job captured is dropped when it has run, not when the queue lets the
            // finished batch go: only `held` is left holding the marker afterwards.
            let held = Arc::new(());
            let jobs: Vec<_> = (0..64u64)
                .map(|i| {
                    let h = held.clone();
                    move || {
                        let _h = h;
                        std::thread::yield_now();
                        i * i
                    }
                })
                .collect();
            let got = pool.run_all(jobs);
            assert_eq!(
                got,
                (0..64u64).map(|i| i * i).collect::<Vec<_>>(),
                "{threads} threads"
            );
            assert_eq!(Arc::strong_count(&held), 1, "{threads} threads");
            assert!(pool.run_all(Vec::<fn() -> u8>::new()).is_empty());
            pool.shutdown();
        }
    }

    /// `threads + 1` jobs held at a barrier until each thread (the caller and every search
    /// thread) has one, so each search thread runs exactly one; with `fail_on_pool` those
    /// panic. Job `i` returns `i`.
    fn one_job_per_thread(threads: usize, fail_on_pool: bool) -> Vec<impl FnOnce() -> usize> {
        let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
        (0..threads + 1)
            .map(|i| {
                let b = barrier.clone();
                move || {
                    b.wait();
                    let on_pool = std::thread::current()
                        .name()
                        .is_some_and(|n| n.starts_with("strata-search"));
                    assert!(
                        !(fail_on_pool && on_pool),
                        "job {i} fails on a search thread"
                    );
                    i
                }
            })
            .collect()
    }

    #[test]
    fn a_panicking_job_panics_the_caller_and_the_pool_keeps_serving() {
        let threads = 2;
        let (_dir, pool) = pool(threads);
        let jobs = one_job_per_thread(threads, true);
        let p = pool.clone();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || p.run_all(jobs)));
        assert!(r.is_err(), "the jobs' panic reaches the caller");
        // Both search threads survived it and still take work (the barrier needs them).
        assert!(pool.threads.lock().iter().all(|h| !h.is_finished()));
        assert_eq!(
            pool.run_all(one_job_per_thread(threads, false)),
            vec![0, 1, 2]
        );
        pool.shutdown();
    }

    #[test]
    fn the_first_decided_candidate_wins_once_all_before_it_answered() {
        let c = || Some(Ok(Local::Continue));
        let f = |v: &'static str| Some(Ok(Local::Found(Some(Bytes::from(v)), Some(1))));
        let err = || Some(Err(crate::Error::corruption("bad block")));
        // (locals, expected decision index or None)
        type Case = (Vec<Option<Result<Local>>>, Option<usize>);
        let cases: Vec<Case> = vec![
            (vec![None, f("b")], None),    // the newer candidate has not answered
            (vec![c(), f("b")], Some(1)),  // it found nothing: the older one decides
            (vec![f("a"), None], Some(0)), // the newest decides at once
            (vec![c(), c()], Some(2)),     // nothing anywhere
            (vec![c(), err(), f("c")], Some(1)), // an error where sequential search stops
            (vec![c(), None, err()], None),
            (vec![], Some(0)),
        ];
        for (i, (locals, want)) in cases.into_iter().enumerate() {
            assert_eq!(decide(&locals).map(|d| d.0), want, "case {i}");
        }
    }
}
