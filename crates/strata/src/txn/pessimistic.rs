//! Pessimistic transactions (RocksDB's `TransactionDB`): a transaction locks each key before it
//! writes it or reads it for update, and holds the lock until it commits or rolls back, so two
//! transactions never write the same key at once and a commit needs no conflict check.
//!
//! [`TransactionDb`] wraps a [`Db`] with a striped point-lock manager ([`super::locks`]). A
//! lock wait ends at the transaction's lock timeout (`ErrorKind::TimedOut`), or at once on a
//! deadlock when detection is on (`ErrorKind::Busy`, with the cycle in the message and in
//! [`TransactionDb::deadlocks`]). A transaction with an expiration may have its locks taken
//! over once it expires; its commit then fails with `ErrorKind::Expired`, writing nothing.
//!
//! Reads see the latest state plus the transaction's own writes; after
//! [`PessimisticTransaction::set_snapshot`] they see the snapshot, and the commit is refused
//! (`Busy`) if a key the transaction locked was written by anyone after the snapshot — by a
//! transaction that held its lock before this one took it, or by a write that bypasses the
//! locks (through [`TransactionDb::db`]). The commit is one write batch, one WAL record, as for
//! optimistic transactions. An expiring transaction's commit and a takeover of its locks race
//! on one atomic state: exactly one of them wins, so an expired transaction never writes. Depends on `db` and the
//! optimistic transaction's write buffer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::locks::{DeadlockPath, LockManager, TxnId, TxnState};
use super::{Buffer, Transaction, TransactionIterator};
use crate::db::Db;
use crate::error::{ErrorRepr, Result};
use crate::options::{Options, ReadOptions, WriteOptions};

/// Options of a [`TransactionDb`] (RocksDB's `TransactionDBOptions`).
#[derive(Clone, Debug)]
pub struct TransactionDbOptions {
    /// Stripes of the lock table: more let more lock requests run in parallel. Default 16.
    pub num_stripes: usize,
    /// How long a transaction waits for a lock before the request fails with `TimedOut`.
    /// Default 1 s (RocksDB's `transaction_lock_timeout`).
    pub lock_timeout: Duration,
    /// How long a non-transactional write through [`TransactionDb::put`] and friends waits for
    /// its key's lock. Default 1 s (RocksDB's `default_lock_timeout`).
    pub default_lock_timeout: Duration,
    /// Detect deadlocks when a transaction is about to wait: a request that would close a cycle
    /// of waits fails at once with `Busy`. Default off (as RocksDB's `deadlock_detect`).
    pub deadlock_detect: bool,
}

impl Default for TransactionDbOptions {
    fn default() -> Self {
        TransactionDbOptions {
            num_stripes: 16,
            lock_timeout: Duration::from_secs(1),
            default_lock_timeout: Duration::from_secs(1),
            deadlock_detect: false,
        }
    }
}

/// Options of one pessimistic transaction (RocksDB's `TransactionOptions`).
#[derive(Clone, Debug, Default)]
pub struct TransactionOptions {
    /// This transaction's lock timeout; `None`: the database's.
    pub lock_timeout: Option<Duration>,
    /// After this long, the transaction's locks may be taken over by waiters and its commit
    /// fails with `Expired`. `None` (default): never.
    pub expiration: Option<Duration>,
    /// Take a snapshot at the start (as [`PessimisticTransaction::set_snapshot`]).
    pub set_snapshot: bool,
}

/// A database whose transactions lock the keys they write; see the module docs.
#[derive(Clone)]
pub struct TransactionDb {
    db: Db,
    locks: Arc<LockManager>,
    opts: TransactionDbOptions,
    next_id: Arc<AtomicU64>,
}

impl TransactionDb {
    /// Opens (or creates) the database at `path` with `options`, for pessimistic
    /// transactions.
    pub fn open(
        path: impl AsRef<std::path::Path>,
        options: Options,
        txn_options: TransactionDbOptions,
    ) -> Result<TransactionDb> {
        let db = Db::open(path, options)?;
        Ok(TransactionDb {
            db,
            locks: Arc::new(LockManager::new(
                txn_options.num_stripes,
                txn_options.deadlock_detect,
            )),
            opts: txn_options,
            next_id: Arc::new(AtomicU64::new(1)),
        })
    }

    /// The database underneath. Its reads are plain reads; its writes bypass the locks (a
    /// transaction that set a snapshot still sees them as conflicts at commit).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Begins a transaction with the database's lock timeout, no expiration, no snapshot.
    pub fn transaction(&self) -> PessimisticTransaction {
        self.transaction_opt(&TransactionOptions::default())
    }

    /// Begins a transaction with `opts`.
    pub fn transaction_opt(&self, opts: &TransactionOptions) -> PessimisticTransaction {
        let started = Instant::now();
        let mut inner = Transaction {
            db: self.db.clone(),
            snapshot: None,
            buf: Buffer::default(),
            savepoints: Vec::new(),
            reads: None,
        };
        if opts.set_snapshot {
            inner.set_snapshot();
        }
        PessimisticTransaction {
            inner: Some(inner),
            locks: self.locks.clone(),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            timeout: opts.lock_timeout.unwrap_or(self.opts.lock_timeout),
            // An expiration too large to add to now never comes.
            expires: opts.expiration.and_then(|e| started.checked_add(e)),
            state: Arc::default(),
            held: Vec::new(),
            savepoints: Vec::new(),
        }
    }

    /// Runs `f` in a transaction with the default lock timeout for plain writes, committing
    /// what it buffered.
    fn auto(&self, f: impl FnOnce(&mut PessimisticTransaction) -> Result<()>) -> Result<()> {
        let mut t = self.transaction_opt(&TransactionOptions {
            lock_timeout: Some(self.opts.default_lock_timeout),
            ..Default::default()
        });
        f(&mut t)?;
        t.commit()
    }

    /// Sets `key` to `value`, waiting for the key's lock if a transaction holds it.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.auto(|t| t.put(key, value))
    }

    /// Removes `key`, waiting for its lock if a transaction holds it.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.auto(|t| t.delete(key))
    }

    /// Merges `operand` into `key`, waiting for its lock if a transaction holds it.
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.auto(|t| t.merge(key, operand))
    }

    /// The latest value of `key` (no lock taken).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.db.get(key)
    }

    /// The most recent deadlocks found (at most 16), oldest first, each the cycle of waits
    /// that was refused (RocksDB's `GetDeadlockInfoBuffer`).
    pub fn deadlocks(&self) -> Vec<DeadlockPath> {
        self.locks.deadlocks()
    }

    /// Keys locked by transactions now.
    pub fn num_locks(&self) -> usize {
        self.locks.num_locks()
    }
}

/// A pessimistic transaction; see the module docs. Dropping it rolls it back and releases its
/// locks.
pub struct PessimisticTransaction {
    /// `None` once committed (the commit consumes the buffer).
    inner: Option<Transaction>,
    locks: Arc<LockManager>,
    id: TxnId,
    timeout: Duration,
    expires: Option<Instant>,
    /// Committing or expired: decided once, between the commit and a takeover.
    state: Arc<TxnState>,
    /// Keys locked, in the order they were locked.
    held: Vec<Vec<u8>>,
    /// `held.len()` at each savepoint.
    savepoints: Vec<usize>,
}

impl PessimisticTransaction {
    fn txn(&self) -> &Transaction {
        self.inner.as_ref().expect("live until commit")
    }

    fn txn_mut(&mut self) -> &mut Transaction {
        self.inner.as_mut().expect("live until commit")
    }

    /// This transaction's number in lock reports and deadlock paths.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Locks `key` for this transaction (waiting at most the lock timeout).
    fn lock(&mut self, key: &[u8]) -> Result<()> {
        if self.expired() {
            return Err(self.expired_error());
        }
        if self.held.iter().any(|k| k.as_slice() == key) {
            return Ok(());
        }
        self.locks
            .lock(self.id, key, self.timeout, self.expires, &self.state)?;
        self.held.push(key.to_vec());
        Ok(())
    }

    fn expired(&self) -> bool {
        self.state.is_expired() || self.expires.is_some_and(|e| Instant::now() >= e)
    }

    fn expired_error(&self) -> crate::Error {
        ErrorRepr::Expired(format!(
            "transaction {} outlived its expiration; its locks may have been taken over",
            self.id
        ))
        .into()
    }

    /// The value of `key`: the transaction's own write, else the database's (latest, or at
    /// the snapshot after `set_snapshot`). Takes no lock.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.txn().get(key)
    }

    /// Locks `key`, then reads it as [`PessimisticTransaction::get`] does: no other
    /// transaction can write it until this one ends.
    pub fn get_for_update(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        self.lock(key)?;
        self.txn_mut().get_for_update(key)
    }

    /// Locks `key` and sets it to `value` when the transaction commits.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        self.lock(key)?;
        self.txn_mut().put(key, value);
        Ok(())
    }

    /// Locks `key` and removes it when the transaction commits.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        self.lock(key)?;
        self.txn_mut().delete(key);
        Ok(())
    }

    /// Locks `key` and merges `operand` into it when the transaction commits (a merge the
    /// operator refuses takes no lock).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.txn().check_merge(operand)?;
        self.lock(key)?;
        self.txn_mut().merge(key, operand)
    }

    /// An iterator over the database (latest, or the snapshot) with the transaction's writes
    /// laid over it. Takes no locks.
    pub fn iter(&self, opts: ReadOptions) -> Result<TransactionIterator> {
        self.txn().iter(opts)
    }

    /// Reads from now on see a snapshot taken now, and the commit is refused if a key this
    /// transaction locks was written by anyone after it (RocksDB's `SetSnapshot`).
    pub fn set_snapshot(&mut self) {
        self.txn_mut().set_snapshot();
    }

    /// Remembers the writes and locks so far.
    pub fn set_savepoint(&mut self) {
        let n = self.held.len();
        self.txn_mut().set_savepoint();
        self.savepoints.push(n);
    }

    /// Undoes the writes since the last savepoint and releases the locks taken since (RocksDB
    /// releases them too); `InvalidArgument` if there is none.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.txn_mut().rollback_to_savepoint()?;
        let n = self.savepoints.pop().unwrap_or(0);
        let released = self.held.split_off(n);
        self.locks
            .unlock(self.id, released.iter().map(Vec::as_slice));
        Ok(())
    }

    /// Discards every write and releases every lock; the transaction can be used again.
    pub fn rollback(&mut self) {
        self.txn_mut().rollback();
        self.savepoints.clear();
        self.release();
    }

    fn release(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.locks.unlock(self.id, held.iter().map(Vec::as_slice));
    }

    /// Writes waiting for the commit.
    pub fn pending_writes(&self) -> usize {
        self.txn().pending_writes()
    }

    /// Keys this transaction holds locks on.
    pub fn num_locks(&self) -> usize {
        self.held.len()
    }

    /// Commits with default write options; see [`PessimisticTransaction::commit_opt`].
    pub fn commit(self) -> Result<()> {
        self.commit_opt(&WriteOptions::default())
    }

    /// Writes the transaction's writes as one batch and releases its locks. Refused, writing
    /// nothing, when the transaction expired (`Expired`) or, after `set_snapshot`, when a key
    /// it locked was written by anyone since the snapshot (`Busy`, `TryAgain`).
    pub fn commit_opt(mut self, opts: &WriteOptions) -> Result<()> {
        // With an expiration, the commit must win the race against a takeover first.
        let r = if self.expired() || (self.expires.is_some() && !self.state.begin_commit()) {
            Err(self.expired_error())
        } else {
            let t = self.inner.take().expect("live until commit");
            debug_assert!(t.tracked().all(|k| self.held.contains(k)));
            t.commit_opt(opts)
        };
        self.release();
        r
    }
}

impl Drop for PessimisticTransaction {
    fn drop(&mut self) {
        self.release();
    }
}
