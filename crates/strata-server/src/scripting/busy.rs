//! Scripts that run past `lua-time-limit` (redis' busy scripts): the server-wide list of them,
//! the per-thread watchdog each running script or library load has, and SCRIPT KILL.
//!
//! Every interpreter has a count hook ([`HOOK_EVERY`] Lua instructions) that calls [`check`].
//! A script past the limit registers itself in [`Busy`]; while any is registered the server
//! answers other clients' commands `BUSY` (`commands::dispatch`, except the few redis allows:
//! AUTH, HELLO, SCRIPT KILL, FUNCTION KILL and STATS, SHUTDOWN). SCRIPT KILL (or FUNCTION
//! KILL) marks the registered scripts killed when none of them has written — a script that
//! wrote is `UNKILLABLE`, as in redis: its writes are part of one atomic batch that either
//! commits whole or, after a kill, would have to be dropped mid-script. A killed script's next
//! hook (and every `redis.call` after it) raises an error; it ends, and the server is free.
//!
//! A script running inline on an event loop (`executor`: scripts may run there when their
//! reads hit the cache) must not hold that loop — and every connection on it — for long: past
//! [`INLINE_BUDGET`] the hook stops it ([`Guard::moved`]) and the executor reruns it on the
//! engine pool (a script's only effects are its pending writes, so a rerun is safe).
//!
//! Unlike redis, scripts do not stop the whole server while they run under the limit: they
//! hold only the key stripes they need (see `scripting`), so other clients run beside them.
//! Invariants: a script is registered at most once and always unregistered when its call
//! ends (the guard's drop, also on unwinding). Depends on `resp`; not on the command layer.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How many Lua instructions run between two watchdog checks.
pub const HOOK_EVERY: u32 = 100_000;

/// How long a script may run inline on an event loop before it is moved to the engine pool.
pub const INLINE_BUDGET: Duration = Duration::from_millis(5);

/// The error that stops a script moved off the event loop (never reaches a client).
const MOVED: &str = "the script is rerun on the engine pool";

/// The reply to other clients while a script is busy.
pub const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// The error a killed script ends with.
pub const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// Scripts running past the time limit, server-wide.
#[derive(Default)]
pub struct Busy {
    slow: Mutex<Vec<Arc<Slow>>>,
    count: AtomicUsize,
}

/// One script past the limit.
pub struct Slow {
    pub name: String,
    started: Instant,
    kill: AtomicBool,
    wrote: AtomicBool,
}

impl Busy {
    /// Whether some script runs past the limit (one atomic load: the fast path of every
    /// command).
    pub fn is_busy(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    fn register(&self, s: Arc<Slow>) {
        self.slow.lock().push(s);
        self.count.fetch_add(1, Relaxed);
    }

    fn unregister(&self, s: &Arc<Slow>) {
        let mut slow = self.slow.lock();
        if let Some(i) = slow.iter().position(|x| Arc::ptr_eq(x, s)) {
            slow.swap_remove(i);
            self.count.fetch_sub(1, Relaxed);
        }
    }

    /// SCRIPT KILL / FUNCTION KILL: `Ok` when the busy scripts were marked killed, else the
    /// error reply's text (`NOTBUSY`, `UNKILLABLE`).
    pub fn kill(&self) -> Result<(), &'static str> {
        let slow = self.slow.lock();
        if slow.is_empty() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if slow.iter().any(|s| s.wrote.load(Relaxed)) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        for s in slow.iter() {
            s.kill.store(true, Relaxed);
        }
        Ok(())
    }

    /// The longest-running busy script: its name and how long it has run (FUNCTION STATS).
    pub fn running(&self) -> Option<(String, Duration)> {
        let slow = self.slow.lock();
        let s = slow.iter().min_by_key(|s| s.started)?;
        Some((s.name.clone(), s.started.elapsed()))
    }
}

/// The running script of this thread, as the hook sees it. Set for every script call, so it
/// costs no allocation and no shared-counter traffic: the server's [`Busy`] by pointer (see
/// [`watch`]) and the name inline (cut at [`NAME_MAX`] bytes).
struct Watchdog {
    busy: *const Busy,
    name: [u8; NAME_MAX],
    name_len: usize,
    started: Instant,
    limit: Duration,
    wrote: bool,
    slow: Option<Arc<Slow>>,
    /// Runs inline on an event loop (see [`INLINE_BUDGET`]).
    inline: bool,
    /// Stopped to be rerun on the engine pool.
    moved: bool,
}

thread_local! {
    static WATCHDOG: RefCell<Option<Watchdog>> = const { RefCell::new(None) };
}

/// The longest script name the watchdog keeps (a SHA1 is 40 bytes).
const NAME_MAX: usize = 64;

/// Watches the script call it was created for; unregisters it when dropped. Borrows the
/// server's [`Busy`] for as long as the thread-local watchdog points at it.
pub struct Guard<'a>(std::marker::PhantomData<&'a Busy>);

/// Starts watching the script `name` that is about to run on this thread (`inline`: on an
/// event loop), counting its time from `started` (the command's start, when the caller has
/// read the clock already; now otherwise).
pub fn watch<'a>(
    busy: &'a Busy,
    name: &str,
    limit: Duration,
    inline: bool,
    started: Option<Instant>,
) -> Guard<'a> {
    let mut buf = [0u8; NAME_MAX];
    let name_len = name.len().min(NAME_MAX);
    buf[..name_len].copy_from_slice(&name.as_bytes()[..name_len]);
    WATCHDOG.with(|w| {
        *w.borrow_mut() = Some(Watchdog {
            busy: busy as *const Busy,
            name: buf,
            name_len,
            started: started.unwrap_or_else(Instant::now),
            limit,
            wrote: false,
            slow: None,
            inline,
            moved: false,
        })
    });
    Guard(std::marker::PhantomData)
}

impl Guard<'_> {
    /// Whether the script was stopped to be rerun on the engine pool (its result is void).
    pub fn moved(&self) -> bool {
        WATCHDOG.with(|w| w.borrow().as_ref().is_some_and(|w| w.moved))
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let w = WATCHDOG.with(|w| w.borrow_mut().take());
        if let Some(Watchdog {
            busy,
            slow: Some(s),
            limit,
            ..
        }) = w
        {
            tracing::warn!(
                "script {} ran for {} ms (lua-time-limit {} ms){}",
                s.name,
                s.started.elapsed().as_millis(),
                limit.as_millis(),
                if s.kill.load(Relaxed) { ", killed" } else { "" }
            );
            // SAFETY: the watchdog is set by `watch` from a `&'a Busy` and taken here, in the
            // drop of the `Guard<'a>` that borrows it: the pointer is live.
            unsafe { &*busy }.unregister(&s);
        }
    }
}

/// The count hook: registers a script past the limit; fails a killed one.
pub fn check() -> mlua::Result<mlua::VmState> {
    WATCHDOG.with(|w| {
        let mut w = w.borrow_mut();
        let Some(w) = w.as_mut() else {
            return Ok(mlua::VmState::Continue);
        };
        if w.moved || (w.inline && w.started.elapsed() >= INLINE_BUDGET) {
            w.moved = true;
            return Err(mlua::Error::runtime(MOVED));
        }
        match &w.slow {
            Some(s) if s.kill.load(Relaxed) => Err(mlua::Error::runtime(KILLED)),
            Some(_) => Ok(mlua::VmState::Continue),
            None if w.started.elapsed() >= w.limit => {
                let s = Arc::new(Slow {
                    name: String::from_utf8_lossy(&w.name[..w.name_len]).into_owned(),
                    started: w.started,
                    kill: AtomicBool::new(false),
                    wrote: AtomicBool::new(w.wrote),
                });
                // SAFETY: as in `Guard::drop`: set from a borrow its guard still holds.
                unsafe { &*w.busy }.register(s.clone());
                w.slow = Some(s);
                Ok(mlua::VmState::Continue)
            }
            None => Ok(mlua::VmState::Continue),
        }
    })
}

/// Whether the script running on this thread was killed or moved off its event loop: the
/// sandbox's `pcall`, `xpcall` and `coroutine.resume` then re-raise what they caught.
pub fn stopped() -> bool {
    WATCHDOG.with(|w| {
        w.borrow()
            .as_ref()
            .is_some_and(|w| w.moved || w.slow.as_ref().is_some_and(|s| s.kill.load(Relaxed)))
    })
}

/// Before a script's command: refuses it when the script was killed; records a write.
pub fn before_command(writes: bool) -> Result<(), &'static str> {
    WATCHDOG.with(|w| {
        let mut w = w.borrow_mut();
        let Some(w) = w.as_mut() else {
            return Ok(());
        };
        if w.moved {
            return Err(MOVED);
        }
        if let Some(s) = &w.slow {
            // Under the list's lock, as `Busy::kill` decides: a kill either sees this write
            // (UNKILLABLE) or stops the script before it.
            // SAFETY: as in `Guard::drop`: set from a borrow its guard still holds.
            let _decide = unsafe { &*w.busy }.slow.lock();
            if s.kill.load(Relaxed) {
                return Err(KILLED);
            }
            if writes {
                s.wrote.store(true, Relaxed);
            }
        }
        w.wrote |= writes;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_script_registers_and_only_one_without_writes_can_be_killed() {
        let busy = Busy::default();
        assert_eq!(
            busy.kill(),
            Err("NOTBUSY No scripts in execution right now.")
        );
        {
            let _g = watch(&busy, "s1", Duration::ZERO, false, None);
            assert!(check().is_ok());
            assert!(busy.is_busy());
            assert_eq!(busy.running().unwrap().0, "s1");
            before_command(true).unwrap();
            assert!(busy.kill().unwrap_err().starts_with("UNKILLABLE"));
        }
        assert!(!busy.is_busy());
        {
            let _g = watch(&busy, "s2", Duration::ZERO, false, None);
            before_command(false).unwrap();
            check().unwrap();
            busy.kill().unwrap();
            let e = check().err().expect("a killed script stops");
            assert!(e.to_string().contains("killed"), "{e}");
            assert_eq!(before_command(false), Err(KILLED));
        }
        assert!(!busy.is_busy());
        {
            let _g = watch(&busy, "fast", Duration::from_secs(3600), false, None);
            check().unwrap();
            assert!(!busy.is_busy());
        }
        let g = watch(&busy, "inline", Duration::from_secs(3600), true, None);
        check().unwrap();
        assert!(!g.moved());
        std::thread::sleep(INLINE_BUDGET);
        assert!(check().is_err());
        assert!(g.moved());
        assert_eq!(before_command(false), Err(MOVED));
    }
}
