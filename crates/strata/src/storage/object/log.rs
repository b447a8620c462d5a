//! A log location on an object store ([`ObjectLogStorage`]): WAL files and the mirrored
//! manifest, kept as objects so that losing the node loses nothing that was synced.
//!
//! Every file is written to a local staging directory (in the fast directory: a write the OS
//! has survives a process crash, as with a local WAL) and, at each `sync`, the bytes appended
//! since the previous sync are uploaded as one object `<name>/<offset:016>` (one PUT per sync,
//! so group commit batches them). Reads use the local copy while it exists and otherwise the
//! objects, fetched [`READ_CONCURRENCY`] at a time, each written at its offset; a gap
//! between segments is corruption. Renames (only `CURRENT.tmp` → `CURRENT`, written in one
//! sync) replace the target's single segment with one PUT, which is atomic. Locking it takes
//! the staging directory's lock (this node) and the location's [`Lease`] (every node): each
//! write to the object store checks the lease first, so a database that lost it (another
//! took it over after it fell silent) stops writing. Deleting a file takes one request per
//! segment, so a crash can leave part of one: only WAL files the manifest no longer needs are
//! deleted, and readers skip those (`VersionSet::wal_bound`).
//!
//! A WAL file this storage created outlives its deletion by `Options::wal_log_min_age`
//! ([`SEALED_LOG_MIN_AGE`]). A replica relies on it (`replica::follow`): the database deletes
//! only a WAL file it sealed (and synced the seal of) before the manifest edit that released
//! it, so one the replica saw unsealed within that age, and whose next segment is absent, is
//! really idle (not deleted, link and all). The deletions are sent by later calls to `remove`
//! or `rename` once due (the flush's and the manifest's writers, never a write's path); an
//! idle writer sends none. A WAL file an earlier process wrote (found at open, replayed) is
//! deleted at once, so none is left behind for long: a replica sees a restart through
//! `CURRENT`, within its `manifest_probe_interval`, as before.
//!
//! Invariants: after `sync` returns, every byte appended to the file is in the object store;
//! names are flat (no directories inside the log location). Depends on `storage` and
//! `storage::object` (the retrying, emulatable client); never on the engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::fence::{fenced, WriteFence};
use super::lease::{Lease, LeaseGuard, DEFAULT_TTL};
use super::CapacityTier;
use crate::error::{Error, ErrorRepr, Result};
use crate::storage::{DirLock, RandomAccessFile, RandomRwFile, Storage, WholeFile, WritableFile};

/// The lease this storage holds: what every write checks.
type LeaseSlot = Arc<parking_lot::Mutex<Leased>>;

#[derive(Default)]
enum Leased {
    /// Never locked (a read-only inspection): writes go unchecked.
    #[default]
    Never,
    Held(Arc<Lease>),
    /// Unlocked: writes fail, as they would for another holder.
    Released,
}

/// How long a WAL file's objects outlive its deletion by default (`Options::wal_log_min_age`;
/// see the module docs). A replica that found a log's next segment absent within half of it
/// of seeing the log unsealed knows the log is idle.
pub const SEALED_LOG_MIN_AGE: Duration = Duration::from_secs(60);

/// WAL files removed whose objects are not deleted yet.
#[derive(Default)]
struct Deferred {
    /// (file name, when `remove` was called), oldest first.
    logs: Vec<(String, Instant)>,
    /// The WAL files this storage created (only their deletions wait).
    created: std::collections::HashSet<String>,
}

/// See the module docs.
pub struct ObjectLogStorage {
    tier: Arc<CapacityTier>,
    local: Arc<dyn Storage>,
    lease_ttl: Duration,
    lease_renew_while_idle: bool,
    lease: LeaseSlot,
    log_min_age: Duration,
    deferred: parking_lot::Mutex<Deferred>,
}

impl ObjectLogStorage {
    /// `tier`: the object store and prefix of the log location; `local`: the storage of the
    /// staging directory (paths passed to this storage name files in it).
    pub fn new(tier: Arc<CapacityTier>, local: Arc<dyn Storage>) -> Self {
        ObjectLogStorage {
            tier,
            local,
            lease_ttl: DEFAULT_TTL,
            lease_renew_while_idle: true,
            lease: LeaseSlot::default(),
            log_min_age: SEALED_LOG_MIN_AGE,
            deferred: parking_lot::Mutex::default(),
        }
    }

    /// Whether the lease is renewed while no write needs it (`Options::wal_lease_renew_while_idle`).
    pub fn with_lease_renewal_while_idle(mut self, renew: bool) -> Self {
        self.lease_renew_while_idle = renew;
        self
    }

    /// How long a removed WAL file's objects are kept ([`SEALED_LOG_MIN_AGE`]; tests shorten
    /// it).
    pub fn with_log_min_age(mut self, age: Duration) -> Self {
        self.log_min_age = age;
        self
    }

    /// The deferred WAL deletions that are due: their objects are deleted (a failure keeps
    /// the file for the next call).
    fn delete_due_logs(&self) {
        let now = Instant::now();
        let due: Vec<String> = {
            let d = self.deferred.lock();
            d.logs
                .iter()
                .filter(|(_, at)| now.duration_since(*at) >= self.log_min_age)
                .map(|(n, _)| n.clone())
                .collect()
        };
        for name in due {
            match self.remote_remove(&name) {
                Ok(()) => {
                    let mut d = self.deferred.lock();
                    d.logs.retain(|(n, _)| *n != name);
                    d.created.remove(&name);
                }
                Err(e) => {
                    tracing::warn!(file = %name, error = %e, "could not delete an old WAL file");
                }
            }
        }
    }

    /// WAL files removed whose objects are still kept ([`SEALED_LOG_MIN_AGE`]).
    pub fn deferred_log_deletions(&self) -> usize {
        self.deferred.lock().logs.len()
    }

    /// How long a holder of the location's lease may fall silent before another database
    /// takes the lease over (`storage/object/lease.rs`).
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    fn name(path: &Path) -> Result<String> {
        path.file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .ok_or_else(|| Error::invalid(format!("log location path {}", path.display())))
    }

    /// The segments of `name`, by offset: (object name, offset, size).
    fn segments(&self, name: &str) -> Result<Vec<(String, u64, u64)>> {
        let mut v: Vec<(String, u64, u64)> = self
            .tier
            .list(&format!("{name}/"))?
            .into_iter()
            .filter_map(|(obj, size)| {
                let off = obj.rsplit('/').next()?.parse::<u64>().ok()?;
                Some((obj, off, size))
            })
            .collect();
        v.sort_by_key(|s| s.1);
        Ok(v)
    }

    /// The objects of `path`, which has no local copy, read whole.
    fn read_remote(&self, path: &Path) -> Result<WholeFile> {
        let name = Self::name(path)?;
        let segs = self.segments(&name)?;
        if segs.is_empty() {
            return Err(Error::invalid(format!(
                "log location: {name} does not exist"
            )));
        }
        let mut end = 0u64;
        for (_, off, size) in &segs {
            if *off != end {
                let all: Vec<(u64, u64)> = segs.iter().map(|s| (s.1, s.2)).collect();
                return Err(Error::corruption(format!(
                    "log location: {name} has a gap before offset {off} (segments at/of {all:?})"
                )));
            }
            end += size;
        }
        // One GET per synced segment, many in flight: a file holds one segment per sync, and
        // fetching them one after another made recovery over an object store wait out every
        // request's latency in turn.
        // A segment holds what one sync uploaded, up to a whole log file when its writes were
        // not synced: ranges of at most READ_CHUNK keep READ_CONCURRENCY requests in flight
        // even for a file of one segment.
        let mut ranges = Vec::new();
        for (obj, _, size) in &segs {
            let object = self.tier.path(obj);
            let mut at = 0;
            while at < *size {
                let n = (*size - at).min(READ_CHUNK);
                ranges.push((object.clone(), at, n as usize));
                at += n;
            }
        }
        let len = end as usize;
        let buf = self
            .tier
            .get_many_into(ranges, READ_CONCURRENCY, vec![0; len])?;
        Ok(WholeFile::Read(buf))
    }

    /// Deletes every segment of `name`, each request checked against the lease.
    fn remote_remove(&self, name: &str) -> Result<()> {
        for (obj, _, _) in self.segments(name)? {
            let path = self.tier.path(&obj);
            leased(&self.lease, |until| self.tier.delete_until(&path, until))?;
        }
        Ok(())
    }
}

/// Runs one leased request (see [`fenced`]: the request — the same bytes to the same object,
/// or a deletion, so applying it twice is applying it once — is sent again if it ran past the
/// lease). `Fenced` once another database took the lease over, `Locked` if it cannot be
/// renewed.
fn leased<T>(slot: &LeaseSlot, op: impl Fn(Option<std::time::Instant>) -> Result<T>) -> Result<T> {
    fenced(&**slot, op)
}

impl WriteFence for parking_lot::Mutex<Leased> {
    /// What a write holds while its requests run (`None`: no lease was ever taken), or `Locked`.
    fn check(&self) -> Result<Option<LeaseGuard>> {
        let lease = match &*self.lock() {
            Leased::Never => return Ok(None),
            Leased::Held(l) => l.clone(),
            Leased::Released => {
                return Err(ErrorRepr::Locked(
                    "log location: written after its lock was released".into(),
                )
                .into())
            }
        };
        lease.check().map(Some)
    }
}

/// The lock of an object-store log location: the staging directory's and the lease.
struct LeaseLock {
    _local: Box<dyn DirLock>,
    slot: LeaseSlot,
}

impl DirLock for LeaseLock {}

impl Drop for LeaseLock {
    fn drop(&mut self) {
        // The last reference (a write checking it holds another for the check's length): the
        // lease is released as it drops, outside the slot's mutex.
        let lease = std::mem::replace(&mut *self.slot.lock(), Leased::Released);
        drop(lease);
    }
}

/// Segment GETs in flight while one file is read back.
const READ_CONCURRENCY: usize = 16;

/// The largest range one GET of a file read back asks for.
const READ_CHUNK: u64 = 8 << 20;

fn segment_name(name: &str, offset: u64) -> String {
    format!("{name}/{offset:016}")
}

struct ObjectLogFile {
    local: Box<dyn WritableFile>,
    lease: LeaseSlot,
    tier: Arc<CapacityTier>,
    name: String,
    uploaded: u64,
    pending: Vec<u8>,
}

impl WritableFile for ObjectLogFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.local.append(data)?;
        self.pending.extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.local.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.local.sync()?;
        if !self.pending.is_empty() {
            let data = Bytes::from(std::mem::take(&mut self.pending));
            let n = data.len() as u64;
            let path = self.tier.path(&segment_name(&self.name, self.uploaded));
            if let Err(e) = leased(&self.lease, |until| {
                self.tier.put_until(&path, data.clone(), until)
            }) {
                self.pending = data.to_vec();
                return Err(e);
            }
            self.uploaded += n;
        }
        Ok(())
    }
    fn len(&self) -> u64 {
        self.local.len()
    }
}

/// A file of the object store, read segment by segment on demand (opening it costs one LIST:
/// a reader of the first records of each WAL file does not fetch whole files).
struct RemoteFile {
    tier: Arc<CapacityTier>,
    name: String,
    /// (object, offset, size), contiguous from 0.
    segs: Vec<(String, u64, u64)>,
}

impl RandomAccessFile for RemoteFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset
            .checked_add(len as u64)
            .filter(|e| *e <= self.size())
            .ok_or_else(|| {
                Error::corruption(format!(
                    "read past the end of log-location file {}",
                    self.name
                ))
            })?;
        let ranges: Vec<_> = self
            .segs
            .iter()
            .filter_map(|(obj, off, size)| {
                let (lo, hi) = (offset.max(*off), end.min(off + size));
                (lo < hi).then(|| (self.tier.path(obj), lo - off, (hi - lo) as usize))
            })
            .collect();
        if ranges.len() == 1 {
            let (path, at, n) = &ranges[0];
            return self.tier.get_range(path, *at, *n);
        }
        let len = (end - offset) as usize;
        let buf = self
            .tier
            .get_many_into(ranges, READ_CONCURRENCY, vec![0; len])?;
        Ok(Bytes::from(buf))
    }
    fn size(&self) -> u64 {
        self.segs.last().map_or(0, |(_, off, size)| off + size)
    }
}

impl Storage for ObjectLogStorage {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let name = Self::name(path)?;
        // A WAL number is never handed out twice once any of its segments exists (openers
        // mark every listed number used): no request on the write path. Other files (a
        // manifest a crash left unnamed, `CURRENT.tmp`) may have segments of an earlier life.
        if !name.ends_with(".log") {
            self.remote_remove(&name)?;
        } else if !self.log_min_age.is_zero() {
            self.deferred.lock().created.insert(name.clone());
        }
        Ok(Box::new(ObjectLogFile {
            local: self.local.create(path)?,
            lease: self.lease.clone(),
            tier: self.tier.clone(),
            name,
            uploaded: 0,
            pending: Vec::new(),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        if self.local.exists(path)? {
            return self.local.open(path);
        }
        let name = Self::name(path)?;
        let segs = self.segments(&name)?;
        if segs.is_empty() {
            return Err(Error::invalid(format!(
                "log location: {name} does not exist"
            )));
        }
        let mut at = 0;
        for (_, off, size) in &segs {
            if *off != at {
                return Err(Error::corruption(format!(
                    "log location: {name} has a gap before offset {off}"
                )));
            }
            at += size;
        }
        Ok(Arc::new(RemoteFile {
            tier: self.tier.clone(),
            name,
            segs,
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        if self.local.exists(path)? {
            return self.local.read_all(path);
        }
        self.read_remote(path).map(WholeFile::into_vec)
    }

    fn read_whole(&self, path: &Path) -> Result<WholeFile> {
        if self.local.exists(path)? {
            return self.local.read_whole(path);
        }
        self.read_remote(path)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.local.exists(path)? || !self.segments(&Self::name(path)?)?.is_empty())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (f, t) = (Self::name(from)?, Self::name(to)?);
        self.delete_due_logs();
        let data = self.read_all(from)?;
        // One PUT replaces the target's first segment atomically; any later ones go after.
        let data = Bytes::from(data);
        let first = self.tier.path(&segment_name(&t, 0));
        leased(&self.lease, |until| {
            self.tier.put_until(&first, data.clone(), until)
        })?;
        for (obj, off, _) in self.segments(&t)? {
            if off != 0 {
                let path = self.tier.path(&obj);
                leased(&self.lease, |until| self.tier.delete_until(&path, until))?;
            }
        }
        self.remote_remove(&f)?;
        if self.local.exists(from)? {
            self.local.rename(from, to)?;
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let name = Self::name(path)?;
        let defer = {
            let mut d = self.deferred.lock();
            let defer = d.created.contains(&name);
            if defer && !d.logs.iter().any(|(n, _)| *n == name) {
                d.logs.push((name.clone(), Instant::now()));
            }
            defer
        };
        if !defer {
            // Not a WAL file this storage wrote: nothing a replica anchors on (module docs).
            self.remote_remove(&name)?;
        }
        self.delete_due_logs();
        if self.local.exists(path)? {
            self.local.remove(path)?;
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names: Vec<String> = if self.local.exists(dir)? {
            self.local.list(dir)?
        } else {
            Vec::new()
        };
        for (obj, _) in self.tier.list("")? {
            if let Some((name, _)) = obj.split_once('/') {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.local.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.local.sync_dir(dir)
    }

    /// Uploads the staged bytes past the file's last segment (an earlier process appended
    /// them and ended before its sync) as one more segment, so that every byte the local
    /// copy holds is in the object store. A file without a local copy is all in segments.
    fn sync_file(&self, path: &Path) -> Result<()> {
        if !self.local.exists(path)? {
            return Ok(());
        }
        self.local.sync_file(path)?;
        let name = Self::name(path)?;
        let end = self
            .segments(&name)?
            .last()
            .map_or(0, |(_, off, size)| off + size);
        let local = self.local.open(path)?;
        let staged = local.size();
        if staged < end {
            return Err(Error::corruption(format!(
                "log location: the staged copy of {name} ({staged} bytes) is shorter than its \
                 {end} uploaded bytes"
            )));
        }
        if staged > end {
            let tail = local.read_at(end, (staged - end) as usize)?;
            let path = self.tier.path(&segment_name(&name, end));
            leased(&self.lease, |until| {
                self.tier.put_until(&path, tail.clone(), until)
            })?;
        }
        Ok(())
    }

    fn open_rw(&self, path: &Path, _size: u64) -> Result<Arc<dyn RandomRwFile>> {
        Err(Error::invalid(format!(
            "log location: {} cannot be opened for random writes",
            path.display()
        )))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        // This node first (a second opener here fails at once), then every node.
        let local = self.local.lock(path)?;
        let lease = Lease::acquire(self.tier.clone(), path, self.lease_ttl)?;
        lease.renew_while_idle(self.lease_renew_while_idle);
        *self.lease.lock() = Leased::Held(Arc::new(lease));
        Ok(Box::new(LeaseLock {
            _local: local,
            slot: self.lease.clone(),
        }))
    }
}

/// Whether a `wal_location` names an object store (a URL) rather than a directory.
pub fn is_object_store_location(loc: &Path) -> bool {
    loc.to_string_lossy().contains("://")
}

/// The storage and directory of `opts.wal_location` for a database in `dir`: a directory on
/// `storage`, or, for a URL (`s3://`, `file://`, `memory://`), an [`ObjectLogStorage`] staging in
/// `dir/wal-stage` (emulated as `opts.wal_emulation` asks).
/// An object store's requests and health are recorded in `stats`.
pub fn log_location(
    dir: &Path,
    storage: &Arc<dyn Storage>,
    opts: &crate::Options,
    stats: Arc<crate::stats::TierStats>,
) -> Result<(Arc<dyn Storage>, PathBuf)> {
    fenced_log_location(dir, storage, opts, stats).map(|(s, d, _)| (s, d))
}

/// The storage, directory and write fence of `opts.wal_location` ([`log_location`]): an
/// object-store location's fence is its lease, held once the location is locked, which the
/// database's capacity-tier writes check too (`fence`).
pub(crate) type LogLocation = (Arc<dyn Storage>, PathBuf, Option<Arc<dyn WriteFence>>);

/// [`log_location`] with the location's write fence.
pub(crate) fn fenced_log_location(
    dir: &Path,
    storage: &Arc<dyn Storage>,
    opts: &crate::Options,
    stats: Arc<crate::stats::TierStats>,
) -> Result<LogLocation> {
    let Some(loc) = &opts.wal_location else {
        return Ok((storage.clone(), dir.to_path_buf(), None));
    };
    if !is_object_store_location(loc) {
        // The database directory under another spelling (`./db`, `db/.`, `/abs/db` for `db`)
        // is no location apart: the logs stay in it (and need no second lock, which would
        // otherwise fail on the same LOCK file). Symbolic links are not followed.
        let same = match (std::path::absolute(loc), std::path::absolute(dir)) {
            (Ok(a), Ok(b)) => a == b,
            _ => loc == dir,
        };
        let at = if same { dir.to_path_buf() } else { loc.clone() };
        return Ok((storage.clone(), at, None));
    }
    let mut c = super::CapacityOptions::new(loc.to_string_lossy().into_owned());
    c.emulation = opts.wal_emulation.clone();
    let tier = CapacityTier::open(&c, None, stats)?;
    let stage = dir.join("wal-stage");
    let log = ObjectLogStorage::new(tier, storage.clone())
        .with_lease_ttl(opts.wal_lease_ttl)
        .with_lease_renewal_while_idle(opts.wal_lease_renew_while_idle)
        .with_log_min_age(opts.wal_log_min_age);
    let fence: Arc<dyn WriteFence> = log.lease.clone();
    Ok((Arc::new(log), stage, Some(fence)))
}

#[cfg(test)]
mod tests;
