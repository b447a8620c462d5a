//! Following the writer: a replica's mirror of the log location and the state it rebuilds
//! from it, brought up to date by each refresh.
//!
//! The mirror (`<local_dir>/log`) holds a prefix of every file the replica needs: `CURRENT`,
//! the manifest it names, and the WAL files from the version's WAL bound on. Log files only
//! grow, so a refresh fetches only bytes it has not mirrored. From the mirror it keeps:
//! - the writer's version, read from the mirrored manifest whenever that grew;
//! - each fast-tier table of that version, rebuilt from its extended-WAL key list exactly as
//!   node-loss recovery does (`recovery::parallel`), in `<local_dir>`; capacity-tier tables are
//!   read in place;
//! - one memtable per WAL file from the version's log number on, filled as the file grows.
//!
//! A refresh reads the manifest before the WAL: the writer syncs a table's key list to the WAL
//! before its manifest edit, so every edit the replica applies finds its key lists mirrored.
//! It follows the WAL through log-link records (`wal::link`): a sealed log names the next one.
//! When the newest log has nothing more, that is ambiguous (the writer may have flushed it and
//! deleted it, link and all). The writer keeps a log it sealed for `wal_log_min_age` after
//! deleting it (the seal synced before the manifest edit that released it, by the extended
//! WAL's key-list sync), so a probe within half of that of the last one that found the log
//! unsealed settles it: an idle refresh costs one GET. Otherwise the
//! refresh probes the manifest's next segment: a log is deleted only after the manifest edit
//! that releases it (two GETs, the next segments of the newest log and of the manifest, not
//! there). The manifest is also
//! probed before the logs when the WAL carried key lists (an install follows) and every
//! `manifest_probe_interval`; `CURRENT` then too, and when it names another manifest (the
//! writer restarted, or rolled its manifest over) the next refresh lists the location again:
//! those two changes are seen within `manifest_probe_interval`.
//!
//! Invariants: a view's sequence number is that of the last whole write batch applied, so a
//! reader never sees part of a batch; views never go backwards (a refresh that fails keeps
//! the last view); nothing is written to the log location. Depends on `replica::source`,
//! `version`, `wal`, `memtable`, `recovery` (the rebuild); never on the server or the CLI.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::source::{Listed, LogSource};
use super::view::{LocalTable, View};
use crate::db::SuperVersion;
use crate::error::{Error, Result};
use crate::memtable::{InsertGroup, MemTable};
use crate::options::Options;
use crate::storage::Storage;
use crate::tier::Tier;
use crate::types::SeqNo;
use crate::version::{FileMeta, Version, VersionSet};
use crate::wal::{keylist, link, LogReader, BLOCK_SIZE};

/// A WAL file's part of the view: its memtable and how far it was read.
struct LogTail {
    /// Bytes of the mirrored file applied (the end of the last whole record).
    parsed: usize,
    mem: Arc<MemTable>,
    /// The next log, once this one's log-link record was read (it is sealed).
    next: Option<u64>,
    /// The last sequence number applied from this file (0: none).
    last_seq: SeqNo,
    /// The first sequence number applied from this file (0: none).
    first_seq: SeqNo,
}

/// What a refresh did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Refreshed {
    /// Bytes fetched from the log location.
    pub fetched: u64,
    /// Fast-tier tables rebuilt.
    pub rebuilt: usize,
    /// Tables no longer in the version (the caller evicts their readers).
    pub dropped: Vec<u64>,
    /// The location was listed (at open, or after the writer changed manifests).
    pub listed: bool,
}

/// See the module docs.
pub(crate) struct Follower {
    source: Arc<dyn LogSource>,
    storage: Arc<dyn Storage>,
    /// `<local_dir>`: the rebuilt tables.
    dir: PathBuf,
    /// `<local_dir>/log`: the mirror.
    mirror: PathBuf,
    opts: Options,
    manifest_probe_interval: Duration,
    /// Mirrored bytes of each file.
    sizes: HashMap<String, u64>,
    /// The manifest CURRENT names, as mirrored.
    manifest: Option<String>,
    versions: Option<VersionSet>,
    /// The version with rebuilt tables' metadata: what views read.
    version: Option<Arc<Version>>,
    logs: BTreeMap<u64, LogTail>,
    /// The WAL file the writer appends to, as far as the replica knows.
    newest: Option<u64>,
    tables: HashMap<u64, Arc<LocalTable>>,
    /// The location must be listed again (at open; the writer changed manifests).
    relist: bool,
    /// Key lists were read from the WAL since the manifest was last probed.
    manifest_due: bool,
    last_manifest_probe: Option<Instant>,
    /// When a probe was sent that found the newest log unsealed and not deleted: the writer
    /// seals every later log after it, and deletes none it sealed sooner than
    /// `wal_log_min_age` after that.
    idle_anchor: Option<Instant>,
}

fn log_name(n: u64) -> String {
    format!("{n:06}.log")
}

fn parse_log(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".log")?;
    (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

impl Follower {
    pub fn new(
        source: Arc<dyn LogSource>,
        storage: Arc<dyn Storage>,
        dir: &Path,
        opts: Options,
        manifest_probe_interval: Duration,
    ) -> Result<Follower> {
        let mirror = dir.join("log");
        storage.create_dir_all(&mirror)?;
        // The mirror survives a restart (files only grow); sizes are what it holds.
        let mut sizes = HashMap::new();
        for name in storage.list(&mirror)? {
            let size = storage.open(&mirror.join(&name))?.size();
            sizes.insert(name, size);
        }
        Ok(Follower {
            source,
            storage,
            dir: dir.to_path_buf(),
            mirror,
            opts,
            manifest_probe_interval,
            sizes,
            manifest: None,
            versions: None,
            version: None,
            logs: BTreeMap::new(),
            newest: None,
            tables: HashMap::new(),
            relist: true,
            manifest_due: false,
            last_manifest_probe: None,
            idle_anchor: None,
        })
    }

    /// The writer's version as last read (`None` before the first refresh).
    pub fn versions(&self) -> Option<&VersionSet> {
        self.versions.as_ref()
    }

    /// Requests the source sent.
    /// Appends `bytes` to the mirror of `name` (or replaces it, `replace`).
    fn mirror_append(&mut self, name: &str, bytes: &[u8], replace: bool) -> Result<()> {
        let path = self.mirror.join(name);
        let old = if replace {
            0
        } else {
            self.sizes.get(name).copied().unwrap_or(0)
        };
        if replace {
            let mut f = self.storage.create(&path)?;
            f.append(bytes)?;
            f.flush()?;
        } else if !bytes.is_empty() {
            let f = self.storage.open_rw(&path, old + bytes.len() as u64)?;
            f.write_at(old, bytes)?;
        }
        self.sizes
            .insert(name.to_string(), old + bytes.len() as u64);
        Ok(())
    }

    fn mirror_remove(&mut self, name: &str) -> Result<()> {
        if self.sizes.remove(name).is_some() {
            match self.storage.remove(&self.mirror.join(name)) {
                Err(e) if !e.is_not_found() => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Reads `CURRENT` into the mirror: the manifest it names, or `None` if absent.
    fn fetch_current(&mut self) -> Result<Option<String>> {
        let Some(cur) = self.source.fetch_whole("CURRENT")? else {
            return Ok(None);
        };
        let name = std::str::from_utf8(&cur)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
            .ok_or_else(|| {
                Error::corruption("the log location's CURRENT does not name a manifest")
            })?
            .to_string();
        self.mirror_append("CURRENT", &cur, true)?;
        Ok(Some(name))
    }

    /// Lists the location and mirrors CURRENT, its manifest and the WAL files from the
    /// manifest's WAL bound on. Returns the bytes fetched.
    ///
    /// A listing is no snapshot (an S3 LIST, a directory walk): a file created while it runs
    /// may be missed. So the manifest is read first (listed, then probed for what it gained),
    /// and the logs come from a second listing after it: every log that manifest needs existed
    /// before it was read, and is in the second listing unless a later edit released it (then
    /// the install fails and the next refresh reads that edit).
    fn sync_listing(&mut self) -> Result<u64> {
        let first = self.source.list()?;
        self.idle_anchor = None;
        let Some(manifest) = self.fetch_current()? else {
            return Err(Error::invalid(
                "the log location holds no database (no CURRENT): start the writer first",
            ));
        };
        let mut fetched = 0;
        let listed = first.iter().find(|l| l.name == manifest);
        fetched += self.fetch_listed_or_new(&manifest, listed)?;
        fetched += self.fetch_listed_or_new(&manifest, None)?;
        self.manifest = Some(manifest.clone());
        let versions = self.read_versions()?;
        let listing = self.source.list()?;
        let bound = versions.wal_bound();
        let log_number = versions.log_number;
        self.versions = Some(versions);
        let mut newest = None;
        for l in &listing {
            if let Some(n) = parse_log(&l.name) {
                if n >= bound {
                    fetched += self.fetch_listed_or_new(&l.name, Some(l))?;
                    // A listing is no snapshot: a log may have been listed before the manifest
                    // edit whose key list it took after. What it gained since is fetched too,
                    // so every key list the mirrored manifest names is mirrored.
                    fetched += self.fetch_listed_or_new(&l.name, None)?;
                    newest = newest.max(Some(n));
                }
            }
        }
        // Files the location no longer holds (or no longer needed) leave the mirror.
        let keep: HashSet<String> = listing
            .iter()
            .map(|l| l.name.clone())
            .filter(|n| parse_log(n).is_some_and(|n| n >= bound) || *n == manifest)
            .chain(["CURRENT".to_string()])
            .collect();
        let gone: Vec<String> = self
            .sizes
            .keys()
            .filter(|n| !keep.contains(*n))
            .cloned()
            .collect();
        for n in gone {
            self.mirror_remove(&n)?;
        }
        // Memtables start again from the logs the manifest names unflushed.
        self.logs.clear();
        self.last_manifest_probe = Some(Instant::now());
        self.manifest_due = false;
        self.newest = Some(newest.unwrap_or(log_number).max(log_number));
        self.relist = false;
        Ok(fetched)
    }

    /// Mirrors what `name` holds past the mirrored prefix: from a listing when given, else by
    /// probing. A mirror longer than the listing (a file replaced) is fetched again whole.
    fn fetch_listed_or_new(&mut self, name: &str, listed: Option<&Listed>) -> Result<u64> {
        let have = self.sizes.get(name).copied().unwrap_or(0);
        let bytes = match listed {
            Some(l) if l.size < have => {
                let b = self.source.fetch_listed(l, 0)?;
                self.mirror_append(name, &b, true)?;
                return Ok(b.len() as u64);
            }
            Some(l) if l.size == have => return Ok(0),
            Some(l) => match self.source.fetch_listed(l, have) {
                Ok(b) => b,
                // Deleted since the listing (the writer's retention): nothing to mirror.
                Err(e) if e.is_not_found() => return Ok(0),
                Err(e) => return Err(e),
            },
            None => self.source.fetch_new(name, have)?,
        };
        self.mirror_append(name, &bytes, false)?;
        Ok(bytes.len() as u64)
    }

    fn read_versions(&self) -> Result<VersionSet> {
        let vs = VersionSet::recover(
            &self.mirror,
            self.storage.clone(),
            self.opts.num_levels,
            self.opts.max_manifest_file_size,
        )?;
        vs.refuse_families("a replica")?;
        Ok(vs)
    }

    /// Whether a probe of the newest log that found nothing and came back at `now` settles
    /// that the log is idle, not deleted: the writer deletes a log it sealed no sooner than
    /// `Options::wal_log_min_age` after (and it sealed it later than `idle_anchor`). Half of
    /// it is the margin for the two machines' clocks and the request's time in flight. A
    /// writer that restarted deletes the earlier process's logs at once: that is seen, as
    /// before, when `CURRENT` is next read (every `manifest_probe_interval`).
    fn idle_settled(&self, now: Instant) -> bool {
        self.idle_anchor
            .is_some_and(|a| now.saturating_duration_since(a) < self.opts.wal_log_min_age / 2)
    }

    /// Fetches what the manifest gained (one request when nothing); bytes fetched.
    fn probe_manifest_segment(&mut self) -> Result<u64> {
        let Some(name) = self.manifest.clone() else {
            self.relist = true;
            return Ok(0);
        };
        self.fetch_listed_or_new(&name, None)
    }

    /// Probes the manifest (and, when it did not grow, CURRENT): whether it grew.
    fn probe_manifest(&mut self, fetched: &mut u64) -> Result<bool> {
        self.last_manifest_probe = Some(Instant::now());
        self.manifest_due = false;
        let Some(name) = self.manifest.clone() else {
            self.relist = true;
            return Ok(false);
        };
        let n = self.fetch_listed_or_new(&name, None)?;
        *fetched += n;
        if n > 0 {
            return Ok(true);
        }
        // Nothing new: the writer may have moved to another manifest (a restart, a roll-over).
        match self.source.fetch_whole("CURRENT")? {
            Some(cur) if cur.strip_suffix(b"\n") == Some(name.as_bytes()) => {}
            _ => self.relist = true,
        }
        Ok(false)
    }

    /// Fetches and applies the WAL from the newest known log on, through its links.
    fn follow_logs(&mut self, fetched: &mut u64) -> Result<()> {
        let Some(mut n) = self.newest else {
            return Ok(());
        };
        // Logs before the newest, from the manifest's log number on (after a listing: the
        // memtables start again), then the newest and the logs its links lead to.
        let from = self.versions.as_ref().map_or(0, |v| v.log_number);
        let older: Vec<u64> = self
            .sizes
            .keys()
            .filter_map(|k| parse_log(k))
            .filter(|l| *l >= from && *l < n)
            .collect::<std::collections::BTreeSet<u64>>()
            .into_iter()
            .collect();
        for l in older {
            self.apply_log(l)?;
        }
        loop {
            *fetched += self.fetch_listed_or_new(&log_name(n), None)?;
            self.apply_log(n)?;
            match self.logs.get(&n).and_then(|t| t.next) {
                Some(next) if next > n => {
                    n = next;
                    self.newest = Some(n);
                }
                _ => return Ok(()),
            }
        }
    }

    /// Applies what log `n`'s mirror holds past what was applied into its memtable.
    fn apply_log(&mut self, n: u64) -> Result<()> {
        let name = log_name(n);
        let Some(&size) = self.sizes.get(&name) else {
            return Ok(());
        };
        let tail = self.logs.entry(n).or_insert_with(|| LogTail {
            parsed: 0,
            mem: Arc::new(MemTable::for_options(n, &self.opts, None)),
            next: None,
            last_seq: 0,
            first_seq: 0,
        });
        if tail.parsed as u64 >= size {
            return Ok(());
        }
        // Only the part not applied yet, from the log block the next record starts in (block
        // boundaries are where the reader's framing restarts): re-reading the whole file at
        // every refresh made following a log quadratic in its size.
        let start = tail.parsed - tail.parsed % BLOCK_SIZE;
        let data = self
            .storage
            .open(&self.mirror.join(&name))?
            .read_at(start as u64, (size - start as u64) as usize)?;
        let mut reader = LogReader::resume(&data, tail.parsed - start, name.clone(), true);
        let mut group = InsertGroup::default();
        let mem = tail.mem.clone();
        while let Some(rec) = reader.next_record()? {
            if keylist::is_key_list(&rec) {
                self.manifest_due = true;
                continue;
            }
            if link::is_log_link(&rec) {
                tail.next = Some(
                    link::decode(&rec).map_err(|e| Error::corruption(format!("{name}: {e}")))?,
                );
                continue;
            }
            let (first, count) = match rec {
                Cow::Borrowed(r) => crate::recovery::normal::add_batch(&mut group, &mem, r),
                Cow::Owned(r) => {
                    let mut own = InsertGroup::default();
                    let added = crate::recovery::normal::add_batch(&mut own, &mem, &r);
                    own.insert(&mem);
                    added
                }
            }
            .map_err(|e| Error::corruption(format!("{name}: {e}")))?;
            tail.last_seq = tail.last_seq.max(first + count - 1);
            if tail.first_seq == 0 {
                tail.first_seq = first;
            }
        }
        group.insert(&mem);
        tail.parsed = start + reader.position();
        Ok(())
    }

    /// Brings the mirror and the state up to date; `force_manifest`: probe the manifest even
    /// if it is not due (a read found a table gone). Returns the new view and what changed.
    pub fn refresh(&mut self, force_manifest: bool) -> Result<(Arc<View>, Refreshed)> {
        let mut r = Refreshed::default();
        let mut manifest_grew = false;
        if self.relist || self.source.cheap_listing() {
            r.fetched += self.sync_listing()?;
            r.listed = true;
            manifest_grew = true;
        } else {
            let due = force_manifest
                || self.manifest_due
                || self
                    .last_manifest_probe
                    .is_none_or(|t| t.elapsed() >= self.manifest_probe_interval);
            if due {
                manifest_grew = self.probe_manifest(&mut r.fetched)?;
                if self.relist {
                    r.fetched += self.sync_listing()?;
                    r.listed = true;
                    manifest_grew = true;
                }
            }
        }
        if manifest_grew && !r.listed {
            self.versions = Some(self.read_versions()?);
        }
        // The WAL after the manifest: every key list an applied edit names is mirrored.
        let logs_probed = Instant::now();
        self.follow_logs(&mut r.fetched)?;
        // The newest log had nothing more. That is ambiguous: the writer may have flushed and
        // deleted it (its link to the next log with it). It is not, if the probe came back
        // within half of `wal_log_min_age` of the anchors (`idle_settled`). Otherwise: a log
        // is deleted only after the manifest edit that releases it, so a manifest that did
        // not grow since the log's probe means the log really was idle; one that grew is
        // read, and the logs followed again (the key lists its edits name were synced before
        // them). A probe before the logs' does not settle it (the edit may land between the
        // two).
        if !r.listed {
            if self.idle_settled(Instant::now()) {
                self.idle_anchor = Some(logs_probed);
            } else {
                let n = self.probe_manifest_segment()?;
                r.fetched += n;
                if n > 0 {
                    manifest_grew = true;
                    self.versions = Some(self.read_versions()?);
                    self.follow_logs(&mut r.fetched)?;
                } else {
                    self.idle_anchor = Some(logs_probed);
                }
            }
        }
        // The writer flushed past the last log the links led to: a log in the chain is gone
        // (its retention ended before this refresh) or was never linked (a crash). The
        // location is listed again.
        let log_number = self.versions.as_ref().map_or(0, |v| v.log_number);
        if !r.listed && self.newest.is_some_and(|n| n < log_number) {
            r.fetched += self.sync_listing()?;
            r.listed = true;
            manifest_grew = true;
            self.follow_logs(&mut r.fetched)?;
        }
        // A listing reads the manifest, then the logs; the writer may release and delete the
        // manifest's first log in between. Its deletion came after the edit that released
        // it, so the manifest read again now holds that edit, and the version then starts
        // past the deleted log. Without this, a version whose last sequence already counts
        // the deleted log's writes would be served with the later logs and without those
        // writes: the memtables' sequence check below cannot see that. Read until the
        // manifest held still across the logs' reads (bounded: the checks below remain).
        if r.listed {
            for _ in 0..3 {
                let grew = self.probe_manifest(&mut r.fetched)?;
                if !grew && !self.relist {
                    break;
                }
                if grew {
                    manifest_grew = true;
                    self.versions = Some(self.read_versions()?);
                    self.follow_logs(&mut r.fetched)?;
                }
                let log_number = self.versions.as_ref().map_or(0, |v| v.log_number);
                if self.relist || self.newest.is_some_and(|n| n < log_number) {
                    r.fetched += self.sync_listing()?;
                    self.follow_logs(&mut r.fetched)?;
                }
            }
        }
        // The memtables must hold every write after the version's tables: a log the writer
        // deleted after the mirrored manifest was read (a later edit released it) leaves a
        // gap, and a view with a gap would show older values at a newer sequence.
        let mut attempt = 0;
        while let Some(gap) = self.memtable_gap() {
            attempt += 1;
            if attempt > 3 || !self.read_release(&mut r)? {
                return Err(Error::corruption(format!(
                    "replica: the WAL after the writer's version is incomplete ({gap}); the \
                     refresh is retried"
                )));
            }
            manifest_grew = true;
        }
        if manifest_grew || self.version.is_none() {
            let mut attempt = 0;
            while let Err(e) = self.install_version(&mut r) {
                // A later edit may have released a log this version still needs (the writer
                // moved on while the mirror caught up): read that edit and install it instead.
                attempt += 1;
                if attempt > 3 || !(e.is_corruption() || e.is_not_found()) {
                    return Err(e);
                }
                if !self.read_release(&mut r)? {
                    return Err(e);
                }
            }
        }
        Ok((self.view()?, r))
    }

    /// Where the memtables' writes do not follow on from the version's (`None`: they do).
    /// Logs from the version's log number on hold the writes after its tables, one after the
    /// other; logs with no write batch are skipped.
    fn memtable_gap(&self) -> Option<String> {
        let versions = self.versions.as_ref()?;
        // The version's first log is gone while a later one is here: the writer flushed it,
        // released it in an edit after the mirrored manifest was read, and deleted it (a
        // listing is read after the manifest). Its writes are then in no table this version
        // names, and the sequence check below cannot see that when the version's last
        // sequence already counts them. (A directory holds a log from its creation, and logs
        // are created in order; on an object store an empty log may not be uploaded yet.)
        // (Log 0 is no log: a new database's manifest names none before its first edit.)
        if self.source.cheap_listing()
            && versions.log_number > 0
            && !self.logs.contains_key(&versions.log_number)
            && self.logs.range(versions.log_number..).next().is_some()
        {
            return Some(format!(
                "log {} that the version starts from is gone",
                versions.log_number
            ));
        }
        let mut expect = versions.last_sequence + 1;
        let mut first_log = true;
        for (n, t) in self.logs.range(versions.log_number..) {
            if t.first_seq == 0 {
                continue;
            }
            // The version's last sequence may count writes already in its first log.
            let ok = if first_log {
                t.first_seq <= expect
            } else {
                t.first_seq == expect
            };
            if !ok {
                return Some(format!(
                    "log {n} starts at sequence {}, after {}",
                    t.first_seq,
                    expect - 1
                ));
            }
            first_log = false;
            expect = t.last_seq + 1;
        }
        None
    }

    /// After an install found a log missing: reads what the writer changed since (a listing
    /// where listing is cheap, else the manifest's new segments, listing again if the log
    /// chain broke) and follows the logs. Whether the manifest moved on.
    fn read_release(&mut self, r: &mut Refreshed) -> Result<bool> {
        if self.source.cheap_listing() {
            let before = self
                .sizes
                .get(self.manifest.as_deref().unwrap_or(""))
                .copied();
            r.fetched += self.sync_listing()?;
            r.listed = true;
            self.follow_logs(&mut r.fetched)?;
            let after = self
                .sizes
                .get(self.manifest.as_deref().unwrap_or(""))
                .copied();
            return Ok(before != after);
        }
        let n = self.probe_manifest_segment()?;
        if n == 0 {
            return Ok(false);
        }
        r.fetched += n;
        self.versions = Some(self.read_versions()?);
        self.follow_logs(&mut r.fetched)?;
        let log_number = self.versions.as_ref().map_or(0, |v| v.log_number);
        if self.newest.is_some_and(|n| n < log_number) {
            r.fetched += self.sync_listing()?;
            r.listed = true;
            self.follow_logs(&mut r.fetched)?;
        }
        Ok(true)
    }

    /// Rebuilds the fast-tier tables the version names and the replica lacks, drops those it
    /// no longer names, and drops memtables of logs it says are flushed.
    fn install_version(&mut self, r: &mut Refreshed) -> Result<()> {
        let versions = self
            .versions
            .as_ref()
            .ok_or_else(|| Error::invalid("replica: no version read yet"))?;
        let v = versions.current();
        let mut fast: Vec<(usize, u64, FileMeta)> = Vec::new();
        for (l, level) in v.levels.iter().enumerate() {
            for run in &level.runs {
                for f in &run.files {
                    if f.tier == Tier::Fast {
                        fast.push((l, run.id, f.meta.clone()));
                    }
                }
            }
        }
        let missing: Vec<(usize, u64, FileMeta)> = fast
            .iter()
            .filter(|(_, _, f)| !self.tables.contains_key(&f.id))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let pins = versions.wal_pins();
            let mut bound = u64::MAX;
            for (_, _, f) in &missing {
                let pin = pins.get(&f.id).ok_or_else(|| {
                    Error::corruption(format!(
                        "fast-tier table {} has no extended-WAL key list: a replica needs the \
                         writer to run with extended_wal",
                        f.id
                    ))
                })?;
                bound = bound.min(*pin);
            }
            let ids: HashSet<u64> = missing.iter().map(|(_, _, f)| f.id).collect();
            let threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .clamp(1, 4);
            let scan = crate::recovery::wal_scan::scan(
                &self.mirror,
                self.storage.as_ref(),
                threads,
                bound,
                &|t| ids.contains(&t),
            )?;
            let built = crate::recovery::parallel::build_tables(
                &self.dir,
                &self.storage,
                &self.opts,
                &missing,
                &scan,
                threads,
            )?;
            r.rebuilt += built.len();
            for (id, meta) in built {
                self.tables.insert(
                    id,
                    Arc::new(LocalTable::new(
                        id,
                        meta.size,
                        &self.dir,
                        self.storage.clone(),
                    )),
                );
            }
        }
        let live: HashSet<u64> = fast.iter().map(|(_, _, f)| f.id).collect();
        let all: HashSet<u64> = v.all_files().map(|f| f.id).collect();
        let old_all: HashSet<u64> = self
            .version
            .as_ref()
            .map(|v| v.all_files().map(|f| f.id).collect())
            .unwrap_or_default();
        r.dropped = old_all.difference(&all).copied().collect();
        self.tables.retain(|id, _| live.contains(id));
        let metas: HashMap<u64, FileMeta> = fast
            .iter()
            .filter_map(|(_, _, f)| {
                let t = self.tables.get(&f.id)?;
                Some((
                    f.id,
                    FileMeta {
                        size: t.size,
                        ..f.clone()
                    },
                ))
            })
            .collect();
        self.version = Some(Arc::new(versions.with_tables_replaced(&metas)?));
        // Memtables of flushed logs go; mirrored logs nothing needs go too.
        let (log_number, bound) = (versions.log_number, versions.wal_bound());
        self.logs.retain(|n, _| *n >= log_number);
        let stale: Vec<String> = self
            .sizes
            .keys()
            .filter(|n| parse_log(n).is_some_and(|n| n < bound))
            .cloned()
            .collect();
        for n in stale {
            self.mirror_remove(&n)?;
        }
        Ok(())
    }

    /// The view of the current state.
    fn view(&self) -> Result<Arc<View>> {
        let version = self
            .version
            .clone()
            .ok_or_else(|| Error::invalid("replica: no version read yet"))?;
        let versions = self
            .versions
            .as_ref()
            .ok_or_else(|| Error::invalid("replica: no version read yet"))?;
        // Newest first, as reads probe them.
        let mut mems: Vec<Arc<MemTable>> = self
            .logs
            .range(versions.log_number..)
            .rev()
            .map(|(_, t)| t.mem.clone())
            .collect();
        let seq = self
            .logs
            .values()
            .map(|t| t.last_seq)
            .fold(versions.last_sequence, SeqNo::max);
        let mem = if mems.is_empty() {
            Arc::new(MemTable::new(0))
        } else {
            mems.remove(0)
        };
        Ok(Arc::new(View {
            sv: Arc::new(SuperVersion {
                mem,
                imms: mems,
                version,
            }),
            seq,
            _pinned: self.tables.values().cloned().collect(),
            log: self.newest.unwrap_or(0),
        }))
    }
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
