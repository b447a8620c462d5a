//! [`VersionSet`]: the current version, the counters that must survive restarts, and the
//! manifest they are logged to.
//!
//! Files: `MANIFEST-<n>` (a log of encoded [`VersionEdit`]s whose first record is a full
//! snapshot) and `CURRENT` (the name of the live manifest, replaced atomically by writing
//! `CURRENT.tmp`, syncing it, renaming it over `CURRENT` and syncing the directory).
//!
//! With a separate log location the manifest is mirrored there (the same files, written in the
//! same order, each record synced in both places before an edit counts as logged), so a node
//! that loses the fast directory can recover the tree from the log location alone. With the
//! extended WAL the set also keeps each fast-tier table's WAL pin (see [`VersionEdit::wal_pins`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::collections::HashMap;

use super::edit::{
    CompactionStyle, VersionEdit, MANIFEST_FORMAT, MANIFEST_FORMAT_V2, MANIFEST_FORMAT_V3,
};
use super::family::Families;
use super::file_meta::Reaper;
use super::version::Version;
use crate::error::{Error, ErrorRepr, Result};
use crate::storage::Storage;
use crate::wal::{LogReader, LogWriter, ReadOutcome};

/// The path of manifest `n` in `dir`: `MANIFEST-<n>`, `n` zero-padded to six digits.
pub fn manifest_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{n:06}"))
}

/// The path of `dir`'s `CURRENT` file, which names the live manifest.
pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// The counters a snapshot record carries besides the tree.
pub struct SnapshotCounters {
    /// WAL files numbered below this hold nothing unflushed.
    pub log_number: u64,
    /// The next file number to hand out.
    pub next_file_number: u64,
    /// The last sequence number recorded.
    pub last_sequence: u64,
    /// The compaction style the database was created with.
    pub style: CompactionStyle,
    /// Whether the manifest is format v2 (the extended WAL) even without pins.
    pub extended: bool,
}

/// A record that rebuilds `version` on its own (a manifest's first record).
pub fn snapshot_of(
    version: &Version,
    c: SnapshotCounters,
    wal_pins: Vec<(u64, u64)>,
) -> VersionEdit {
    let format = if c.extended || !wal_pins.is_empty() {
        MANIFEST_FORMAT_V2
    } else {
        MANIFEST_FORMAT
    };
    VersionEdit {
        format: Some(format.into()),
        num_levels: Some(version.num_levels() as u64),
        log_number: Some(c.log_number),
        next_file_number: Some(c.next_file_number),
        last_sequence: Some(c.last_sequence),
        style: Some(c.style),
        wal_pins,
        ..tree_snapshot(version)
    }
}

/// The tables and run cuts of `version` as one edit that adds them to an empty tree.
pub(super) fn tree_snapshot(version: &Version) -> VersionEdit {
    let mut e = VersionEdit::default();
    for (l, level) in version.levels.iter().enumerate() {
        for run in &level.runs {
            for f in &run.files {
                if run.id == 0 {
                    e.added.push((l as u32, f.meta.clone()));
                } else {
                    e.added_to_run.push((l as u32, run.id, f.meta.clone()));
                }
            }
            if let Some(c) = &run.cut {
                e.run_cuts.push((l as u32, run.id, c.clone(), run.cut_into));
            }
        }
    }
    e
}

/// Writes a manifest holding only `snapshot` as `MANIFEST-<number>` in `dir`, and `CURRENT`
/// naming it (a new database directory: a checkpoint, a restore).
pub fn write_manifest_copy(
    storage: &dyn Storage,
    dir: &Path,
    number: u64,
    snapshot: &VersionEdit,
) -> Result<()> {
    write_manifest_in(storage, dir, number, &snapshot.encode()).map(|_| ())
}

/// The durable state of the tree.
pub struct VersionSet {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    current: Arc<Version>,
    next_file_number: Arc<AtomicU64>,
    /// Last sequence number recorded in the manifest (a lower bound of the live one).
    pub last_sequence: u64,
    /// WAL files numbered below this hold nothing unflushed.
    pub log_number: u64,
    manifest: Option<LogWriter>,
    manifest_number: u64,
    max_manifest_size: u64,
    reaper: Arc<Reaper>,
    /// The compaction style recorded at creation (leveled for manifests that predate it).
    style: CompactionStyle,
    /// Where the manifest is mirrored (the log location), and the mirror's open manifest.
    mirror: Option<(Arc<dyn Storage>, PathBuf)>,
    mirror_writer: Option<LogWriter>,
    /// Whether fast-tier tables must carry WAL pins (the extended WAL); manifests are then
    /// written in format v2.
    extended: bool,
    /// Live fast-tier table → the oldest WAL file it needs (extended WAL).
    wal_pins: HashMap<u64, u64>,
    /// The column families besides the default one (whose tree is `current`).
    families: Families,
}

/// Writes manifest `number` holding `snap` and points `CURRENT` at it, in `dir`.
fn write_manifest_in(
    storage: &dyn Storage,
    dir: &Path,
    number: u64,
    snap: &[u8],
) -> Result<LogWriter> {
    let mut w = LogWriter::new(storage.create(&manifest_path(dir, number))?, number);
    w.add_record(snap)?;
    w.sync()?;
    let tmp = dir.join("CURRENT.tmp");
    let mut f = storage.create(&tmp)?;
    f.append(format!("MANIFEST-{number:06}\n").as_bytes())?;
    f.sync()?;
    drop(f);
    storage.rename(&tmp, &current_path(dir))?;
    storage.sync_dir(dir)?;
    Ok(w)
}

impl VersionSet {
    /// Creates the state of a new, empty database and writes its first manifest.
    pub fn create(
        dir: &Path,
        storage: Arc<dyn Storage>,
        num_levels: usize,
        max_manifest_size: u64,
        style: CompactionStyle,
    ) -> Result<VersionSet> {
        let mut vs = VersionSet {
            style,
            dir: dir.to_path_buf(),
            storage,
            current: Arc::new(Version::new(num_levels)),
            next_file_number: Arc::new(AtomicU64::new(1)),
            last_sequence: 0,
            log_number: 0,
            manifest: None,
            manifest_number: 0,
            max_manifest_size,
            reaper: Arc::default(),
            mirror: None,
            mirror_writer: None,
            extended: false,
            wal_pins: HashMap::new(),
            families: Families::default(),
        };
        vs.write_new_manifest()?;
        Ok(vs)
    }

    /// Mirrors the manifest to `dir` from the next manifest written on (call before the first
    /// `log_and_apply`, which starts a new manifest), and asks for WAL pins if `extended`.
    pub fn set_log_location(
        &mut self,
        mirror: Option<(Arc<dyn Storage>, PathBuf)>,
        extended: bool,
    ) -> Result<()> {
        let changed = self.mirror.as_ref().map(|m| &m.1) != mirror.as_ref().map(|m| &m.1)
            || self.extended != extended;
        self.mirror = mirror;
        self.extended = extended;
        if changed && self.manifest.is_some() {
            self.write_new_manifest()?;
        }
        Ok(())
    }

    /// Moves the database to `dir` (node-loss recovery builds a new fast directory from the
    /// mirrored manifest): the next manifest is written there.
    pub fn relocate(&mut self, dir: &Path, storage: Arc<dyn Storage>) {
        self.dir = dir.to_path_buf();
        self.storage = storage;
        self.manifest = None;
    }

    /// Replaces the metadata of tables the version already holds (same ids, levels and runs;
    /// node-loss recovery rebuilt their files, whose sizes may differ) and logs the result as a
    /// new manifest. (`log_and_apply` of a delete and re-add keeps a table's old metadata.)
    pub fn replace_tables(&mut self, new: &HashMap<u64, super::FileMeta>) -> Result<()> {
        self.current = Arc::new(self.with_tables_replaced(new)?);
        self.manifest = None;
        self.log_and_apply(VersionEdit::default()).map(|_| ())
    }

    /// The current version with the metadata of the tables in `new` replaced (same ids, levels
    /// and runs), written nowhere: a replica's view of tables it rebuilt.
    pub fn with_tables_replaced(&self, new: &HashMap<u64, super::FileMeta>) -> Result<Version> {
        let mut snap = self.snapshot_edit();
        let metas = snap
            .added
            .iter_mut()
            .map(|(_, f)| f)
            .chain(snap.added_to_run.iter_mut().map(|(_, _, f)| f));
        for f in metas {
            if let Some(n) = new.get(&f.id) {
                *f = n.clone();
            }
        }
        let (v, _) = Version::new(self.current.num_levels()).apply(&snap, &self.reaper)?;
        Ok(v)
    }

    /// WAL files numbered below this hold nothing the tree needs: every record is in a table
    /// and no fast-tier table's key list or references are in them (extended WAL). Files
    /// below it may be partly deleted (an object-store log location deletes segment by
    /// segment).
    pub fn wal_bound(&self) -> u64 {
        self.wal_pins
            .values()
            .copied()
            .fold(self.min_log_number(), u64::min)
    }

    /// The oldest log number of any family: older WALs hold no record a family's tables lack.
    pub fn min_log_number(&self) -> u64 {
        let families = self.families.min_log_number().unwrap_or(u64::MAX);
        self.log_number.min(families)
    }

    /// Live fast-tier tables' WAL pins (extended WAL).
    pub fn wal_pins(&self) -> &HashMap<u64, u64> {
        &self.wal_pins
    }

    /// Recovers from `CURRENT` and the manifest it names. Nothing is written until the first
    /// `log_and_apply`, which starts a fresh manifest.
    pub fn recover(
        dir: &Path,
        storage: Arc<dyn Storage>,
        num_levels: usize,
        max_manifest_size: u64,
    ) -> Result<VersionSet> {
        let cur = storage.read_all(&current_path(dir))?;
        let name = std::str::from_utf8(&cur)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
            .ok_or_else(|| Error::corruption("CURRENT does not name a manifest"))?;
        let mpath = dir.join(name);
        let number: u64 = name["MANIFEST-".len()..]
            .parse()
            .map_err(|_| Error::corruption("CURRENT names a malformed manifest file"))?;
        let data = storage.read_all(&mpath).map_err(|e| {
            Error::from(ErrorRepr::Corruption(format!(
                "manifest {name} named by CURRENT is unreadable: {e}"
            )))
        })?;
        let reaper: Arc<Reaper> = Arc::default();
        let mut version = Version::new(num_levels);
        let mut reader = LogReader::new(&data, name, true);
        let (mut log_number, mut next_file, mut last_seq) = (0, 1, 0);
        let mut first = true;
        let mut style = CompactionStyle::Leveled;
        let mut pins = HashMap::new();
        let mut families = Families::default();
        let mut v3 = false;
        while let Some(rec) = reader.next_record()? {
            let edit =
                VersionEdit::decode(&rec).map_err(|e| Error::corruption(format!("{name}: {e}")))?;
            if first {
                match edit.format.as_deref() {
                    Some(MANIFEST_FORMAT) | Some(MANIFEST_FORMAT_V2) => {}
                    Some(MANIFEST_FORMAT_V3) => v3 = true,
                    Some(f) => {
                        return Err(ErrorRepr::NotADatabase(format!(
                            "manifest format {f:?} is not supported by this release"
                        ))
                        .into())
                    }
                    None => {
                        return Err(Error::corruption(format!("{name}: missing format record")))
                    }
                }
                if let Some(n) = edit.num_levels {
                    if n != num_levels as u64 {
                        return Err(Error::invalid(format!(
                            "the database has {n} levels but the options ask for {num_levels}"
                        )));
                    }
                }
                style = edit.style.unwrap_or(CompactionStyle::Leveled);
                first = false;
            }
            if edit.has_family_fields() && !v3 {
                return Err(Error::corruption(format!(
                    "{name}: column-family fields in a manifest older than v3"
                )));
            }
            version = version.apply(&edit, &reaper)?.0;
            families = families.apply(&edit, &reaper)?.0;
            pins.extend(edit.wal_pins.iter().copied());
            pins.extend(
                edit.family_edits
                    .iter()
                    .flat_map(|(_, e)| e.wal_pins.iter().copied()),
            );
            log_number = edit.log_number.unwrap_or(log_number);
            next_file = edit.next_file_number.unwrap_or(next_file);
            last_seq = last_seq.max(edit.last_sequence.unwrap_or(0));
        }
        if first {
            return Err(Error::corruption(format!("{name} holds no records")));
        }
        if let ReadOutcome::TornTail { offset, dropped } = reader.outcome() {
            tracing::warn!(
                manifest = name,
                offset,
                dropped,
                "dropped torn manifest tail"
            );
        }
        check_unique_tables(&version, &families)
            .map_err(|e| Error::corruption(format!("{name}: {e}")))?;
        // Ids at the top of the number space would make the next file number wrap around to
        // numbers of live files; no real database gets there, so it is damage.
        let max_id = version
            .all_files()
            .chain(families.all_files())
            .map(|f| f.id)
            .max()
            .unwrap_or(0);
        let next = max_id
            .checked_add(1)
            .zip(number.checked_add(1))
            .map(|(a, b)| next_file.max(a).max(b))
            .ok_or_else(|| {
                Error::corruption(format!("{name}: table or manifest number out of range"))
            })?;
        let mut live = families.live_ids();
        live.extend(version.all_files().map(|f| f.id));
        pins.retain(|id, _| live.contains(id));
        let vs = VersionSet {
            mirror: None,
            mirror_writer: None,
            extended: !pins.is_empty(),
            wal_pins: pins,
            dir: dir.to_path_buf(),
            storage,
            current: Arc::new(version),
            next_file_number: Arc::new(AtomicU64::new(next)),
            last_sequence: last_seq,
            log_number,
            manifest: None,
            manifest_number: number,
            max_manifest_size,
            reaper,
            style,
            families,
        };
        // No manifest is written yet: the first `log_and_apply` starts a new one, so an open
        // that fails before then leaves every file as it was.
        Ok(vs)
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// The current version of family `id`'s tree (`None`: no such live family).
    pub fn current_of(&self, id: u32) -> Option<Arc<Version>> {
        if id == super::DEFAULT_FAMILY {
            return Some(self.current.clone());
        }
        self.families.get(id).map(|t| t.version.clone())
    }

    /// Every live table of every family.
    pub fn all_files(&self) -> impl Iterator<Item = &Arc<super::TableFile>> {
        self.current.all_files().chain(self.families.all_files())
    }

    /// The log number of family `id`: its records in older WALs are all in its tables.
    pub fn log_number_of(&self, id: u32) -> Option<u64> {
        if id == super::DEFAULT_FAMILY {
            return Some(self.log_number);
        }
        self.families.get(id).map(|t| t.log_number)
    }

    /// The compaction style the database was created with.
    pub fn style(&self) -> CompactionStyle {
        self.style
    }

    /// The column families besides the default one.
    pub fn families(&self) -> &Families {
        &self.families
    }

    /// Fails with a clear error when the database has column families besides the default
    /// one, which `what` cannot handle yet.
    pub fn refuse_families(&self, what: &str) -> Result<()> {
        if !self.families.in_use() {
            return Ok(());
        }
        let names: Vec<&str> = self.families.iter().map(|(_, t)| t.name.as_str()).collect();
        let has = if names.is_empty() {
            "its families besides the default were all dropped, but its manifest is format v3"
                .to_string()
        } else {
            format!("it has {} besides the default: {names:?}", names.len())
        };
        Err(Error::invalid(format!(
            "{what} does not support databases with column families yet ({has})"
        )))
    }

    /// Creates a column family named `name` with a tree of `num_levels` levels, whose
    /// writes start in WAL `log_number`, and logs it; returns its id.
    pub fn create_family(
        &mut self,
        name: &str,
        options: Vec<u8>,
        num_levels: usize,
        style: CompactionStyle,
        log_number: u64,
    ) -> Result<u32> {
        let (id, edit) = self
            .families
            .create_edit(name, options, num_levels, style, log_number)?;
        self.log_and_apply(edit)?;
        Ok(id)
    }

    /// Drops the column family named `name` and logs it: its tables become obsolete.
    pub fn drop_family(&mut self, name: &str) -> Result<()> {
        let edit = self.families.drop_edit(name)?;
        self.log_and_apply(edit).map(|_| ())
    }

    /// The queue of obsolete tables whose files may be deleted.
    pub fn reaper(&self) -> &Arc<Reaper> {
        &self.reaper
    }

    /// Allocates a file number (tables, WALs, manifests share one space).
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// Ensures future file numbers are above `n` (a file found on disk).
    pub fn mark_file_number_used(&self, n: u64) {
        self.next_file_number
            .fetch_max(n.saturating_add(1), Ordering::SeqCst);
    }

    /// A handle to the file-number counter for background jobs.
    pub fn file_numbers(&self) -> Arc<AtomicU64> {
        self.next_file_number.clone()
    }

    /// The number of the manifest edits are appended to (0 before a new database's first edit).
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    fn snapshot_edit(&self) -> VersionEdit {
        let mut pins: Vec<(u64, u64)> = self.wal_pins.iter().map(|(a, b)| (*a, *b)).collect();
        pins.sort_unstable();
        let mut e = snapshot_of(
            &self.current,
            SnapshotCounters {
                log_number: self.log_number,
                next_file_number: self.next_file_number.load(Ordering::SeqCst),
                last_sequence: self.last_sequence,
                style: self.style,
                extended: self.extended,
            },
            pins,
        );
        if self.families.in_use() {
            e.format = Some(MANIFEST_FORMAT_V3.into());
            self.families.snapshot_into(&mut e);
        }
        e
    }

    /// The snapshot record a copy of this database's manifest starts with (a checkpoint),
    /// its last sequence number raised to `last_sequence`.
    pub fn copy_edit(&self, last_sequence: u64) -> VersionEdit {
        let mut e = self.snapshot_edit();
        e.last_sequence = Some(last_sequence.max(self.last_sequence));
        e
    }

    /// Writes a new manifest holding a snapshot of the current state and points CURRENT at it
    /// (in the log location first, when mirrored: a mirror never names less than the fast
    /// directory's manifest does).
    fn write_new_manifest(&mut self) -> Result<()> {
        let old = self.manifest_number;
        let number = self.new_file_number();
        let snap = self.snapshot_edit().encode();
        self.mirror_writer = None;
        if let Some((storage, dir)) = &self.mirror {
            self.mirror_writer = Some(write_manifest_in(storage.as_ref(), dir, number, &snap)?);
        }
        let w = write_manifest_in(self.storage.as_ref(), &self.dir, number, &snap)?;
        self.manifest = Some(w);
        self.manifest_number = number;
        if old != 0 && old != number {
            // The old manifest may be absent (a relocated or newly mirrored database).
            for (storage, dir) in std::iter::once((&self.storage, &self.dir))
                .chain(self.mirror.iter().map(|m| (&m.0, &m.1)))
            {
                let p = manifest_path(dir, old);
                if storage.exists(&p)? {
                    storage.remove(&p)?;
                }
            }
        }
        Ok(())
    }

    /// Logs `edit` durably, then makes the resulting version current.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        if let Some((id, _)) = edit
            .family_edits
            .iter()
            .find(|(id, e)| *id == 0 || !e.is_tree_only())
        {
            return Err(Error::invalid(format!(
                "the section of family {id} holds more than tree fields, or names family 0"
            )));
        }
        let (next, mut removed) = self.current.apply(&edit, &self.reaper)?;
        let (next_families, gone) = self.families.apply(&edit, &self.reaper)?;
        removed.extend(gone);
        if next_families.in_use() {
            let live = check_unique_tables(&next, &next_families)?;
            // A table one tree released and another took in the same edit stays live: its old
            // handle must not delete the file.
            removed.retain(|f| !live.contains(&f.id));
        }
        // Only databases with pins pay for keeping the previous ones (restored on failure).
        let prev_pins = (self.extended || !self.wal_pins.is_empty()).then(|| self.wal_pins.clone());
        if let Err(e) = self.update_pins(&edit, &next, &next_families) {
            self.wal_pins = prev_pins.unwrap_or_default();
            return Err(e);
        }
        if let Some(l) = edit.log_number {
            debug_assert!(l >= self.log_number);
        }
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        // The first family fields go into a new manifest, whose snapshot is format v3.
        let needs_rewrite = match &self.manifest {
            None => true,
            Some(_) if edit.has_family_fields() && !self.families.in_use() => true,
            Some(m) => m.len() > self.max_manifest_size,
        };
        let prev_version = std::mem::replace(&mut self.current, Arc::new(next));
        let prev_families = std::mem::replace(&mut self.families, next_families);
        let prev_log = self.log_number;
        let prev_seq = self.last_sequence;
        if let Some(l) = edit.log_number {
            self.log_number = l;
        }
        if let Some(s) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(s);
        }
        let res = if needs_rewrite {
            self.write_new_manifest()
        } else {
            let rec = edit.encode();
            let mirrored = match self.mirror_writer.as_mut() {
                Some(w) => w.add_record(&rec).and_then(|_| w.sync()),
                None if self.mirror.is_some() => Err(Error::invalid("manifest mirror not open")),
                None => Ok(()),
            };
            let m = self.manifest.as_mut().expect("manifest present");
            mirrored
                .and_then(|_| m.add_record(&rec))
                .and_then(|_| m.sync())
        };
        if let Err(e) = res {
            // The edit may or may not be on disk; start a fresh manifest next time, and keep
            // serving the previous version (its files are all still present).
            self.manifest = None;
            if let Some(p) = prev_pins {
                self.wal_pins = p;
            }
            self.current = prev_version;
            self.families = prev_families;
            self.log_number = prev_log;
            self.last_sequence = prev_seq;
            return Err(e);
        }
        for f in removed {
            f.mark_obsolete();
        }
        Ok(self.current.clone())
    }

    /// Applies `edit`'s pins and drops those of tables `next` no longer holds. With the
    /// extended WAL, a fast-tier table new to the tree without a pin is refused: it would be
    /// lost with the fast tier.
    fn update_pins(
        &mut self,
        edit: &VersionEdit,
        next: &Version,
        families: &Families,
    ) -> Result<()> {
        let trees = || std::iter::once(edit).chain(edit.family_edits.iter().map(|(_, e)| e));
        self.wal_pins
            .extend(trees().flat_map(|e| e.wal_pins.iter().copied()));
        if !self.extended && self.wal_pins.is_empty() {
            return Ok(());
        }
        let added = trees().flat_map(|e| {
            e.added
                .iter()
                .map(|(_, f)| f)
                .chain(e.added_to_run.iter().map(|(_, _, f)| f))
        });
        for f in added {
            if self.extended
                && f.tier == crate::tier::Tier::Fast
                && !self.wal_pins.contains_key(&f.id)
            {
                return Err(Error::invalid(format!(
                    "fast-tier table {} installed without an extended-WAL key list",
                    f.id
                )));
            }
        }
        if trees().any(|e| !e.deleted.is_empty()) || !edit.families_dropped.is_empty() {
            let mut live = families.live_ids();
            live.extend(next.all_files().map(|f| f.id));
            self.wal_pins.retain(|id, _| live.contains(id));
        }
        Ok(())
    }
}

/// Fails when two trees (the default family's and the others') hold a table of the same id:
/// every tree shares one file-number space.
/// Returns the ids of every live table (empty without families).
fn check_unique_tables(
    default: &Version,
    families: &Families,
) -> Result<std::collections::HashSet<u64>> {
    let mut seen = std::collections::HashSet::new();
    if !families.in_use() {
        return Ok(seen);
    }
    seen.extend(default.all_files().map(|f| f.id));
    for f in families.all_files() {
        if !seen.insert(f.id) {
            return Err(Error::corruption(format!(
                "table {} is in two column families",
                f.id
            )));
        }
    }
    Ok(seen)
}

#[cfg(test)]
#[path = "set_family_tests.rs"]
mod family_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;
    use crate::tier::Tier;
    use crate::version::FileMeta;
    use crate::wal::LogWriter;

    fn meta(id: u64, size: u64, key: &[u8]) -> FileMeta {
        FileMeta::for_test(id, size, key, Tier::Fast)
    }

    /// Writes `CURRENT` naming manifest `number` holding one snapshot edit adding `files` to L1.
    fn recover_with(number: u64, files: Vec<FileMeta>) -> Result<VersionSet> {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("MANIFEST-{number:06}");
        let mut w = LogWriter::new(LocalFs.create(&dir.path().join(&name)).unwrap(), number);
        let e = VersionEdit {
            format: Some(MANIFEST_FORMAT.into()),
            num_levels: Some(7),
            next_file_number: Some(2),
            added: files.into_iter().map(|f| (1, f)).collect(),
            ..Default::default()
        };
        w.add_record(&e.encode()).unwrap();
        w.sync().unwrap();
        std::fs::write(current_path(dir.path()), format!("{name}\n")).unwrap();
        VersionSet::recover(dir.path(), Arc::new(LocalFs), 7, 64 << 20)
    }

    /// Found while writing the `manifest` fuzz target (which now reaches recovery): a table id
    /// of u64::MAX overflowed `max_id + 1`
    /// (a panic with overflow checks; in release the next file number wrapped below live ids).
    #[test]
    fn fuzz_manifest_table_id_at_u64_max() {
        let vs = recover_with(1, vec![meta(7, 10, b"a")]).unwrap();
        assert_eq!(vs.new_file_number(), 8);
        let e = recover_with(1, vec![meta(u64::MAX, 10, b"a")])
            .err()
            .unwrap();
        assert!(e.is_corruption(), "{e}");
        let e = recover_with(u64::MAX, vec![meta(7, 10, b"a")])
            .err()
            .unwrap();
        assert!(e.is_corruption(), "{e}");
    }

    /// Found while writing the `manifest` fuzz target: table sizes summing past u64::MAX overflowed the
    /// fast-tier byte count (a panic with overflow checks).
    #[test]
    fn fuzz_manifest_sizes_overflow() {
        let files = vec![
            meta(3, u64::MAX / 2 + 1, b"a"),
            meta(4, u64::MAX / 2 + 1, b"b"),
        ];
        let vs = recover_with(1, files).unwrap();
        assert_eq!(vs.current().all_files().count(), 2);
    }
}
