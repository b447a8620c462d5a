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
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    fn store(name: &str) -> (tempfile::TempDir, ObjectLogStorage) {
        let dir = tempfile::tempdir().unwrap();
        let c = super::super::CapacityOptions::new(format!("memory://log-test-{name}"));
        let tier = CapacityTier::open(&c, None, Default::default()).unwrap();
        (dir, ObjectLogStorage::new(tier, Arc::new(LocalFs)))
    }

    /// A WAL file this storage created keeps its objects for the minimum age after its
    /// removal, deleted by a later deletion or rename once due (not by a WAL's creation); one
    /// an earlier process wrote, and every other file, goes at once.
    #[test]
    fn a_removed_wal_file_outlives_its_removal_by_the_minimum_age() {
        let (dir, s) = store("log-min-age");
        let s = s.with_log_min_age(Duration::from_millis(600));
        let p = |n: &str| dir.path().join(n);
        let write = |s: &ObjectLogStorage, name: &str| {
            let mut f = s.create(&p(name)).unwrap();
            f.append(b"synced").unwrap();
            f.sync().unwrap();
        };
        let remote = |name: &str| !s.segments(name).unwrap().is_empty();
        write(&s, "000001.log");
        write(&s, "MANIFEST-000002");
        s.remove(&p("000001.log")).unwrap();
        s.remove(&p("MANIFEST-000002")).unwrap();
        assert!(remote("000001.log"), "deleted before its minimum age");
        assert!(!p("000001.log").exists(), "the staged copy stays");
        assert!(!remote("MANIFEST-000002"));
        assert_eq!(s.deferred_log_deletions(), 1);
        std::thread::sleep(Duration::from_millis(700));
        // Creating a WAL sends none (it may be on a write's path); a deletion does.
        write(&s, "000003.log");
        assert!(remote("000001.log"), "deleted by a WAL's creation");
        s.remove(&p("MANIFEST-000005")).unwrap();
        assert!(!remote("000001.log"), "never deleted");
        assert_eq!(s.deferred_log_deletions(), 0);
        // A WAL file an earlier process wrote (another storage here) goes at once.
        let (_dir2, other) = store("log-min-age");
        let other = other.with_log_min_age(Duration::from_secs(600));
        write(&other, "000007.log");
        drop(other);
        assert!(remote("000007.log"));
        s.remove(&p("000007.log")).unwrap();
        assert!(!remote("000007.log"), "an earlier process's WAL was kept");
        assert!(remote("000003.log"));
    }

    #[test]
    fn one_database_at_a_time_writes_a_location_across_nodes() {
        // Two nodes: staging directories of their own, one object-store location.
        let (dir_a, a) = store("lease");
        let (dir_b, b) = store("lease");
        let (a, b) = (
            a.with_lease_ttl(Duration::from_secs(3)),
            b.with_lease_ttl(Duration::from_secs(3)),
        );
        let lock_a = a.lock(&dir_a.path().join("LOCK")).unwrap();
        let e = b.lock(&dir_b.path().join("LOCK")).err().expect("held by a");
        assert_eq!(e.kind(), crate::ErrorKind::Locked, "{e}");
        let mut f = a.create(&dir_a.path().join("000001.log")).unwrap();
        f.append(b"acknowledged").unwrap();
        f.sync().unwrap();
        drop(lock_a);
        // Released: the other node takes it at once and reads what the first one synced.
        let _lock_b = b.lock(&dir_b.path().join("LOCK")).unwrap();
        assert_eq!(
            b.read_all(&dir_b.path().join("000001.log")).unwrap(),
            b"acknowledged"
        );
    }

    #[test]
    fn a_database_whose_lease_is_taken_over_fails_its_next_sync() {
        let (dir, s) = store("lease-lost");
        let s = s.with_lease_ttl(Duration::from_secs(3));
        let _lock = s.lock(&dir.path().join("LOCK")).unwrap();
        let mut f = s.create(&dir.path().join("000002.log")).unwrap();
        f.append(b"one").unwrap();
        f.sync().unwrap();
        // Another node takes every next generation (as after a long pause of this one).
        for (name, _) in s.tier.list("LEASE/").unwrap() {
            let g: u64 = name.rsplit('/').next().unwrap().parse().unwrap();
            for n in g + 1..g + 50 {
                let p = s.tier.path(&format!("LEASE/{n:020}"));
                s.tier
                    .put_if_absent(&p, Bytes::from_static(b"other"), None)
                    .unwrap();
            }
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        let e = loop {
            f.append(b"more").unwrap();
            match f.sync() {
                Err(e) => break e,
                Ok(()) => assert!(std::time::Instant::now() < deadline, "never fenced"),
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(e.kind(), crate::ErrorKind::Fenced, "{e}");
    }

    /// A request that ran past the lease's validity (a slow store, a starved renewal) is sent
    /// again under a renewed lease, a bounded number of times; a lost lease is not retried.
    #[test]
    fn a_request_past_the_lease_is_resent_under_a_renewed_one() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let (dir, s) = store("lease-deadline");
        let s = s.with_lease_ttl(Duration::from_secs(3));
        let _lock = s.lock(&dir.path().join("LOCK")).unwrap();
        let late = || -> crate::Error { ErrorRepr::LeaseDeadline("late".into()).into() };
        let calls = AtomicU32::new(0);
        let r = leased(&s.lease, |until| {
            assert!(until.is_some(), "a leased request has a deadline");
            match calls.fetch_add(1, Ordering::Relaxed) {
                0 => Err(late()),
                _ => Ok(7),
            }
        });
        assert_eq!((r.unwrap(), calls.load(Ordering::Relaxed)), (7, 2));
        calls.store(0, Ordering::Relaxed);
        let e = leased(&s.lease, |_| -> Result<()> {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(late())
        })
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Locked, "{e}");
        assert_eq!(calls.load(Ordering::Relaxed), 3, "bounded");
        calls.store(0, Ordering::Relaxed);
        let e = leased(&s.lease, |_| -> Result<()> {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(ErrorRepr::Locked("taken over".into()).into())
        })
        .unwrap_err();
        assert_eq!(
            (e.kind(), calls.load(Ordering::Relaxed)),
            (crate::ErrorKind::Locked, 1)
        );
    }

    #[test]
    fn the_database_directory_spelled_otherwise_is_no_separate_location() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let storage: Arc<dyn Storage> = Arc::new(LocalFs);
        let at = |loc: PathBuf| {
            let opts = crate::Options {
                wal_location: Some(loc),
                ..Default::default()
            };
            log_location(&db, &storage, &opts, Default::default())
                .unwrap()
                .1
        };
        assert_eq!(at(db.join(".")), db);
        assert_eq!(at(dir.path().join("x/../db")), dir.path().join("x/../db")); // `..` kept
        assert_eq!(at(dir.path().join("log")), dir.path().join("log"));
    }

    #[test]
    fn a_file_of_many_segments_reads_back_whole_and_in_ranges() {
        let (dir, s) = store("many");
        let p = dir.path().join("000009.log");
        let mut f = s.create(&p).unwrap();
        let mut want = Vec::new();
        // More segments than reads in flight, of uneven sizes (one empty sync among them).
        for i in 0..(3 * READ_CONCURRENCY + 5) {
            let part: Vec<u8> = (0..(i * 7) % 50).map(|j| (i * 31 + j) as u8).collect();
            f.append(&part).unwrap();
            f.sync().unwrap();
            want.extend_from_slice(&part);
        }
        drop(f);
        std::fs::remove_file(&p).unwrap();
        assert_eq!(s.read_all(&p).unwrap(), want);
        let r = s.open(&p).unwrap();
        assert_eq!(r.size(), want.len() as u64);
        for (at, n) in [
            (0, want.len()),
            (3, 1),
            (40, 700),
            (want.len() - 9, 9),
            (100, 0),
        ] {
            assert_eq!(
                r.read_at(at as u64, n).unwrap().as_ref(),
                &want[at..at + n],
                "{at}+{n}"
            );
        }
        assert!(r.read_at(want.len() as u64 - 3, 4).is_err(), "past the end");
        // The buffer must hold exactly what the ranges read.
        assert!(s.tier.get_many_into(Vec::new(), 4, vec![0u8; 1]).is_err());
    }

    /// Ranges read many at a time land at their own offsets whatever order they complete in:
    /// a tenth of the requests fail once and are retried 20 ms later, after the ranges behind
    /// them have arrived.
    #[test]
    fn ranges_completing_out_of_order_land_at_their_offsets() {
        let mut c = super::super::CapacityOptions::new("memory://log-test-out-of-order");
        c.emulation = Some(super::super::Emulation {
            latency: std::time::Duration::from_millis(1),
            error_rate: 0.1,
            seed: 7,
            ..Default::default()
        });
        let tier = CapacityTier::open(&c, None, Default::default()).unwrap();
        let data: Vec<u8> = (0..64 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
        let p = tier.path("blob");
        tier.put(&p, Bytes::from(data.clone())).unwrap();
        let ranges: Vec<_> = (0..64u64).map(|i| (p.clone(), i * 1024, 1024)).collect();
        let got = tier
            .get_many_into(ranges, 16, vec![0u8; data.len()])
            .unwrap();
        assert!(got == data, "ranges landed out of place");
        assert!(
            tier.stats()
                .retries
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
        );
    }

    #[test]
    fn synced_bytes_survive_the_loss_of_the_staging_directory() {
        let (dir, s) = store("sync");
        let s = s.with_log_min_age(Duration::ZERO);
        let p = dir.path().join("000007.log");
        let mut f = s.create(&p).unwrap();
        f.append(b"hello ").unwrap();
        f.sync().unwrap();
        f.append(b"world").unwrap();
        f.flush().unwrap();
        // The local copy has everything flushed; the object store what was synced.
        assert_eq!(s.read_all(&p).unwrap(), b"hello world");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(s.read_all(&p).unwrap(), b"hello ");
        // The open file (now unlinked locally) still uploads at its next sync.
        f.sync().unwrap();
        assert_eq!(s.read_all(&p).unwrap(), b"hello world");
        assert_eq!(
            s.open(&p).unwrap().read_at(6, 5).unwrap().as_ref(),
            b"world"
        );
        assert!(s
            .list(dir.path())
            .unwrap()
            .contains(&"000007.log".to_string()));
        s.remove(&p).unwrap();
        assert!(!s.exists(&p).unwrap());
    }

    /// A file an earlier process appended to and never synced (the WAL tail open keeps):
    /// `sync_file` uploads the staged bytes past its last segment, once.
    #[test]
    fn sync_file_uploads_what_an_ended_writer_left_staged() {
        let (dir, s) = store("sync-file");
        let p = dir.path().join("000011.log");
        let mut f = s.create(&p).unwrap();
        f.append(b"synced ").unwrap();
        f.sync().unwrap();
        f.append(b"staged").unwrap();
        f.flush().unwrap();
        drop(f);
        s.sync_file(&p).unwrap();
        s.sync_file(&p).unwrap();
        assert_eq!(s.segments("000011.log").unwrap().len(), 2);
        std::fs::remove_file(&p).unwrap();
        assert_eq!(s.read_all(&p).unwrap(), b"synced staged");
        // Without a local copy every byte is in the object store already.
        s.sync_file(&p).unwrap();
        assert_eq!(s.segments("000011.log").unwrap().len(), 2);
    }

    /// A segment larger than one read range comes back whole, its ranges in order.
    #[test]
    fn a_segment_larger_than_a_read_range_reads_back_whole() {
        let (dir, s) = store("big-segment");
        let p = dir.path().join("000012.log");
        let mut f = s.create(&p).unwrap();
        let big: Vec<u8> = (0..(2 * READ_CHUNK as usize + 12_345))
            .map(|i| (i % 251) as u8)
            .collect();
        f.append(&big).unwrap();
        f.sync().unwrap();
        f.append(b"tail").unwrap();
        f.sync().unwrap();
        drop(f);
        std::fs::remove_file(&p).unwrap();
        let got = s.read_all(&p).unwrap();
        assert_eq!(got.len(), big.len() + 4);
        assert!(got[..big.len()] == big[..] && &got[big.len()..] == b"tail");
    }

    #[test]
    fn rename_replaces_the_target() {
        let (dir, s) = store("rename");
        for content in ["MANIFEST-000003\n", "MANIFEST-000009\n"] {
            let tmp = dir.path().join("CURRENT.tmp");
            let mut f = s.create(&tmp).unwrap();
            f.append(content.as_bytes()).unwrap();
            f.sync().unwrap();
            drop(f);
            s.rename(&tmp, &dir.path().join("CURRENT")).unwrap();
        }
        std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
        assert_eq!(
            s.read_all(&dir.path().join("CURRENT")).unwrap(),
            b"MANIFEST-000009\n"
        );
        assert!(!s.exists(&dir.path().join("CURRENT.tmp")).unwrap());
    }
}
