//! The `strata` Python module: a thin pyo3 layer over the engine's public API.
//!
//! Owns the Python-facing types: `Db` (from `strata.open(path, **options)`), `WriteBatch`,
//! `Snapshot`, `Iterator`, `ColumnFamily` (reads and writes take `cf=`), and the exception
//! hierarchy rooted at `strata.StrataError` (one
//! subclass per `engine::ErrorKind`). Invariants: keys and values are `bytes` in and out; every
//! call into the engine runs with the GIL released (`Python::allow_threads`), so Python threads
//! use the engine concurrently; a closed `Db` raises `ClosedError` and never touches the engine;
//! engine errors always surface as exceptions, never as data. Depends only on the `strata`
//! crate's public API and pyo3; nothing depends on this crate.

// pyo3 0.22's macro expansion converts `PyErr` into itself; newer clippy flags that.
#![allow(clippy::useless_conversion)]

use std::sync::{Mutex, MutexGuard};

use engine::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
use engine::storage::object::CapacityOptions;
use engine::{CfOptions, ErrorKind, Options, ReadOptions, WriteOptions};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

create_exception!(
    strata,
    StrataError,
    PyException,
    "Any error from the Strata engine."
);
create_exception!(
    strata,
    IoError,
    StrataError,
    "An I/O failure on either tier."
);
create_exception!(
    strata,
    CorruptionError,
    StrataError,
    "Stored bytes failed a checksum or could not be decoded."
);
create_exception!(
    strata,
    InvalidArgumentError,
    StrataError,
    "An argument or option the engine cannot accept."
);
create_exception!(
    strata,
    LockedError,
    StrataError,
    "Another process (or Db) holds the database directory."
);
create_exception!(
    strata,
    NotADatabaseError,
    StrataError,
    "The directory is not a Strata database (or of an unknown format)."
);
create_exception!(
    strata,
    ClosedError,
    StrataError,
    "The database is closed (or read-only after a background error)."
);

fn err(e: engine::Error) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Io => IoError::new_err(msg),
        ErrorKind::Corruption => CorruptionError::new_err(msg),
        ErrorKind::InvalidArgument => InvalidArgumentError::new_err(msg),
        ErrorKind::Locked => LockedError::new_err(msg),
        ErrorKind::NotADatabase => NotADatabaseError::new_err(msg),
        ErrorKind::Closed => ClosedError::new_err(msg),
        _ => StrataError::new_err(msg),
    }
}

/// Locks a mutex, ignoring poisoning (the guarded values stay consistent: every critical
/// section is a single assignment or engine call).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn closed() -> PyErr {
    ClosedError::new_err("the database is closed")
}

/// Builds engine options from `strata.open`'s keyword arguments.
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    let Some(kwargs) = kwargs else {
        return Ok(o);
    };
    for (k, v) in kwargs.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "capacity" => {
                let url: Option<String> = v.extract()?;
                o.capacity = url.map(CapacityOptions::new);
            }
            "capacity_levels" => o.capacity_levels = v.extract()?,
            "create_if_missing" => o.create_if_missing = v.extract()?,
            "error_if_exists" => o.error_if_exists = v.extract()?,
            "write_buffer_size" => o.write_buffer_size = v.extract()?,
            "block_cache_size" => o.block_cache_capacity = v.extract()?,
            "target_file_size_base" => o.target_file_size_base = v.extract()?,
            "max_bytes_for_level_base" => o.max_bytes_for_level_base = v.extract()?,
            "num_levels" => o.num_levels = v.extract()?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = v.extract()?,
            "hotrap" => o.hotrap.enabled = v.extract()?,
            "merge_operator" => {
                // A built-in operator by name: "strata.u64add", "strata.max", "strata.append".
                let name: Option<String> = v.extract()?;
                o.merge_operator = match name {
                    None => None,
                    Some(n) => Some(engine::merge::from_name(&n).ok_or_else(|| {
                        InvalidArgumentError::new_err(format!(
                            "unknown merge operator {n:?} (strata.u64add, strata.max, \
                             strata.append)"
                        ))
                    })?),
                };
            }
            "persistent_cache_size" => {
                // A size turns on the LAP cache of capacity-tier blocks; 0 turns it off.
                let capacity: u64 = v.extract()?;
                o.persistent_cache = PersistentCacheOptions {
                    kind: if capacity > 0 {
                        PersistentCacheKind::Lap
                    } else {
                        PersistentCacheKind::None
                    },
                    capacity,
                    ..o.persistent_cache
                }
            }
            other => {
                return Err(InvalidArgumentError::new_err(format!(
                    "unknown option {other:?} (known: capacity, capacity_levels, \
                     create_if_missing, error_if_exists, write_buffer_size, block_cache_size, \
                     target_file_size_base, max_bytes_for_level_base, num_levels, \
                     bloom_bits_per_key, hotrap, merge_operator, persistent_cache_size)"
                )))
            }
        }
    }
    Ok(o)
}

/// Opens (creating by default) the database at `path`. Keyword options: `capacity` (a
/// `file://`, `s3://` or `memory://` URL of the capacity tier), `capacity_levels`,
/// `create_if_missing`, `error_if_exists`, `write_buffer_size`, `block_cache_size`,
/// `target_file_size_base`, `max_bytes_for_level_base`, `num_levels`, `bloom_bits_per_key`,
/// `hotrap`, `persistent_cache_size`.
#[pyfunction]
#[pyo3(name = "open", signature = (path, **kwargs))]
fn open_db(
    py: Python<'_>,
    path: std::path::PathBuf,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Db> {
    let opts = options(kwargs)?;
    let db = py
        .allow_threads(move || engine::Db::open(path, opts))
        .map_err(err)?;
    Ok(Db {
        inner: Mutex::new(Some(db)),
    })
}

/// A column family of a `Db` (`Db.create_cf`, `Db.cf`): pass it as `cf=` to reads and
/// writes. Its id names it in the WAL and the manifest; a dropped family's handle raises.
#[pyclass(module = "strata")]
#[derive(Clone)]
struct ColumnFamily {
    inner: engine::ColumnFamily,
}

#[pymethods]
impl ColumnFamily {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }
    #[getter]
    fn id(&self) -> u32 {
        self.inner.id()
    }
    fn __repr__(&self) -> String {
        format!(
            "ColumnFamily({:?}, id={})",
            self.inner.name(),
            self.inner.id()
        )
    }
}

/// Builds a family's options from `Db.create_cf`'s keyword arguments, over the database's.
fn cf_options(db: &engine::Db, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<CfOptions> {
    let mut o = CfOptions::from_options(db.options());
    let Some(kwargs) = kwargs else {
        return Ok(o);
    };
    for (k, v) in kwargs.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "num_levels" => o.num_levels = v.extract()?,
            "compaction_style" => {
                let s: String = v.extract()?;
                o.compaction_style = match s.as_str() {
                    "leveled" => engine::CompactionStyle::Leveled,
                    "split_forest" => engine::CompactionStyle::SplitForest,
                    _ => {
                        return Err(InvalidArgumentError::new_err(format!(
                            "compaction_style {s:?}: use \"leveled\" or \"split_forest\""
                        )))
                    }
                };
            }
            "write_buffer_size" => o.write_buffer_size = v.extract()?,
            "max_write_buffer_number" => o.max_write_buffer_number = v.extract()?,
            "target_file_size_base" => o.target_file_size_base = v.extract()?,
            "max_bytes_for_level_base" => o.max_bytes_for_level_base = v.extract()?,
            "block_size" => o.block_size = v.extract()?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = v.extract()?,
            "capacity_levels" => o.capacity_levels = v.extract()?,
            "fast_levels" => o.fast_levels = v.extract()?,
            "hotrap" => o.hotrap = v.extract()?,
            "logstore" => o.logstore = v.extract()?,
            other => {
                return Err(InvalidArgumentError::new_err(format!(
                    "unknown column family option {other:?} (known: num_levels, \
                     compaction_style, write_buffer_size, max_write_buffer_number, \
                     target_file_size_base, max_bytes_for_level_base, block_size, \
                     bloom_bits_per_key, capacity_levels, fast_levels, hotrap, logstore)"
                )))
            }
        }
    }
    Ok(o)
}

/// A batch of writes applied atomically by `Db.write_batch`; each write may name a column
/// family (`cf=`), and a batch across families commits atomically.
#[pyclass(module = "strata")]
#[derive(Default)]
struct WriteBatch {
    inner: Mutex<engine::WriteBatch>,
}

#[pymethods]
impl WriteBatch {
    #[new]
    fn new() -> Self {
        WriteBatch::default()
    }
    #[pyo3(signature = (key, value, cf = None))]
    fn put(&self, key: &[u8], value: &[u8], cf: Option<PyRef<'_, ColumnFamily>>) {
        match cf {
            Some(cf) => lock(&self.inner).put_cf(&cf.inner, key, value),
            None => lock(&self.inner).put(key, value),
        }
    }
    #[pyo3(signature = (key, cf = None))]
    fn delete(&self, key: &[u8], cf: Option<PyRef<'_, ColumnFamily>>) {
        match cf {
            Some(cf) => lock(&self.inner).delete_cf(&cf.inner, key),
            None => lock(&self.inner).delete(key),
        }
    }
    /// Merges `operand` into `key` with the database's merge operator.
    #[pyo3(signature = (key, operand, cf = None))]
    fn merge(&self, key: &[u8], operand: &[u8], cf: Option<PyRef<'_, ColumnFamily>>) {
        match cf {
            Some(cf) => lock(&self.inner).merge_cf(&cf.inner, key, operand),
            None => lock(&self.inner).merge(key, operand),
        }
    }
    /// Deletes every key in `[start, end)`.
    #[pyo3(signature = (start, end, cf = None))]
    fn delete_range(&self, start: &[u8], end: &[u8], cf: Option<PyRef<'_, ColumnFamily>>) {
        match cf {
            Some(cf) => lock(&self.inner).delete_range_cf(&cf.inner, start, end),
            None => lock(&self.inner).delete_range(start, end),
        }
    }
    fn __len__(&self) -> usize {
        lock(&self.inner).len()
    }
    fn clear(&self) {
        lock(&self.inner).clear();
    }
}

impl WriteBatch {
    fn take(self) -> engine::WriteBatch {
        self.inner.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

/// A consistent point-in-time view: pass it as `snapshot=` to `get` and `iter`.
#[pyclass(module = "strata")]
struct Snapshot {
    inner: Mutex<Option<engine::Snapshot>>,
}

impl Snapshot {
    fn get(&self) -> PyResult<engine::Snapshot> {
        lock(&self.inner)
            .clone()
            .ok_or_else(|| InvalidArgumentError::new_err("the snapshot was released"))
    }
}

#[pymethods]
impl Snapshot {
    /// The sequence number the snapshot reads at.
    #[getter]
    fn sequence(&self) -> PyResult<u64> {
        Ok(self.get()?.sequence())
    }
    /// Lets compaction drop the versions only this snapshot needed.
    fn release(&self) {
        lock(&self.inner).take();
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __exit__(&self, _t: PyObject, _v: PyObject, _tb: PyObject) -> bool {
        self.release();
        false
    }
}

/// Iterates `(key, value)` pairs of `bytes` in key order (or reverse order).
#[pyclass(module = "strata", name = "Iterator")]
struct Iter {
    inner: Mutex<Option<engine::DbIterator>>,
    reverse: bool,
    started: Mutex<bool>,
}

#[pymethods]
impl Iter {
    #[allow(clippy::self_named_constructors)] // Python's iterator protocol, not a constructor
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(PyObject, PyObject)>> {
        let reverse = self.reverse;
        let first = !std::mem::replace(&mut *lock(&self.started), true);
        let next = py.allow_threads(|| -> engine::Result<Option<(Vec<u8>, Vec<u8>)>> {
            let mut guard = lock(&self.inner);
            let Some(it) = guard.as_mut() else {
                return Ok(None);
            };
            match (first, reverse) {
                (true, false) => it.seek_to_first(),
                (true, true) => it.seek_to_last(),
                (false, false) => it.next(),
                (false, true) => it.prev(),
            }
            if it.valid() {
                return Ok(Some((it.key().to_vec(), it.value().to_vec())));
            }
            let r = it.status();
            guard.take();
            r.map(|()| None)
        });
        Ok(next.map_err(err)?.map(|(k, v)| {
            (
                PyBytes::new_bound(py, &k).into_any().unbind(),
                PyBytes::new_bound(py, &v).into_any().unbind(),
            )
        }))
    }
}

/// An open database. Methods release the GIL while the engine works.
#[pyclass(module = "strata")]
struct Db {
    inner: Mutex<Option<engine::Db>>,
}

impl Db {
    fn db(&self) -> PyResult<engine::Db> {
        lock(&self.inner).clone().ok_or_else(closed)
    }
}

fn read_options(snapshot: Option<&Snapshot>) -> PyResult<ReadOptions> {
    Ok(ReadOptions {
        snapshot: snapshot.map(Snapshot::get).transpose()?,
        ..Default::default()
    })
}

fn bytes_arg(item: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    item.extract::<&[u8]>()
        .map(<[u8]>::to_vec)
        .map_err(|_| InvalidArgumentError::new_err(format!("{what} must be bytes")))
}

#[pymethods]
impl Db {
    /// The value of `key` (in column family `cf`, else the default one), or `None`.
    #[pyo3(signature = (key, snapshot = None, cf = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &[u8],
        snapshot: Option<PyRef<'_, Snapshot>>,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<Option<PyObject>> {
        let db = self.db()?;
        let opts = read_options(snapshot.as_deref())?;
        let key = key.to_vec();
        let cf = cf.map(|c| c.inner.clone());
        let v = py
            .allow_threads(move || match cf {
                Some(cf) => db.get_cf_opt(&cf, &opts, key),
                None => db.get_opt(&opts, key),
            })
            .map_err(err)?;
        Ok(v.map(|b| PyBytes::new_bound(py, &b).into_any().unbind()))
    }

    /// The values of `keys` (a list of bytes), in order, all as of one snapshot (`snapshot`, or
    /// the latest state when the call starts): a list of bytes or `None`. Looked up together
    /// (the engine's `multi_get`); the first key whose read fails raises.
    #[pyo3(signature = (keys, snapshot = None, cf = None))]
    fn multi_get(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyAny>>,
        snapshot: Option<PyRef<'_, Snapshot>>,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<Vec<Option<PyObject>>> {
        let db = self.db()?;
        let opts = read_options(snapshot.as_deref())?;
        let keys = keys
            .iter()
            .map(|k| bytes_arg(k, "a key"))
            .collect::<PyResult<Vec<Vec<u8>>>>()?;
        let cf = cf.map(|c| c.inner.clone());
        let got = py.allow_threads(move || match cf {
            Some(cf) => db.multi_get_cf(&cf, &opts, &keys),
            None => db.multi_get(&opts, &keys),
        });
        got.into_iter()
            .map(|r| {
                let v = r.map_err(err)?;
                Ok(v.map(|b| PyBytes::new_bound(py, &b).into_any().unbind()))
            })
            .collect()
    }

    /// Writes `key` = `value` (in column family `cf`, else the default one); with
    /// `sync=True` it is durable when this returns.
    #[pyo3(signature = (key, value, sync = false, cf = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &[u8],
        value: &[u8],
        sync: bool,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<()> {
        let b = WriteBatch::default();
        b.put(key, value, cf);
        self.write(py, b.take(), sync)
    }

    /// Merges `operand` into `key` with the merge operator the database was opened with
    /// (`merge_operator="strata.u64add"`: 8-byte little-endian counters).
    #[pyo3(signature = (key, operand, sync = false, cf = None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &[u8],
        operand: &[u8],
        sync: bool,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<()> {
        let b = WriteBatch::default();
        b.merge(key, operand, cf);
        self.write(py, b.take(), sync)
    }

    #[pyo3(signature = (key, sync = false, cf = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &[u8],
        sync: bool,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<()> {
        let b = WriteBatch::default();
        b.delete(key, cf);
        self.write(py, b.take(), sync)
    }

    /// Deletes every key in `[start, end)`.
    #[pyo3(signature = (start, end, sync = false, cf = None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &[u8],
        end: &[u8],
        sync: bool,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<()> {
        let b = WriteBatch::default();
        b.delete_range(start, end, cf);
        self.write(py, b.take(), sync)
    }

    /// Creates the column family `name` and returns it. Keyword options (default: the
    /// database's): `num_levels`, `compaction_style` ("leveled" or "split_forest"),
    /// `write_buffer_size`, `max_write_buffer_number`, `target_file_size_base`,
    /// `max_bytes_for_level_base`, `block_size`, `bloom_bits_per_key`, and its tier policy:
    /// `capacity_levels`, `fast_levels` (`num_levels - 1`: all on the fast tier), `hotrap`.
    #[pyo3(signature = (name, **kwargs))]
    fn create_cf(
        &self,
        py: Python<'_>,
        name: &str,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<ColumnFamily> {
        let db = self.db()?;
        let o = cf_options(&db, kwargs)?;
        let name = name.to_string();
        let cf = py
            .allow_threads(move || db.create_cf(&name, o))
            .map_err(err)?;
        Ok(ColumnFamily { inner: cf })
    }

    /// The column family `name` ("default" is the default one), or `None`.
    fn cf(&self, name: &str) -> PyResult<Option<ColumnFamily>> {
        Ok(self.db()?.cf(name).map(|inner| ColumnFamily { inner }))
    }

    /// The names of the column families, the default one first.
    fn column_families(&self) -> PyResult<Vec<String>> {
        Ok(self.db()?.column_families())
    }

    /// Drops the column family `name`: its data and tables are deleted; its handles raise.
    fn drop_cf(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.db()?;
        let name = name.to_string();
        py.allow_threads(move || db.drop_cf(&name)).map_err(err)
    }

    /// Applies a `WriteBatch`, or a list of operations — `("put", key, value)`,
    /// `("delete", key)`, `("merge", key, operand)`, `("delete_range", start, end)` —
    /// atomically.
    #[pyo3(signature = (batch, sync = false))]
    fn write_batch(&self, py: Python<'_>, batch: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let b = if let Ok(wb) = batch.downcast::<WriteBatch>() {
            let wb = wb.borrow();
            let copy = lock(&wb.inner).clone();
            copy
        } else {
            let mut b = engine::WriteBatch::new();
            for op in batch.iter()? {
                let op = op?;
                let t = op
                    .downcast::<PyTuple>()
                    .map_err(|_| InvalidArgumentError::new_err("each operation must be a tuple"))?;
                let kind: String = t.get_item(0)?.extract()?;
                match (kind.as_str(), t.len()) {
                    ("put", 3) => b.put(
                        bytes_arg(&t.get_item(1)?, "key")?,
                        bytes_arg(&t.get_item(2)?, "value")?,
                    ),
                    ("delete", 2) => b.delete(bytes_arg(&t.get_item(1)?, "key")?),
                    ("merge", 3) => b.merge(
                        bytes_arg(&t.get_item(1)?, "key")?,
                        bytes_arg(&t.get_item(2)?, "operand")?,
                    ),
                    ("delete_range", 3) => b.delete_range(
                        bytes_arg(&t.get_item(1)?, "start")?,
                        bytes_arg(&t.get_item(2)?, "end")?,
                    ),
                    _ => {
                        return Err(InvalidArgumentError::new_err(format!(
                            "bad operation {kind:?} with {} items: use (\"put\", k, v), \
                             (\"delete\", k), (\"merge\", k, operand) or \
                             (\"delete_range\", start, end)",
                            t.len()
                        )))
                    }
                }
            }
            b
        };
        self.write(py, b, sync)
    }

    /// Iterates `(key, value)` pairs with `lower <= key < upper`, forward or `reverse`.
    #[pyo3(signature = (lower = None, upper = None, reverse = false, snapshot = None, cf = None))]
    fn iter(
        &self,
        py: Python<'_>,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        reverse: bool,
        snapshot: Option<PyRef<'_, Snapshot>>,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<Iter> {
        let db = self.db()?;
        let opts = ReadOptions {
            lower_bound: lower.map(<[u8]>::to_vec),
            upper_bound: upper.map(<[u8]>::to_vec),
            ..read_options(snapshot.as_deref())?
        };
        let cf = cf.map(|c| c.inner.clone());
        let it = py
            .allow_threads(move || match cf {
                Some(cf) => db.iter_cf(&cf, opts),
                None => db.iter(opts),
            })
            .map_err(err)?;
        Ok(Iter {
            inner: Mutex::new(Some(it)),
            reverse,
            started: Mutex::new(false),
        })
    }

    /// The pairs with `start <= key < end`, as `iter(lower=start, upper=end)`.
    #[pyo3(signature = (start, end, reverse = false, snapshot = None, cf = None))]
    fn range(
        &self,
        py: Python<'_>,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        snapshot: Option<PyRef<'_, Snapshot>>,
        cf: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<Iter> {
        self.iter(py, Some(start), Some(end), reverse, snapshot, cf)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Iter> {
        self.iter(py, None, None, false, None, None)
    }

    fn snapshot(&self) -> PyResult<Snapshot> {
        Ok(Snapshot {
            inner: Mutex::new(Some(self.db()?.snapshot())),
        })
    }

    /// Engine statistics: totals, per-level figures, per-tier bytes and hit rates, HotRAP.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db()?;
        let s = py.allow_threads(move || db.stats());
        let d = PyDict::new_bound(py);
        d.set_item("gets", s.gets)?;
        d.set_item("gets_found", s.get_found)?;
        d.set_item("keys_written", s.keys_written)?;
        d.set_item("user_bytes_written", s.user_bytes_written)?;
        d.set_item("wal_bytes", s.wal_bytes)?;
        d.set_item("flushes", s.flushes)?;
        d.set_item("compaction_read_bytes", s.compaction_read_bytes)?;
        d.set_item("compaction_write_bytes", s.compaction_write_bytes)?;
        d.set_item("write_amp", s.write_amp)?;
        d.set_item("block_cache_hits", s.block_cache_hits)?;
        d.set_item("block_cache_misses", s.block_cache_misses)?;
        d.set_item("stall_micros", s.stall_micros)?;
        d.set_item("memtable_bytes", s.memtable_bytes)?;
        d.set_item("total_sst_bytes", s.total_sst_bytes)?;
        d.set_item("fast_table_bytes", s.tier.fast_table_bytes)?;
        d.set_item("capacity_table_bytes", s.tier.capacity_table_bytes)?;
        d.set_item("capacity_gets", s.tier.capacity_gets)?;
        d.set_item("fast_hit_rate", s.tier.fast_hit_rate)?;
        let levels: Vec<Bound<'py, PyDict>> = s
            .levels
            .iter()
            .map(|l| -> PyResult<Bound<'py, PyDict>> {
                let ld = PyDict::new_bound(py);
                ld.set_item("level", l.level)?;
                ld.set_item("files", l.files)?;
                ld.set_item("sorted_runs", l.sorted_runs)?;
                ld.set_item("bytes", l.bytes)?;
                Ok(ld)
            })
            .collect::<PyResult<_>>()?;
        d.set_item("levels", levels)?;
        if let Some(h) = &s.hotrap {
            let hd = PyDict::new_bound(py);
            hd.set_item("fast_hit_rate", h.fast_hit_rate)?;
            hd.set_item("reads_fast", h.reads_fast)?;
            hd.set_item("reads_capacity", h.reads_capacity)?;
            hd.set_item("promoted_by_flush", h.promoted_by_flush)?;
            hd.set_item("promoted_by_compaction", h.promoted_by_compaction)?;
            hd.set_item("retained_records", h.retained_records)?;
            d.set_item("hotrap", hd)?;
        }
        d.set_item("text", s.to_string())?;
        Ok(d)
    }

    /// A named engine property (e.g. `strata.num-files-at-level0`), or `None`.
    fn property(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        let db = self.db()?;
        let name = name.to_string();
        Ok(py.allow_threads(move || db.property(&name)))
    }

    /// Writes the memtable to a table.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(move || db.flush()).map_err(err)
    }

    /// Compacts `[start, end]` (everything by default) down to the last level.
    #[pyo3(signature = (start = None, end = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let (s, e) = (start.map(<[u8]>::to_vec), end.map(<[u8]>::to_vec));
        py.allow_threads(move || db.compact_range(s.as_deref(), e.as_deref()))
            .map_err(err)
    }

    /// Flushes and closes the database; later calls raise `ClosedError`. Closing twice is a
    /// no-op.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(db) = lock(&self.inner).take() else {
            return Ok(());
        };
        py.allow_threads(move || db.close()).map_err(err)
    }

    #[getter]
    fn closed(&self) -> bool {
        lock(&self.inner).is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: PyObject,
        _v: PyObject,
        _tb: PyObject,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

impl Db {
    fn write(&self, py: Python<'_>, batch: engine::WriteBatch, sync: bool) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(move || {
            db.write_opt(
                batch,
                &WriteOptions {
                    sync,
                    ..Default::default()
                },
            )
        })
        .map_err(err)
    }
}

#[pymodule]
fn strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open_db, m)?)?;
    m.add_class::<Db>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<Iter>()?;
    m.add_class::<ColumnFamily>()?;
    let py = m.py();
    m.add("StrataError", py.get_type_bound::<StrataError>())?;
    m.add("IoError", py.get_type_bound::<IoError>())?;
    m.add("CorruptionError", py.get_type_bound::<CorruptionError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type_bound::<InvalidArgumentError>(),
    )?;
    m.add("LockedError", py.get_type_bound::<LockedError>())?;
    m.add(
        "NotADatabaseError",
        py.get_type_bound::<NotADatabaseError>(),
    )?;
    m.add("ClosedError", py.get_type_bound::<ClosedError>())?;
    Ok(())
}
