//! Optimistic transactions (RocksDB's `OptimisticTransactionDB`, SlateDB's `DbTransaction`):
//! reads at a snapshot taken when the transaction begins, writes buffered in the transaction
//! (its own reads and iterators see them), and a commit that writes them as **one batch — one
//! WAL record** — only if no key the transaction wrote or read with
//! [`Transaction::get_for_update`] was written by anyone else after its snapshot. Otherwise
//! the commit fails with [`ErrorKind::Busy`](crate::ErrorKind::Busy) and writes nothing
//! (snapshot isolation: first committer wins). If the writes since the snapshot are no longer
//! all in the memtables (a flush took some to tables), the check cannot be made: the commit
//! fails with [`ErrorKind::TryAgain`](crate::ErrorKind::TryAgain), also writing nothing.
//!
//! The check runs at the commit moment in the write path: the transaction's batch queues for
//! a write group like any write, and the group's leader checks it after every earlier group is
//! published and before the group's WAL record is written — against the memtables and against
//! the writes of the group's earlier members — so nothing can be written between the check and
//! the commit. A transaction that fails is left out of the group; the others commit together
//! (one WAL record, one fsync), so transactions keep group commit under concurrency.
//!
//! [`Transaction::merge`] buffers an operand like any write (the key is tracked, as in RocksDB):
//! onto the transaction's own put or delete it is folded at once; onto the snapshot's value it
//! is folded when the transaction reads the key, and committed as an operand.
//!
//! Serializable mode ([`OptimisticTransactionOptions::serializable`]): every key read with
//! `get` and every range an iterator of the transaction covered (from its seek target to
//! where it stopped, or to its upper bound once exhausted) joins the check, which then also
//! scans the memtables over each range for writes after the snapshot — no write skew, no
//! phantoms.
//!
//! Pessimistic transactions (row locks, timeouts, deadlock detection) are [`TransactionDb`]'s,
//! in `pessimistic.rs` and `locks.rs`. Depends on `db` (the snapshot, the write path's commit check) and
//! `memtable` (the check); nothing in the engine depends on it.

pub(crate) mod conflict;
mod iter;
pub mod locks;
mod pessimistic;

pub use iter::TransactionIterator;
pub use pessimistic::{
    PessimisticTransaction, TransactionDb, TransactionDbOptions, TransactionOptions,
};

/// Key ranges read by a serializable transaction, shared with its iterators.
pub(crate) type ReadSet = std::sync::Arc<parking_lot::Mutex<Vec<conflict::ReadRange>>>;

/// Options of an optimistic transaction ([`Db::transaction_opt`]).
#[derive(Clone, Debug, Default)]
pub struct OptimisticTransactionOptions {
    /// Serializable: the commit also fails (`Busy`) if anything the transaction *read* — every
    /// key read with `get`, every range its iterators covered — was written by another after
    /// its snapshot, not only what it wrote or read for update (snapshot isolation, the
    /// default). Rules out write skew and phantoms; costs a scan of the memtables over each
    /// range read at commit.
    pub serializable: bool,
}

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::batch::WriteBatch;
use crate::db::{Db, Snapshot};
use crate::error::{ErrorRepr, Result};
use crate::options::{ReadOptions, WriteOptions};

/// The transaction's own writes of one key, as its reads see them.
#[derive(Clone, Debug)]
enum Own {
    /// The key's value after the own writes (`None`: deleted).
    Value(Option<Bytes>),
    /// Merge operands (oldest first) onto the key's value at the snapshot.
    Operands(Vec<Bytes>),
}

/// The writes and tracked keys a savepoint restores.
#[derive(Clone, Default)]
struct Buffer {
    batch: WriteBatch,
    /// The own writes of each key.
    writes: BTreeMap<Vec<u8>, Own>,
    /// Keys checked for conflicts at commit: every key written or read for update.
    tracked: BTreeSet<Vec<u8>>,
}

/// An optimistic transaction; see the module docs. Dropping it without committing discards
/// its writes.
pub struct Transaction {
    db: Db,
    /// What reads see; `None`: the latest state (a pessimistic transaction without
    /// `set_snapshot`: its locks, not a snapshot, keep what it read current).
    snapshot: Option<Snapshot>,
    buf: Buffer,
    savepoints: Vec<Buffer>,
    /// What a serializable transaction read (`None`: snapshot isolation).
    reads: Option<ReadSet>,
}

impl Db {
    /// Begins an optimistic transaction reading at a snapshot of the current state (snapshot
    /// isolation).
    pub fn transaction(&self) -> Transaction {
        self.transaction_opt(&OptimisticTransactionOptions::default())
    }

    /// Begins an optimistic transaction with `opts` (serializable or not).
    pub fn transaction_opt(&self, opts: &OptimisticTransactionOptions) -> Transaction {
        Transaction {
            db: self.clone(),
            snapshot: Some(self.snapshot()),
            buf: Buffer::default(),
            savepoints: Vec::new(),
            reads: opts.serializable.then(ReadSet::default),
        }
    }
}

/// The smallest key after `key`: `key ++ 0x00`.
pub(crate) fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

impl Transaction {
    fn read_options(&self) -> ReadOptions {
        ReadOptions {
            snapshot: self.snapshot.clone(),
            ..ReadOptions::default()
        }
    }

    /// The value of `key`: the transaction's own write, else the database's at the
    /// transaction's snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        if let Some(reads) = &self.reads {
            reads.lock().push((key.to_vec(), Some(successor(key))));
        }
        match self.buf.writes.get(key) {
            Some(own) => self.resolve(key, own),
            None => self.db.get_opt(&self.read_options(), key),
        }
    }

    /// The value an own write gives `key`.
    fn resolve(&self, key: &[u8], own: &Own) -> Result<Option<Bytes>> {
        match own {
            Own::Value(v) => Ok(v.clone()),
            Own::Operands(ops) => {
                let base = self.db.get_opt(&self.read_options(), key)?;
                let v = self.fold(key, base.as_deref(), ops)?;
                Ok(Some(v))
            }
        }
    }

    /// `operands` (oldest first) folded onto `base` with the database's merge operator.
    fn fold(&self, key: &[u8], base: Option<&[u8]>, operands: &[Bytes]) -> Result<Bytes> {
        let op = self.operator()?;
        let newest_first: Vec<Vec<u8>> = operands.iter().rev().map(|o| o.to_vec()).collect();
        crate::merge::full_merge(&*op, key, base, &newest_first).map(Bytes::from)
    }

    /// Refuses a merge without an operator, or of an operand the operator refuses.
    fn check_merge(&self, operand: &[u8]) -> Result<()> {
        let op = self.operator()?;
        op.check_operand(operand).map_err(|e| {
            crate::Error::invalid(format!("merge operand refused by {}: {e}", op.name()))
        })
    }

    fn operator(&self) -> Result<std::sync::Arc<dyn crate::merge::MergeOperator>> {
        self.db.options().merge_operator.clone().ok_or_else(|| {
            ErrorRepr::InvalidArgument(
                "a merge needs a merge operator (Options::merge_operator)".into(),
            )
            .into()
        })
    }

    /// [`Transaction::get`], and the commit fails if anyone else writes `key` after the
    /// transaction's snapshot (RocksDB's `GetForUpdate`).
    pub fn get_for_update(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        self.buf.tracked.insert(key.to_vec());
        self.get(key)
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.buf.batch.put(key, value);
        self.buf.writes.insert(
            key.to_vec(),
            Own::Value(Some(Bytes::copy_from_slice(value))),
        );
        self.buf.tracked.insert(key.to_vec());
    }

    /// Merges `operand` into `key` when the transaction commits (see the module docs); the
    /// transaction's own reads see the result. Fails, buffering nothing, without a merge
    /// operator or when the operator refuses the operand.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.check_merge(operand)?;
        let own = match self.buf.writes.get(key) {
            Some(Own::Value(v)) => {
                let ops = [Bytes::copy_from_slice(operand)];
                Own::Value(Some(self.fold(key, v.as_deref(), &ops)?))
            }
            Some(Own::Operands(ops)) => {
                let mut ops = ops.clone();
                ops.push(Bytes::copy_from_slice(operand));
                Own::Operands(ops)
            }
            None => Own::Operands(vec![Bytes::copy_from_slice(operand)]),
        };
        self.buf.batch.merge(key, operand);
        self.buf.writes.insert(key.to_vec(), own);
        self.buf.tracked.insert(key.to_vec());
        Ok(())
    }

    /// Removes `key` when the transaction commits.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.buf.batch.delete(key);
        self.buf.writes.insert(key.to_vec(), Own::Value(None));
        self.buf.tracked.insert(key.to_vec());
    }

    /// An iterator over the database at the transaction's snapshot with the transaction's
    /// writes so far laid over it, within `opts`' bounds (`opts.snapshot` is ignored). Forward
    /// only; it starts unpositioned.
    pub fn iter(&self, opts: ReadOptions) -> Result<TransactionIterator> {
        let own: Vec<(Vec<u8>, Option<Bytes>)> = self
            .buf
            .writes
            .iter()
            .filter(|(k, _)| {
                opts.lower_bound
                    .as_deref()
                    .is_none_or(|lo| k.as_slice() >= lo)
                    && opts
                        .upper_bound
                        .as_deref()
                        .is_none_or(|hi| k.as_slice() < hi)
            })
            .map(|(k, own)| Ok((k.clone(), self.resolve(k, own)?)))
            .collect::<Result<_>>()?;
        let (lower, upper) = (opts.lower_bound.clone(), opts.upper_bound.clone());
        let base = self.db.iter(ReadOptions {
            snapshot: self.snapshot.clone(),
            ..opts
        })?;
        let mut it = TransactionIterator::new(base, own);
        if let Some(reads) = &self.reads {
            it = it.tracking(reads.clone(), lower, upper);
        }
        Ok(it)
    }

    /// Moves the transaction's snapshot to now: later reads see the writes committed so far,
    /// and the commit checks for writes after this moment only (RocksDB's `SetSnapshot`).
    pub fn set_snapshot(&mut self) {
        self.snapshot = Some(self.db.snapshot());
    }

    /// The sequence number the transaction reads at; `None` when it reads the latest state
    /// (a pessimistic transaction without `set_snapshot`).
    pub fn snapshot_sequence(&self) -> Option<u64> {
        self.snapshot.as_ref().map(Snapshot::sequence)
    }

    /// Remembers the writes and tracked keys so far; [`Transaction::rollback_to_savepoint`]
    /// returns to them.
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(self.buf.clone());
    }

    /// Undoes the writes (and the keys read for update) since the last savepoint, and forgets
    /// it. `InvalidArgument` if there is none.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        match self.savepoints.pop() {
            Some(b) => {
                self.buf = b;
                Ok(())
            }
            None => Err(ErrorRepr::InvalidArgument("no savepoint to roll back to".into()).into()),
        }
    }

    /// Discards every write and tracked key; the transaction can be used again (at the same
    /// snapshot).
    pub fn rollback(&mut self) {
        self.buf = Buffer::default();
        self.savepoints.clear();
    }

    /// Writes waiting for the commit.
    pub fn pending_writes(&self) -> usize {
        self.buf.batch.len()
    }

    /// Commits with default write options; see [`Transaction::commit_opt`].
    pub fn commit(self) -> Result<()> {
        self.commit_opt(&WriteOptions::default())
    }

    /// Writes the transaction's writes as one batch if no tracked key was written by anyone
    /// else since the snapshot; else fails with `Busy` (or `TryAgain`, see the module docs)
    /// and writes nothing. A transaction without writes commits at once.
    pub fn commit_opt(self, opts: &WriteOptions) -> Result<()> {
        if self.buf.batch.is_empty() {
            return Ok(());
        }
        if opts.no_slowdown && crate::db::would_slow_down(&self.db) {
            return Err(ErrorRepr::Incomplete("the write would stall").into());
        }
        let Some(snapshot) = self.snapshot.as_ref().map(Snapshot::sequence) else {
            return self.commit_unchecked(opts);
        };
        let ranges = self.reads.map(|r| std::mem::take(&mut *r.lock()));
        let check = crate::db::CommitCheck {
            snapshot,
            keys: self.buf.tracked.into_iter().collect(),
            ranges: ranges.unwrap_or_default(),
        };
        crate::db::write_checked(&self.db, self.buf.batch, opts.sync, check)
    }

    /// Writes the transaction's writes as one batch without a conflict check (a pessimistic
    /// transaction's locks already exclude other transactions' writes).
    fn commit_unchecked(self, opts: &WriteOptions) -> Result<()> {
        if self.buf.batch.is_empty() {
            return Ok(());
        }
        self.db.write_opt(self.buf.batch, opts)
    }

    /// The keys written or read for update so far.
    fn tracked(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.buf.tracked.iter()
    }
}
