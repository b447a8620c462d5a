//! What a handler sees while its segment runs: [`Pending`], the segment's uncommitted writes
//! (which later commands of the segment read instead of the engine) and the engine values read
//! ahead for its GETs, and [`Ctx`], the handler's view — reads through the pending writes, then
//! the commit group the segment chains on, then the read-ahead, then the engine (`cache_only`
//! inline, an `Incomplete` flagging the segment for a rerun on the pool); writes into the
//! segment's batch. Invariant: a read never skips a newer layer (pending writes before the
//! group's, before the engine). Depends on `server::Shared`, `store`, `commit_group`, `value`;
//! never on the network layer or the command table.

use std::collections::HashMap;

use bytes::Bytes;

use strata::WriteBatch;

use super::errors;
use crate::commit_group::{Kind, Lookup};
use crate::expiry::is_expired;
use crate::fasthash::FastHash;
use crate::keyspace::{self, DB0_END, DB0_START, MAX_USER_KEY, SUB_END, SUB_START};
use crate::resp::Reply;
use crate::server::Shared;
use crate::session::Session;
use crate::store::{Store, StoreError};
use crate::value::{self, Entry, ValueType};

/// Writes of the segment being executed, not yet committed: the batch that will be
/// committed, and the new raw value (or deletion) of every key it writes, which later commands
/// of the same segment read instead of the engine; and the engine values read ahead for it.
#[derive(Default)]
pub struct Pending {
    pub batch: WriteBatch,
    /// The commands this segment ran, for INFO `commandstats` (counted when the segment is
    /// finished, so a segment discarded and rerun counts once).
    pub calls: Vec<crate::stats::Call>,
    pub(crate) overlay: HashMap<Vec<u8>, Option<Bytes>, FastHash>,
    /// The same for collection elements, by engine sub-key: what the point-lookup collection
    /// commands of the segment wrote (see `CommandSpec::alone`).
    pub(crate) elems: HashMap<Vec<u8>, Option<Bytes>, FastHash>,
    /// Engine values read ahead for the segment's GETs and MGETs (see
    /// `executor::prefetch_keys`); `Ctx::raw` and `Ctx::raw_many` answer from here first.
    pub(crate) reads: ReadAhead,
    /// Running inline on the event loop: engine reads are `cache_only`.
    pub inline: bool,
    /// An inline engine read needed I/O (`ErrorKind::Incomplete`): the segment is discarded
    /// and rerun on the engine pool.
    pub would_block: std::cell::Cell<bool>,
    /// Keyspace hits and misses of the segment's commands, added to the server's statistics
    /// only if the segment is not discarded (so a rerun does not count twice).
    pub hits: std::cell::Cell<u64>,
    pub misses: std::cell::Cell<u64>,
    /// The commit group the segment chains on and the stripes it chains on (see `locks`):
    /// reads of keys of those stripes that miss the segment's own pending writes look at the
    /// group's before the engine. (No other key can be in the group's writes: its stripe is
    /// free, or held by this segment, or by a segment not in the group.)
    pub chain: Option<(u64, Vec<usize>)>,
    /// That group was taken by its leader before the segment joined it: the segment is
    /// discarded and reruns (`commit_group::Outcome::Stale`).
    pub stale: std::cell::Cell<bool>,
    /// The batch holds a range deletion (FLUSHDB, FLUSHALL).
    ranges: bool,
    /// The function registry as this segment's FUNCTION commands left it (see
    /// `commands::functions`): installed only once the segment's write committed.
    pub functions: Option<crate::scripting::functions::Registry>,
    /// The segment was started while a script was busy: its commands are refused `BUSY` (but
    /// the allowed few) even if the script ends while it runs (`executor::busy_segment`).
    pub refuse_busy: bool,
    /// The segment runs an EXEC's queue (blocking commands answer as if timed out).
    pub in_exec: bool,
    /// A blocking command found its keys empty and registered to wait (see `blocking`); the
    /// executor moves it into the session and stops the batch there.
    pub block: Option<crate::blocking::Blocked>,
    /// A blocked command rerun after a wake found its keys empty again: it waits on, in its
    /// place.
    pub blocks_again: bool,
    /// The user keys the segment wrote, collected only while some client is blocked: they are
    /// signalled once the write committed (`executor::finish_segment`).
    pub touched: Vec<Bytes>,
    /// Messages PUBLISHed by the segment's commands, delivered once it is finished (a segment
    /// discarded and rerun must not deliver twice).
    pub publishes: Vec<crate::pubsub::Publish>,
    /// The keys of a blocked command that was served (or failed) on its rerun in this segment:
    /// those its segment did not write are signalled after the commit, since a wake for one
    /// of them may have been used by a pop from another (see `executor::finish_segment`).
    pub released: Vec<Bytes>,
    /// The batch holds writes outside database 0 (function libraries), which `take_batch`
    /// must keep as they are.
    unkeyed: bool,
    /// The segment holds every stripe (a script may then touch any key).
    pub every_stripe: bool,
    /// While a write command runs with keyspace notifications on (see `notify`): the
    /// database-0 keys it wrote (`true`: deleted), in order.
    pub(crate) notify_writes: Option<Vec<crate::notify::Write>>,
    /// `n` (new-key events) is on: a write looks whether its key existed first.
    pub(crate) notify_new: bool,
    /// Events a handler raised itself (`Ctx::notify`), for the running command.
    pub(crate) notify_notes: Vec<crate::notify::Event>,
    /// A script called a command on a key it did not declare while the segment holds only
    /// the declared keys' stripes: the segment is discarded and rerun holding every stripe
    /// (`scripting`).
    pub needs_every_stripe: std::cell::Cell<bool>,
    /// When the running command started (`commands::dispatch` reads the clock once per
    /// command; a script's watchdog starts from the same reading).
    pub(crate) command_started: Option<std::time::Instant>,
}

impl Pending {
    /// Whether the batch holds a range deletion, which the pending-write maps do not show.
    pub fn has_ranges(&self) -> bool {
        self.ranges
    }
}

impl Pending {
    pub fn new(inline: bool) -> Self {
        Pending {
            calls: Vec::new(),
            batch: WriteBatch::default(),
            overlay: HashMap::default(),
            elems: HashMap::default(),
            reads: ReadAhead::default(),
            inline,
            would_block: std::cell::Cell::new(false),
            hits: std::cell::Cell::new(0),
            misses: std::cell::Cell::new(0),
            chain: None,
            stale: std::cell::Cell::new(false),
            ranges: false,
            unkeyed: false,
            in_exec: false,
            block: None,
            blocks_again: false,
            touched: Vec::new(),
            publishes: Vec::new(),
            released: Vec::new(),
            refuse_busy: false,
            functions: None,
            every_stripe: false,
            needs_every_stripe: std::cell::Cell::new(false),
            notify_writes: None,
            notify_new: false,
            notify_notes: Vec::new(),
            command_started: None,
        }
    }

    /// The segment's batch, with each key written once (its last write): a pipeline that
    /// writes one key many times — increments of a counter, pushes to one list, each of which
    /// rewrites the list's metadata — costs the engine one entry per key. The entries left out
    /// would be invisible to every reader anyway, since the batch is applied atomically (and
    /// an engine limit is judged on what is written: an oversized value overwritten later in
    /// the segment no longer refuses it).
    pub fn take_batch(&mut self) -> WriteBatch {
        let written = self.overlay.len() + self.elems.len();
        if self.ranges || self.unkeyed || self.batch.len() <= written {
            return std::mem::take(&mut self.batch);
        }
        self.batch.clear();
        let mut b = WriteBatch::new();
        for (key, v) in &self.overlay {
            let k = keyspace::data_key(key);
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        for (k, v) in &self.elems {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        b
    }

    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }
}

/// Values read ahead for a segment's GETs and MGETs, by user key, in command order (see
/// `executor::prefetch_keys`). Commands consume them in the order they were read, so a lookup
/// first tries the entry after the last one found (one key comparison) and only then scans;
/// a segment holds at most `PREFETCH_MAX` of them. No hashing, no allocation per key: under a
/// pipeline of GETs the map this replaced (engine key → value) cost 9% of the server's time.
#[derive(Default)]
pub(crate) struct ReadAhead {
    keys: Vec<Bytes>,
    values: Vec<Option<Bytes>>,
    /// Where the next lookup starts.
    next: std::cell::Cell<usize>,
}

impl ReadAhead {
    /// Holds `values[i]` for `keys[i]` (a key given twice has the same value twice: both were
    /// read at one snapshot).
    pub(crate) fn fill(&mut self, keys: Vec<Bytes>, values: Vec<Option<Bytes>>) {
        debug_assert_eq!(keys.len(), values.len());
        self.keys = keys;
        self.values = values;
        self.next.set(0);
    }

    /// Answers nothing more (see `executor::prefetch_keys`).
    pub(crate) fn close(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.next.set(0);
    }

    /// The value read ahead for `user_key` (`None`: not read ahead).
    pub(crate) fn get(&self, user_key: &[u8]) -> Option<&Option<Bytes>> {
        if self.keys.is_empty() {
            return None;
        }
        let next = self.next.get();
        let at = if self.keys.get(next).is_some_and(|k| k[..] == *user_key) {
            next
        } else {
            self.keys.iter().position(|k| k[..] == *user_key)?
        };
        self.next.set(at + 1);
        self.values.get(at)
    }
}

/// What a handler sees.
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub session: &'a mut Session,
    /// Command time in Unix milliseconds (one clock reading per batch, as Redis takes one per
    /// command).
    pub now: u64,
    pub pending: &'a mut Pending,
}

impl Ctx<'_> {
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// [`Store::scan`] of the live keys (key, type) from the engine key `from` on, with the
    /// segment's own writes merged in — those of earlier commands of an EXEC (a scan otherwise
    /// runs in a segment of its own, see `CommandSpec::alone`) — and nothing of the engine's
    /// after a FLUSHDB of the segment. Returns the engine key to resume at, as `Store::scan`.
    pub fn scan_keys(
        &self,
        from: Option<&[u8]>,
        max_examined: usize,
        mut visit: impl FnMut(&[u8], Option<ValueType>),
    ) -> Result<Option<Vec<u8>>, Reply> {
        let now = self.now;
        if self.pending.overlay.is_empty() && !self.pending.ranges {
            return Ok(self
                .store()
                .scan(from, max_examined, now, |k, t, _| visit(k, t))?);
        }
        // The engine's part (none after a FLUSHDB), then the segment's writes up to where it
        // stopped, merged in engine-key order.
        let mut engine: Vec<(Vec<u8>, Option<ValueType>)> = Vec::new();
        let next = if self.pending.ranges {
            None
        } else {
            self.store().scan(from, max_examined, now, |k, t, _| {
                engine.push((keyspace::data_key(k), t));
            })?
        };
        let mut mine: Vec<(Vec<u8>, &Option<Bytes>)> = self
            .pending
            .overlay
            .iter()
            .map(|(k, v)| (keyspace::data_key(k), v))
            .filter(|(dk, _)| {
                from.is_none_or(|f| dk.as_slice() >= f)
                    && next.as_deref().is_none_or(|n| dk.as_slice() < n)
            })
            .collect();
        mine.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut mine = mine.into_iter().peekable();
        let mut engine = engine.into_iter().peekable();
        loop {
            let take_mine = match (mine.peek(), engine.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((m, _)), Some((e, _))) => m <= e,
            };
            if take_mine {
                let Some((dk, raw)) = mine.next() else { break };
                if engine.peek().is_some_and(|(e, _)| *e == dk) {
                    engine.next();
                }
                let Some(raw) = raw else { continue };
                let (vtype, at) = value::peek(raw).map_err(StoreError::from)?;
                if !is_expired(at, now) {
                    visit(keyspace::user_key(&dk).unwrap_or_default(), vtype);
                }
            } else if let Some((dk, t)) = engine.next() {
                visit(keyspace::user_key(&dk).unwrap_or_default(), t);
            }
        }
        Ok(next)
    }

    /// A point lookup of an engine key: `cache_only` when running inline, and an
    /// `Incomplete` answer flags the segment for a rerun on the engine pool.
    pub fn engine_get(&self, engine_key: &[u8]) -> Result<Option<Bytes>, Reply> {
        let opts = strata::ReadOptions {
            cache_only: self.pending.inline,
            ..Default::default()
        };
        self.shared
            .store
            .get_opt(&opts, engine_key)
            .map_err(|e| self.engine_error(e))
    }

    /// An engine error as a reply, noting an `Incomplete` (see [`Ctx::engine_get`]).
    pub fn engine_error(&self, e: strata::Error) -> Reply {
        if e.kind() == strata::ErrorKind::Incomplete {
            self.pending.would_block.set(true);
        }
        Reply::from(StoreError::from(e))
    }

    /// What the commit group this segment chains on holds for `key`, whose stripe is that of
    /// `lock_key` (`None`: read the engine). A group taken meanwhile flags the segment stale and
    /// answers "absent": the segment's results are discarded.
    pub(crate) fn group_get(
        &self,
        kind: Kind,
        lock_key: &[u8],
        key: &[u8],
    ) -> Option<Option<Bytes>> {
        let (epoch, stripes) = self.pending.chain.as_ref()?;
        let stripe = self.shared.store.locks().index(lock_key);
        if !stripes.contains(&stripe) {
            return None;
        }
        match self.shared.commit_groups.lookup(*epoch, kind, key) {
            Lookup::Found(v) => Some(v),
            Lookup::Miss => None,
            Lookup::Stale => {
                self.pending.stale.set(true);
                Some(None)
            }
        }
    }

    /// The element writes under `prefix` of the commit group this segment chains on, if it
    /// chains on the stripe of `lock_key` (empty otherwise), in key order: what an ordered scan
    /// of the key's elements merges over the engine's. A group taken meanwhile flags the
    /// segment stale and answers "none": the segment's results are discarded.
    pub(crate) fn group_elems_under(
        &self,
        lock_key: &[u8],
        prefix: &[u8],
    ) -> Vec<(Vec<u8>, Option<Bytes>)> {
        let Some((epoch, stripes)) = self.pending.chain.as_ref() else {
            return Vec::new();
        };
        if !stripes.contains(&self.shared.store.locks().index(lock_key)) {
            return Vec::new();
        }
        self.shared
            .commit_groups
            .elems_under(*epoch, prefix)
            .unwrap_or_else(|| {
                self.pending.stale.set(true);
                Vec::new()
            })
    }

    /// What the segment's pending writes, then those of the group it chains on, hold for
    /// `key` (`None`: read the engine).
    fn pending_raw(&self, key: &[u8]) -> Option<Option<Bytes>> {
        match self.pending.overlay.get(key) {
            Some(v) => Some(v.clone()),
            // After a FLUSHDB earlier in the transaction, nothing older exists.
            None if self.pending.ranges => Some(None),
            None => self.group_get(Kind::Record, key, key),
        }
    }

    /// `raw` if it holds a live value at the command time.
    fn live(&self, raw: Option<Bytes>) -> Result<Option<Bytes>, Reply> {
        match raw {
            Some(r) => {
                let (_, at) = value::peek(&r).map_err(StoreError::from)?;
                Ok((!is_expired(at, self.now)).then_some(r))
            }
            None => Ok(None),
        }
    }

    /// The raw stored bytes of `key` if it is live (pending writes first: the segment's, then
    /// those of the group it chains on).
    pub fn raw(&self, key: &[u8]) -> Result<Option<Bytes>, Reply> {
        let raw = match self.pending_raw(key) {
            Some(v) => v,
            None => match self.pending.reads.get(key) {
                Some(v) => v.clone(),
                None => keyspace::with_data_key(key, |k| self.engine_get(k))?,
            },
        };
        self.live(raw)
    }

    /// [`Ctx::raw`] of several keys, in order, all as of one moment (an MGET is atomic): the
    /// keys the pending writes do not answer come from the segment's read-ahead if it holds
    /// every one of them, else from one [`strata::Db::multi_get`] now (`cache_only` inline, as
    /// [`Ctx::engine_get`]).
    pub fn raw_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Bytes>>, Reply> {
        let mut raws: Vec<Option<Bytes>> = Vec::with_capacity(keys.len());
        let mut at: Vec<usize> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match self.pending_raw(key) {
                Some(v) => raws.push(v),
                None => {
                    raws.push(None);
                    at.push(i);
                }
            }
        }
        let ahead: Option<Vec<Option<Bytes>>> = at
            .iter()
            .map(|&i| self.pending.reads.get(&keys[i]).cloned())
            .collect();
        if let Some(ahead) = ahead {
            for (&i, v) in at.iter().zip(ahead) {
                raws[i] = v;
            }
        } else {
            let engine_keys: Vec<Vec<u8>> =
                at.iter().map(|&i| keyspace::data_key(&keys[i])).collect();
            let opts = strata::ReadOptions {
                cache_only: self.pending.inline,
                ..Default::default()
            };
            let got = self.shared.store.multi_get(&opts, &engine_keys);
            for (&i, r) in at.iter().zip(got) {
                raws[i] = r.map_err(|e| self.engine_error(e))?;
            }
        }
        raws.into_iter().map(|r| self.live(r)).collect()
    }

    /// The live entry of `key` (pending writes first).
    pub fn entry(&self, key: &[u8]) -> Result<Option<Entry>, Reply> {
        match self.raw(key)? {
            Some(r) => Ok(Some(value::decode(r).map_err(StoreError::from)?)),
            None => Ok(None),
        }
    }

    /// The live string value of `key`; WRONGTYPE for another type.
    pub fn string(&self, key: &[u8]) -> Result<Option<Entry>, Reply> {
        match self.entry(key)? {
            Some(e) if e.vtype != Some(ValueType::String) => Err(errors::err(errors::WRONGTYPE)),
            other => Ok(other),
        }
    }

    /// Stores raw value bytes (header included) for `key`; committed with the segment.
    pub fn put_raw(&mut self, key: &[u8], raw: Bytes) -> Result<(), Reply> {
        if key.len() > MAX_USER_KEY {
            return Err(StoreError::KeyTooLarge.into());
        }
        let created = self.pending.notify_writes.is_some()
            && self.pending.notify_new
            && matches!(self.entry(key), Ok(None));
        if self.shared.expiry_index.tracking() {
            if let Ok(Some(at)) = value::expiry_of(&raw) {
                self.shared.expiry_index.add(at, key);
            }
        }
        let batch = &mut self.pending.batch;
        keyspace::with_data_key(key, |k| batch.put(k, &raw));
        self.pending.overlay.insert(key.to_vec(), Some(raw));
        if let Some(w) = self.pending.notify_writes.as_mut() {
            w.push(crate::notify::Write {
                key: Bytes::copy_from_slice(key),
                deleted: false,
                created,
            });
        }
        Ok(())
    }

    /// Raises keyspace event `name` of `class` on `key` for the running command (the events
    /// `notify::events` cannot see in the key's record); nothing when notifications are off.
    pub fn notify(&mut self, class: u32, name: &'static str, key: &[u8]) {
        if self.pending.notify_writes.is_some() {
            self.pending.notify_notes.push(crate::notify::Event {
                class,
                name,
                key: Bytes::copy_from_slice(key),
            });
        }
    }

    /// Stores a value for `key`; committed with the segment. An expiry at or before the
    /// command time deletes the key instead (as Redis does).
    pub fn put(
        &mut self,
        key: &[u8],
        vtype: ValueType,
        expire_at: Option<u64>,
        payload: &[u8],
    ) -> Result<(), Reply> {
        if is_expired(expire_at, self.now) {
            self.delete(key);
            return Ok(());
        }
        self.put_raw(key, Bytes::from(value::encode(vtype, expire_at, payload)))
    }

    /// Deletes `key`; committed with the segment.
    pub fn delete(&mut self, key: &[u8]) {
        // Deleting an absent key raises no keyspace event (redis' `dbDelete` returns 0).
        let absent = self.pending.notify_writes.is_some() && matches!(self.entry(key), Ok(None));
        let batch = &mut self.pending.batch;
        keyspace::with_data_key(key, |k| batch.delete(k));
        self.pending.overlay.insert(key.to_vec(), None);
        if let Some(w) = self.pending.notify_writes.as_mut().filter(|_| !absent) {
            w.push(crate::notify::Write {
                key: Bytes::copy_from_slice(key),
                deleted: true,
                created: false,
            });
        }
    }

    /// Stores the function library `name` (FUNCTION LOAD, RESTORE); committed with the
    /// segment.
    pub fn put_function_library(&mut self, name: &str, code: &[u8]) {
        let mut v = Vec::with_capacity(1 + code.len());
        v.push(keyspace::FUNCTION_VALUE_VERSION);
        v.extend_from_slice(code);
        self.pending.batch.put(keyspace::function_key(name), v);
        self.pending.unkeyed = true;
    }

    /// Deletes the stored function library `name`, or every one with `None` (FUNCTION DELETE,
    /// FLUSH, RESTORE FLUSH); committed with the segment.
    pub fn delete_function_libraries(&mut self, name: Option<&str>) {
        match name {
            Some(n) => self.pending.batch.delete(keyspace::function_key(n)),
            None => self
                .pending
                .batch
                .delete_range(keyspace::FUNCTIONS_START, keyspace::FUNCTIONS_END),
        }
        self.pending.unkeyed = true;
    }

    /// Deletes every key of the database (FLUSHDB). Only for barrier commands, which run in a
    /// segment of their own (or in an EXEC) holding every stripe; later reads of the segment
    /// see only what it writes after this.
    pub fn delete_all(&mut self) {
        self.pending.batch.delete_range(DB0_START, DB0_END);
        self.pending.batch.delete_range(SUB_START, SUB_END);
        self.pending.ranges = true;
        self.pending.overlay.clear();
        self.pending.elems.clear();
        self.pending.reads.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch's operations as `put k=v` / `del k`, sorted.
    fn ops(b: &WriteBatch) -> Vec<String> {
        let mut ops: Vec<String> = b
            .iter()
            .map(|op| match op {
                strata::batch::BatchOp::Put(k, v) => format!(
                    "put {}={}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                ),
                strata::batch::BatchOp::Delete(k) => format!("del {}", String::from_utf8_lossy(k)),
                strata::batch::BatchOp::Merge(k, v) => format!(
                    "merge {}={}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                ),
                strata::batch::BatchOp::DeleteRange(a, z) => format!(
                    "range {}..{}",
                    String::from_utf8_lossy(a),
                    String::from_utf8_lossy(z)
                ),
            })
            .collect();
        ops.sort();
        ops
    }

    #[test]
    fn a_segment_batch_writes_each_key_once() {
        let mut p = Pending::new(false);
        let dk = |k: &str| String::from_utf8_lossy(&keyspace::data_key(k.as_bytes())).into_owned();
        for v in ["1", "2", "3"] {
            p.batch.put(keyspace::data_key(b"ctr"), v);
            p.overlay
                .insert(b"ctr".to_vec(), Some(Bytes::from(v.to_owned())));
        }
        p.batch.put(keyspace::data_key(b"gone"), "x");
        p.batch.delete(keyspace::data_key(b"gone"));
        p.overlay.insert(b"gone".to_vec(), None);
        p.batch.put(b"elem", "a");
        p.batch.put(b"elem", "b");
        p.elems.insert(b"elem".to_vec(), Some(Bytes::from("b")));
        p.batch.delete(b"old");
        p.elems.insert(b"old".to_vec(), None);
        let b = p.take_batch();
        assert_eq!(b.len(), 4);
        let mut want = vec![
            format!("put {}=3", dk("ctr")),
            format!("del {}", dk("gone")),
            "put elem=b".to_string(),
            "del old".to_string(),
        ];
        want.sort();
        assert_eq!(ops(&b), want);
        assert!(p.batch.is_empty());

        // Without repeats, and with a range deletion, the batch is kept as written.
        let mut p = Pending::new(false);
        p.batch.put(b"a", "1");
        p.elems.insert(b"a".to_vec(), Some(Bytes::from("1")));
        assert_eq!(ops(&p.take_batch()), ["put a=1"]);
        let mut p = Pending::new(false);
        p.batch.delete_range(b"a", b"z");
        p.ranges = true;
        p.batch.put(b"k", "1");
        p.batch.put(b"k", "2");
        p.elems.insert(b"k".to_vec(), Some(Bytes::from("2")));
        assert_eq!(p.take_batch().len(), 3);
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    /// Found in command order with one comparison each, out of order by a scan, a key given
    /// twice at either position, an absent key not at all.
    #[test]
    fn read_ahead_finds_keys_in_any_order() {
        let mut r = ReadAhead::default();
        assert_eq!(r.get(b"a"), None, "empty");
        r.fill(
            vec![b("a"), b("b"), b("a"), b("c")],
            vec![Some(b("1")), None, Some(b("1")), Some(b("3"))],
        );
        assert_eq!(r.get(b"a"), Some(&Some(b("1"))));
        assert_eq!(r.get(b"b"), Some(&None));
        assert_eq!(r.get(b"c"), Some(&Some(b("3"))), "skipping the second a");
        assert_eq!(r.get(b"a"), Some(&Some(b("1"))), "scanned from the start");
        assert_eq!(r.get(b"b"), Some(&None));
        assert_eq!(r.get(b"x"), None);
        assert_eq!(r.get(b""), None);
        assert_eq!(r.get(b"c"), Some(&Some(b("3"))));
        r.fill(vec![b("z")], vec![None]);
        assert_eq!(r.get(b"a"), None, "refilled");
        assert_eq!(r.get(b"z"), Some(&None));
        r.close();
        assert_eq!(r.get(b"z"), None, "closed");
    }
}
