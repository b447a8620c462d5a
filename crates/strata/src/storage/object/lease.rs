//! The lease on an object-store log location: one database at a time, on any node, writes a
//! log location (two nodes recovering the same URL after a node loss must not both write it).
//!
//! A directory log location is guarded by a file lock; an object store has no locks, only
//! conditional writes. The lease is a series of objects `LEASE/<generation:020>`, each created
//! with `PutMode::Create` (S3's `If-None-Match: *`, a hard link on `file://`), so that of two
//! parties creating the same generation exactly one succeeds. Each holds its creator's token,
//! or a release mark. Generations only grow, and the newest one always stays:
//! - **Acquire**: no generation, or a released newest one → create the next. Otherwise a holder
//!   may be alive: watch the newest generation; if a newer one appears, the holder renews and
//!   acquiring fails with `Locked` (unless that one is a release); if it stays the newest for a
//!   whole `ttl`, the holder is gone (it renews every `ttl / 4`) and creating the next
//!   generation takes the lease over. Then older generations are deleted.
//! - **Renew**: every `ttl / 4` the holder creates the next generation and deletes the one
//!   before. After every creation the holder lists the generations: a newer one than its own
//!   (or its next one existing with another token) means another party took the lease over,
//!   and the lease is lost for good — a holder that was silent cannot "renew" into a number the
//!   taker already passed.
//! - **Fence**: before each write to the log location (and to the database's capacity tier:
//!   `fence.rs`) the holder checks the lease, which is
//!   valid until half a `ttl` after the start of its last successful renewal, and the write's
//!   requests carry that instant as their deadline (no attempt is sent, or left running, past
//!   it). A taker waits a whole `ttl` from seeing that generation, so the holder's requests end
//!   before the taker's can start — given clocks that run at the same rate (no wall clock is
//!   compared), and a store that does not apply a request its client abandoned long after. A
//!   holder whose renewals were only late (a starved thread) renews on the spot rather than
//!   failing the write; a lease that cannot be renewed within a `ttl` fails it with `Locked`,
//!   one another party took over with `Fenced`, for good.
//! - **Release**: closing creates a release mark as the next generation, so the next opener
//!   need not wait, and numbers never go back.
//! - **Idle** (`renew_while_idle(false)`): a holder that went a whole `ttl` without a check
//!   (counted from its first: an open reading its WAL back renews throughout) stops renewing, so an idle database sends no request; its next write renews first, which
//!   fails with `Fenced` if another party took the lease over meanwhile (to that party the
//!   silent holder looked dead). The lease then guards writes only, not liveness.
//!
//! The store must offer conditional PUTs (S3, MinIO, R2, `file://`, `memory://` do): acquiring
//! probes that a second creation of its generation is refused. Depends on [`CapacityTier`]
//! alone; never on the engine.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use super::CapacityTier;
use crate::error::{ErrorRepr, Result};

const DIR: &str = "LEASE";
const RELEASED: &[u8] = b"strata lease released";

/// How long a holder may stay silent before another party takes its lease over. Default 20 s.
pub const DEFAULT_TTL: Duration = Duration::from_secs(20);

/// A held lease; released on drop.
pub(crate) struct Lease {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("location", &self.shared.what)
            .field("generation", &self.generation())
            .finish()
    }
}

struct Shared {
    tier: Arc<CapacityTier>,
    token: Bytes,
    ttl: Duration,
    what: String,
    state: Mutex<State>,
    cv: Condvar,
    /// Renew while no write checks the lease (the default), or stop after a `ttl` of that.
    renew_while_idle: std::sync::atomic::AtomicBool,
}

struct State {
    generation: u64,
    /// The lease may be used until then without renewing.
    valid_until: Instant,
    /// Why the lease is lost, once it is.
    lost: Option<String>,
    /// A writer found the lease expired and waits for a renewal now.
    wanted: bool,
    stop: bool,
    /// The last check (a write about to be sent); `None` before the first (an open reading
    /// its WAL back: no idle pause then).
    last_used: Option<Instant>,
}

/// What creating a generation found.
#[derive(Debug, PartialEq)]
enum Created {
    /// Created by this request: the lease is ours from when it was sent.
    Now,
    /// Ours, but created by an earlier attempt whose answer was lost (when is unknown).
    Earlier,
    /// Another party's.
    Theirs,
}

fn object(generation: u64) -> String {
    format!("{DIR}/{generation:020}")
}

/// The generations listed, newest last.
fn generations(tier: &CapacityTier, deadline: Option<Instant>) -> Result<Vec<u64>> {
    let mut g: Vec<u64> = tier
        .list_until(&format!("{DIR}/"), deadline)?
        .iter()
        .filter_map(|(name, _)| name.rsplit('/').next()?.parse().ok())
        .collect();
    g.sort_unstable();
    Ok(g)
}

/// A token no other holder has: the process, the time and a per-process counter, hashed with
/// randomly keyed hashers.
fn new_token() -> Bytes {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = (
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
        COUNTER.fetch_add(1, Ordering::Relaxed),
    );
    let mut words = [0u64; 2];
    for (i, w) in words.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        std::hash::Hash::hash(&seed, &mut h);
        *w = h.finish();
    }
    Bytes::from(format!(
        "strata lease {:016x}{:016x} pid {}",
        words[0], words[1], seed.0
    ))
}

fn locked(what: &str, why: impl std::fmt::Display) -> crate::Error {
    ErrorRepr::Locked(format!("{what}: {why}")).into()
}

impl Shared {
    /// Creates `generation` holding `body`, with requests ending by `deadline`.
    fn create(&self, generation: u64, body: &Bytes, deadline: Option<Instant>) -> Result<Created> {
        let path = self.tier.path(&object(generation));
        if self.tier.put_if_absent(&path, body.clone(), deadline)? {
            return Ok(Created::Now);
        }
        match self.tier.get_whole(&path, deadline)? {
            Some(b) if b == *body => Ok(Created::Earlier),
            Some(_) => Ok(Created::Theirs),
            // Refused yet absent: a conflicting request still in flight (S3's 409), or a
            // generation deleted since. Neither proves another holder: try again.
            None => Err(crate::Error::io(
                format!("lease generation {generation}"),
                std::io::Error::other("refused but not found; retried"),
            )),
        }
    }

    /// After creating `generation`, one listing: whether a newer generation exists (another
    /// party has gone past it: `true`, and nothing is deleted), else the generations below it
    /// are deleted (best effort: leftovers only make a later opener list more).
    fn settle(&self, generation: u64, deadline: Option<Instant>) -> Result<bool> {
        let gs = generations(&self.tier, deadline)?;
        if gs.last() > Some(&generation) {
            return Ok(true);
        }
        for g in gs.into_iter().filter(|g| *g < generation) {
            if let Err(e) = self
                .tier
                .delete_until(&self.tier.path(&object(g)), deadline)
            {
                tracing::warn!(lease = %self.what, error = %e, "could not delete an old lease generation");
                break;
            }
        }
        Ok(false)
    }

    fn holds(&self, generation: u64, body: &[u8], deadline: Option<Instant>) -> Result<bool> {
        let path = self.tier.path(&object(generation));
        Ok(self.tier.get_whole(&path, deadline)?.as_deref() == Some(body))
    }

    /// One renewal: the next generation, or the lease lost. Every request ends within half
    /// a ttl. Returns whether the lease is valid after it.
    fn renew(&self) -> bool {
        let start = Instant::now();
        let deadline = Some(start + self.ttl / 2);
        let generation = self.state.lock().generation;
        let next = generation + 1;
        let r = self.create(next, &self.token, deadline).and_then(|c| {
            // Ours, yet another party went past it: a stale holder's late "renewal".
            if c != Created::Theirs && self.settle(next, deadline)? {
                Ok(Created::Theirs)
            } else {
                Ok(c)
            }
        });
        let valid = {
            let mut st = self.state.lock();
            match &r {
                Ok(Created::Now) => {
                    st.generation = next;
                    st.valid_until = start + self.ttl / 2;
                }
                // Ours since some earlier attempt: its start is unknown, so no validity is
                // taken from it; the next renewal (soon: the lease is not valid) gives some.
                Ok(Created::Earlier) => st.generation = next,
                Ok(Created::Theirs) => {
                    tracing::error!(lease = %self.what, generation, "the log location's lease was taken over by another database");
                    st.lost = Some(format!(
                        "another database took the lease over (generation {next} or later)"
                    ));
                }
                // A failed request: the lease stays ours until it expires; retried soon.
                Err(e) => tracing::warn!(lease = %self.what, error = %e, "lease renewal failed"),
            }
            st.wanted = false;
            self.cv.notify_all();
            st.valid_until > Instant::now()
        };
        valid
    }

    fn run(&self) {
        let mut next = Instant::now() + self.ttl / 4;
        // After a failed renewal, writers waiting for one do not hurry the next: a store
        // refusing requests is not asked again at once.
        let mut hurry = true;
        loop {
            {
                let mut st = self.state.lock();
                loop {
                    if st.stop || st.lost.is_some() {
                        return;
                    }
                    if st.wanted && hurry {
                        break;
                    }
                    let now = Instant::now();
                    let idle = !self
                        .renew_while_idle
                        .load(std::sync::atomic::Ordering::Relaxed)
                        && !st.wanted
                        && st.last_used.is_some_and(|t| now >= t + self.ttl);
                    if idle {
                        // No write for a whole ttl: no renewal until one checks the lease.
                        self.cv.wait(&mut st);
                        continue;
                    }
                    if now >= next {
                        break;
                    }
                    self.cv.wait_until(&mut st, next);
                }
            }
            let valid = self.renew();
            hurry = valid;
            // While the lease is not valid (a failed or answer-less renewal), try again sooner.
            next = Instant::now() + if valid { self.ttl / 4 } else { self.ttl / 16 };
        }
    }

    /// Marks the lease released (the next generation), unless it is lost: the next opener
    /// need not wait. Best effort.
    fn release(&self) {
        let (lost, mut generation) = {
            let st = self.state.lock();
            (st.lost.is_some(), st.generation)
        };
        if lost {
            return;
        }
        let deadline = Some(Instant::now() + self.ttl / 2);
        // A renewal whose answer was lost may have created the next one with our token.
        if self
            .holds(generation + 1, &self.token, deadline)
            .unwrap_or(false)
        {
            generation += 1;
        }
        let mark = Bytes::from_static(RELEASED);
        match self.create(generation + 1, &mark, deadline) {
            Ok(Created::Now | Created::Earlier) => {
                let _ = self.settle(generation + 1, deadline);
            }
            Ok(Created::Theirs) => {}
            Err(e) => {
                tracing::warn!(lease = %self.what, error = %e, "could not release the lease; the next opener waits out its ttl")
            }
        }
    }
}

/// What a write holds while its requests run: the lease stays held (not released under it)
/// until the write is done, and its requests end by `until`.
#[derive(Debug)]
pub(crate) struct LeaseGuard {
    _lease: Arc<Lease>,
    pub(crate) until: Instant,
}

impl Lease {
    /// Takes the lease of the log location `tier` names (`what` names it in errors), waiting
    /// up to about `ttl` to learn whether an earlier holder is gone; `Locked` if another
    /// holder is alive.
    pub(crate) fn acquire(tier: Arc<CapacityTier>, what: &Path, ttl: Duration) -> Result<Lease> {
        let ttl = ttl.max(Duration::from_millis(40));
        let shared = Arc::new(Shared {
            tier,
            token: new_token(),
            ttl,
            what: what.display().to_string(),
            state: Mutex::new(State {
                generation: 0,
                valid_until: Instant::now(),
                lost: None,
                wanted: false,
                stop: false,
                last_used: None,
            }),
            cv: Condvar::new(),
            renew_while_idle: std::sync::atomic::AtomicBool::new(true),
        });
        let s = &shared;
        // Taken before any wait: after a takeover the lease is valid only briefly, and the
        // first write renews it (a taker starved during its wait must not trust that wait).
        let start = Instant::now();
        let target = match generations(&s.tier, None)?.last() {
            None => 1,
            Some(&newest) if s.holds(newest, RELEASED, None)? => newest + 1,
            Some(&newest) => {
                let since = Instant::now();
                tracing::info!(lease = %s.what, generation = newest, ?ttl, "the log location is leased: waiting to learn whether its holder is alive");
                let mut target = newest + 1;
                while since.elapsed() < ttl {
                    std::thread::sleep((ttl / 8).min(ttl.saturating_sub(since.elapsed())));
                    match generations(&s.tier, None)?.last() {
                        Some(&g) if g == newest => {}
                        Some(&g) if g > newest && s.holds(g, RELEASED, None)? => {
                            target = g + 1;
                            break;
                        }
                        Some(&g) if g > newest => {
                            return Err(locked(
                                &s.what,
                                "held by another database that renews its lease",
                            ))
                        }
                        // Deleted by hand, or by an older holder's cleanup: take it.
                        _ => break,
                    }
                }
                if target == newest + 1 {
                    tracing::warn!(lease = %s.what, generation = target, "taking over the lease of a holder silent for its whole ttl");
                }
                target
            }
        };
        let mut created = s.create(target, &s.token, None);
        if created.is_err() {
            // Refused but unreadable (a conflicting request in flight): once more.
            std::thread::sleep(ttl / 16);
            created = s.create(target, &s.token, None);
        }
        if created? == Created::Theirs {
            return Err(locked(&s.what, "another database took the lease first"));
        }
        {
            let mut st = s.state.lock();
            st.generation = target;
            st.valid_until = start + ttl / 2;
        }
        // From here a failure releases what was taken (the lease's drop).
        let mut lease = Lease {
            shared: shared.clone(),
            thread: None,
        };
        if s.settle(target, Some(Instant::now() + ttl / 2))? {
            s.state.lock().lost = Some("another database took the lease first".into());
            return Err(locked(&s.what, "another database took the lease first"));
        }
        // A store that ignores conditional PUTs would let two holders in: probe it.
        let path = s.tier.path(&object(target));
        if s.tier.put_if_absent(&path, s.token.clone(), None)? {
            return Err(crate::Error::invalid(format!(
                "{}: the object store accepted a second conditional PUT of {path}: it does not \
                 honour If-None-Match, which the log location's lease needs",
                s.what
            )));
        }
        let runner = shared.clone();
        lease.thread = Some(
            std::thread::Builder::new()
                .name("strata-lease".into())
                .spawn(move || runner.run())
                .map_err(|e| crate::Error::io("lease renewal thread", e))?,
        );
        Ok(lease)
    }

    /// Whether the lease still allows writing: a guard to hold while the write's requests
    /// run, which must end by its `until`. A lease within an eighth of a ttl of expiring (its
    /// renewals late) is renewed on the spot first; `Fenced` once another database took it
    /// over, `Locked` if it cannot be renewed within a `ttl` (the store unreachable: a later
    /// write may renew it).
    pub(crate) fn check(self: &Arc<Self>) -> Result<LeaseGuard> {
        let s = &self.shared;
        let mut st = s.state.lock();
        let now = Instant::now();
        if st.last_used.is_some_and(|t| now >= t + s.ttl) {
            // The renewal thread may be pausing (idle): it renews again from now on.
            s.cv.notify_all();
        }
        st.last_used = Some(now);
        let deadline = now + s.ttl;
        loop {
            if let Some(why) = &st.lost {
                return Err(ErrorRepr::Fenced(format!("{}: {why}", s.what)).into());
            }
            if Instant::now() + s.ttl / 8 < st.valid_until {
                return Ok(LeaseGuard {
                    _lease: self.clone(),
                    until: st.valid_until,
                });
            }
            if st.stop || Instant::now() >= deadline {
                return Err(locked(&s.what, "the lease could not be renewed"));
            }
            st.wanted = true;
            s.cv.notify_all();
            s.cv.wait_until(&mut st, deadline);
        }
    }

    /// Whether the lease is renewed while no write checks it (the default), or only from a
    /// write's check on after a whole ttl without one (module docs: Idle).
    pub(crate) fn renew_while_idle(&self, renew: bool) {
        let _st = self.shared.state.lock();
        self.shared
            .renew_while_idle
            .store(renew, std::sync::atomic::Ordering::Relaxed);
        self.shared.cv.notify_all();
    }

    /// The current generation.
    pub(crate) fn generation(&self) -> u64 {
        self.shared.state.lock().generation
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut st = self.shared.state.lock();
            st.stop = true;
            self.shared.cv.notify_all();
        }
        // A renewal in flight ends within half a ttl (its requests' deadline).
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.shared.release();
    }
}

#[cfg(test)]
impl Lease {
    /// Stops renewing without releasing, as a process killed while holding the lease would.
    /// Returns the generation it stopped at.
    fn abandon(mut self) -> u64 {
        self.shared.state.lock().stop = true;
        self.shared.cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let g = self.generation();
        std::mem::forget(self);
        g
    }
}

#[cfg(test)]
mod tests {
    use super::super::CapacityOptions;
    use super::*;
    use crate::ErrorKind;

    /// Long enough that a holder's renewal thread runs within it on a loaded machine.
    const TTL: Duration = Duration::from_secs(3);

    fn tier(name: &str) -> Arc<CapacityTier> {
        let c = CapacityOptions::new(format!("memory://lease-test-{name}"));
        CapacityTier::open(&c, None, Default::default()).unwrap()
    }

    fn acquire(t: &Arc<CapacityTier>) -> Result<Lease> {
        Lease::acquire(t.clone(), Path::new("log/LOCK"), TTL)
    }

    fn newest(t: &CapacityTier) -> u64 {
        *generations(t, None).unwrap().last().expect("a generation")
    }

    /// Another party's generations `from..to` (as a taker's would be).
    fn foreign(t: &CapacityTier, from: u64, to: u64) {
        for g in from..to {
            t.put_if_absent(&t.path(&object(g)), Bytes::from_static(b"another"), None)
                .unwrap();
        }
    }

    fn wait_lost(a: &Arc<Lease>) {
        let deadline = Instant::now() + 4 * TTL;
        loop {
            match a.check() {
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
                    return;
                }
                Ok(_) => assert!(Instant::now() < deadline, "the loss was never noticed"),
            }
            std::thread::sleep(TTL / 20);
        }
    }

    #[test]
    fn a_live_holder_keeps_its_lease_and_a_released_one_is_free() {
        let t = tier("live");
        let a = Arc::new(acquire(&t).unwrap());
        assert_eq!(a.generation(), 1);
        let e = acquire(&t).expect_err("the holder is alive");
        assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
        assert!(newest(&t) > 1, "renewed meanwhile");
        a.check().unwrap();
        drop(a);
        let mark = newest(&t);
        assert_eq!(
            generations(&t, None).unwrap(),
            vec![mark],
            "only the release mark"
        );
        assert_eq!(
            t.get_whole(&t.path(&object(mark)), None)
                .unwrap()
                .as_deref(),
            Some(RELEASED)
        );
        let start = Instant::now();
        let b = Arc::new(acquire(&t).unwrap());
        assert!(
            start.elapsed() < TTL,
            "a released lease is taken without waiting"
        );
        assert_eq!(b.generation(), mark + 1, "numbers never go back");
        b.check().unwrap();
    }

    /// `renew_while_idle(false)`: a whole ttl without a check and the holder stops renewing
    /// (no request); a check renews on the spot, or, once another party took the lease over
    /// meanwhile, fails with `Fenced`.
    #[test]
    fn an_idle_holder_sends_nothing_and_its_next_write_renews_or_is_fenced() {
        let ttl = Duration::from_millis(400);
        let t = tier("idle");
        let a = Arc::new(Lease::acquire(t.clone(), Path::new("log/LOCK"), ttl).unwrap());
        a.renew_while_idle(false);
        // Before its first check (an open replaying its WAL) the holder renews as usual.
        let g = newest(&t);
        std::thread::sleep(ttl * 2);
        assert!(newest(&t) > g, "paused before the first check");
        drop(a.check().unwrap());
        std::thread::sleep(ttl * 2);
        let g = newest(&t);
        std::thread::sleep(ttl * 2);
        assert_eq!(newest(&t), g, "renewed while idle");
        drop(a.check().expect("renewed on the spot"));
        assert!(newest(&t) > g, "the check did not renew");
        // Busy: renewed as usual.
        let g = newest(&t);
        for _ in 0..6 {
            drop(a.check().unwrap());
            std::thread::sleep(ttl / 4);
        }
        assert!(newest(&t) > g, "not renewed while in use");
        // Idle again, and taken over by a party that found the holder silent.
        std::thread::sleep(ttl * 2);
        let g = newest(&t);
        foreign(&t, g + 1, g + 3);
        let Err(e) = a.check() else {
            panic!("a taken-over lease checked valid");
        };
        assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
    }

    #[test]
    fn a_silent_holder_is_taken_over_after_its_ttl() {
        let t = tier("silent");
        let g = acquire(&t).unwrap().abandon();
        let start = Instant::now();
        let b = acquire(&t).unwrap();
        assert!(start.elapsed() >= TTL, "waited out the ttl");
        assert_eq!(b.generation(), g + 1);
        assert_eq!(
            generations(&t, None).unwrap(),
            vec![g + 1],
            "the old generation deleted"
        );
    }

    #[test]
    fn a_holder_whose_lease_was_taken_stops_writing() {
        let t = tier("taken");
        let a = Arc::new(acquire(&t).unwrap());
        // Another party creates the next generations first (as a taker after a long silence).
        let g = a.generation();
        foreign(&t, g + 1, g + 50);
        wait_lost(&a);
        drop(a);
        assert_eq!(
            t.get_whole(&t.path(&object(g + 49)), None)
                .unwrap()
                .as_deref(),
            Some(&b"another"[..]),
            "a lost lease leaves the taker's generations alone"
        );
    }

    #[test]
    fn a_stale_holder_cannot_renew_into_a_number_the_taker_passed() {
        let t = tier("stale");
        // Renewals only on demand here (a long ttl), so the one below is the first.
        let a = Arc::new(
            Lease::acquire(t.clone(), Path::new("log/LOCK"), Duration::from_secs(600)).unwrap(),
        );
        let g = a.generation();
        // A taker went two generations past and deleted the one after the holder's: the
        // holder's renewal creates that one, then finds a newer one.
        foreign(&t, g + 2, g + 3);
        a.shared.state.lock().valid_until = Instant::now() - Duration::from_millis(1);
        let e = a.check().expect_err("renewed into a passed number");
        assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
        assert_eq!(a.generation(), g, "the passed generation was never adopted");
    }

    #[test]
    fn late_renewals_renew_on_the_spot_instead_of_failing() {
        let t = tier("late");
        let a = Arc::new(acquire(&t).unwrap());
        let g = a.generation();
        // As if the renewal thread had been starved past the validity.
        a.shared.state.lock().valid_until = Instant::now() - Duration::from_millis(1);
        assert!(a.check().unwrap().until > Instant::now());
        assert!(a.generation() > g);
    }

    #[test]
    fn a_store_without_conditional_puts_is_refused() {
        use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, PutResult};
        /// Accepts every PUT, conditional or not.
        #[derive(Debug)]
        struct Careless(object_store::memory::InMemory);
        impl std::fmt::Display for Careless {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "careless")
            }
        }
        #[async_trait::async_trait]
        impl ObjectStore for Careless {
            async fn put_opts(
                &self,
                p: &object_store::path::Path,
                payload: PutPayload,
                mut opts: PutOptions,
            ) -> object_store::Result<PutResult> {
                opts.mode = PutMode::Overwrite;
                self.0.put_opts(p, payload, opts).await
            }
            async fn put_multipart_opts(
                &self,
                p: &object_store::path::Path,
                opts: object_store::PutMultipartOptions,
            ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
                self.0.put_multipart_opts(p, opts).await
            }
            async fn get_opts(
                &self,
                p: &object_store::path::Path,
                o: object_store::GetOptions,
            ) -> object_store::Result<object_store::GetResult> {
                self.0.get_opts(p, o).await
            }
            fn delete_stream(
                &self,
                locations: futures::stream::BoxStream<
                    'static,
                    object_store::Result<object_store::path::Path>,
                >,
            ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::path::Path>>
            {
                self.0.delete_stream(locations)
            }
            fn list(
                &self,
                prefix: Option<&object_store::path::Path>,
            ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>>
            {
                self.0.list(prefix)
            }
            async fn list_with_delimiter(
                &self,
                prefix: Option<&object_store::path::Path>,
            ) -> object_store::Result<object_store::ListResult> {
                self.0.list_with_delimiter(prefix).await
            }
            async fn copy_opts(
                &self,
                from: &object_store::path::Path,
                to: &object_store::path::Path,
                o: object_store::CopyOptions,
            ) -> object_store::Result<()> {
                self.0.copy_opts(from, to, o).await
            }
        }
        let c = CapacityOptions::new("memory://unused");
        let store: Arc<dyn ObjectStore> = Arc::new(Careless(Default::default()));
        let t = CapacityTier::open(&c, Some(store), Default::default()).unwrap();
        let e = acquire(&t).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
}
