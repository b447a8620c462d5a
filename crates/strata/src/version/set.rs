//! [`VersionSet`]: the current version, the counters that must survive restarts, and the
//! manifest they are logged to.
//!
//! Files: `MANIFEST-<n>` (a log of encoded [`VersionEdit`]s whose first record is a full
//! snapshot) and `CURRENT` (the name of the live manifest, replaced atomically by writing
//! `CURRENT.tmp`, syncing it, renaming it over `CURRENT` and syncing the directory).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::edit::{CompactionStyle, VersionEdit, MANIFEST_FORMAT};
use super::file_meta::Reaper;
use super::version::Version;
use crate::error::{Error, ErrorRepr, Result};
use crate::storage::Storage;
use crate::wal::{LogReader, LogWriter, ReadOutcome};

pub fn manifest_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{n:06}"))
}

pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
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
        };
        vs.write_new_manifest()?;
        Ok(vs)
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
        while let Some(rec) = reader.next_record()? {
            let edit =
                VersionEdit::decode(&rec).map_err(|e| Error::corruption(format!("{name}: {e}")))?;
            if first {
                match edit.format.as_deref() {
                    Some(MANIFEST_FORMAT) => {}
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
            version = version.apply(&edit, &reaper)?.0;
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
        // Ids at the top of the number space would make the next file number wrap around to
        // numbers of live files; no real database gets there, so it is damage.
        let max_id = version.all_files().map(|f| f.id).max().unwrap_or(0);
        let next = max_id
            .checked_add(1)
            .zip(number.checked_add(1))
            .map(|(a, b)| next_file.max(a).max(b))
            .ok_or_else(|| {
                Error::corruption(format!("{name}: table or manifest number out of range"))
            })?;
        let vs = VersionSet {
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
        };
        // No manifest is written yet: the first `log_and_apply` starts a new one, so an open
        // that fails before then leaves every file as it was.
        Ok(vs)
    }

    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// The compaction style the database was created with.
    pub fn style(&self) -> CompactionStyle {
        self.style
    }

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

    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    fn snapshot_edit(&self) -> VersionEdit {
        let mut e = VersionEdit {
            format: Some(MANIFEST_FORMAT.into()),
            num_levels: Some(self.current.num_levels() as u64),
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number.load(Ordering::SeqCst)),
            last_sequence: Some(self.last_sequence),
            style: Some(self.style),
            ..Default::default()
        };
        for (l, level) in self.current.levels.iter().enumerate() {
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

    /// Writes a new manifest holding a snapshot of the current state and points CURRENT at it.
    fn write_new_manifest(&mut self) -> Result<()> {
        let old = self.manifest_number;
        let number = self.new_file_number();
        let path = manifest_path(&self.dir, number);
        let mut w = LogWriter::new(self.storage.create(&path)?, number);
        let snap = self.snapshot_edit();
        w.add_record(&snap.encode())?;
        w.sync()?;
        let tmp = self.dir.join("CURRENT.tmp");
        let mut f = self.storage.create(&tmp)?;
        f.append(format!("MANIFEST-{number:06}\n").as_bytes())?;
        f.sync()?;
        drop(f);
        self.storage.rename(&tmp, &current_path(&self.dir))?;
        self.storage.sync_dir(&self.dir)?;
        self.manifest = Some(w);
        self.manifest_number = number;
        if old != 0 && old != number {
            self.storage.remove(&manifest_path(&self.dir, old))?;
        }
        Ok(())
    }

    /// Logs `edit` durably, then makes the resulting version current.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let (next, removed) = self.current.apply(&edit, &self.reaper)?;
        if let Some(l) = edit.log_number {
            debug_assert!(l >= self.log_number);
        }
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        let needs_rewrite = match &self.manifest {
            None => true,
            Some(m) => m.len() > self.max_manifest_size,
        };
        let prev_version = std::mem::replace(&mut self.current, Arc::new(next));
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
            let m = self.manifest.as_mut().expect("manifest present");
            m.add_record(&edit.encode()).and_then(|_| m.sync())
        };
        if let Err(e) = res {
            // The edit may or may not be on disk; start a fresh manifest next time, and keep
            // serving the previous version (its files are all still present).
            self.manifest = None;
            self.current = prev_version;
            self.log_number = prev_log;
            self.last_sequence = prev_seq;
            return Err(e);
        }
        for f in removed {
            f.mark_obsolete();
        }
        Ok(self.current.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;
    use crate::tier::Tier;
    use crate::version::FileMeta;
    use crate::wal::LogWriter;

    fn meta(id: u64, size: u64, key: &[u8]) -> FileMeta {
        FileMeta {
            id,
            size,
            smallest: key.to_vec(),
            largest: key.to_vec(),
            largest_exclusive: false,
            smallest_seq: 1,
            largest_seq: 1,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            tier: Tier::Fast,
        }
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
