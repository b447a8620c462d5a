//! The public face of column families: [`ColumnFamily`], the handle reads and writes name a
//! family by, and [`CfOptions`], a family's own options, which the manifest stores with it
//! (JSON in its creation record, `docs/format.md` 5.5) so that a reopen finds them.
//!
//! A family is a key space of its own with its own memtables, levels and compaction, sharing
//! the database's WAL (a batch across families commits atomically), sequence numbers,
//! snapshots, caches and capacity tier. Invariant: a handle names one family for ever — ids
//! are never reused, so a handle of a dropped family can never reach a later family of the
//! same name. Depends on `db::family` and `options`; the engine's mechanisms never depend on
//! this file.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::family::{Family, FamilyState};
use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::version::CompactionStyle;
use crate::Options;

/// A handle to a column family ([`crate::Db::create_cf`], [`crate::Db::cf`]). Cheap to clone.
/// Using it after its family is dropped fails with `ErrorKind::InvalidArgument`.
#[derive(Clone)]
pub struct ColumnFamily {
    pub(crate) family: Arc<Family>,
}

impl ColumnFamily {
    /// The family's name.
    pub fn name(&self) -> &str {
        &self.family.name
    }

    /// The family's id in the manifest and the WAL (0: the default family).
    pub fn id(&self) -> u32 {
        self.family.id
    }

    /// The options the family runs with.
    pub fn options(&self) -> CfOptions {
        CfOptions::from_options(&self.family.opts)
    }

    /// The family, unless it was dropped or belongs to another database than `inner`.
    pub(crate) fn live(&self, inner: &DbInner) -> Result<&Arc<Family>> {
        if self.family.owner != inner.token {
            return Err(Error::invalid(format!(
                "column family {:?}: the handle is of another database",
                self.family.name
            )));
        }
        if self.family.dropped.load(Ordering::Acquire) {
            return Err(Error::invalid(format!(
                "column family {:?} was dropped",
                self.family.name
            )));
        }
        Ok(&self.family)
    }
}

impl std::fmt::Debug for ColumnFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamily")
            .field("name", &self.family.name)
            .field("id", &self.family.id)
            .finish()
    }
}

/// A column family's own options: its shape (levels, compaction style, set at creation), its
/// memtable, level-size, table and filter settings, and its tier policy — which levels live on
/// the capacity tier and whether HotRAP promotes and retains its hot records. Everything else —
/// the WAL, caches, the capacity tier itself, the fast-tier budget, background threads, the
/// merge operator and compaction filter — is the database's (`Options`).
/// `CfOptions::default()` takes `Options::default()`'s values; [`CfOptions::from_options`]
/// takes a database's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CfOptions {
    /// Levels of the family's tree (fixed at creation).
    pub num_levels: usize,
    /// Leveled or split forest (fixed at creation).
    pub compaction_style: CompactionStyle,
    /// Memtable size before it is sealed and flushed.
    pub write_buffer_size: usize,
    /// Memtables (active and sealed) before writes to the family stop.
    pub max_write_buffer_number: usize,
    /// L0 tables that trigger a compaction.
    pub level0_file_num_compaction_trigger: usize,
    /// L0 tables that slow writes down.
    pub level0_slowdown_writes_trigger: usize,
    /// L0 tables that stop writes.
    pub level0_stop_writes_trigger: usize,
    /// Target size of the base level.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels.
    pub max_bytes_for_level_multiplier: f64,
    /// Target size of compaction outputs.
    pub target_file_size_base: u64,
    /// Uncompressed data block size of the family's tables.
    pub block_size: usize,
    /// Bloom filter bits per key (0: no filters).
    pub bloom_bits_per_key: f64,
    /// Levels, counted from the bottom, on the capacity tier (`Options::capacity_levels`, at
    /// least 1). Acts only on a database with a capacity tier.
    pub capacity_levels: usize,
    /// Absolute placement instead: levels `0..=k` on the fast tier (`Options::fast_levels`;
    /// `num_levels - 1`: the whole family on the fast tier).
    pub fast_levels: Option<usize>,
    /// HotRAP for this family (`Options::hotrap`'s other settings apply; each family has
    /// its own promotion cache and RALT, under `ralt-<id>/`).
    pub hotrap: bool,
    /// LogStore placement for this family (`Options::placement_policy = LogStore`: tables
    /// placed by temperature, compaction deferred through write bursts; leveled only), with
    /// the database's `Options::logstore` settings. Off: placed by level.
    pub logstore: bool,
}

impl Default for CfOptions {
    fn default() -> Self {
        CfOptions::from_options(&Options::default())
    }
}

impl CfOptions {
    /// The family options `o` holds (a database's own, the default family's).
    pub fn from_options(o: &Options) -> CfOptions {
        CfOptions {
            num_levels: o.num_levels,
            compaction_style: o.compaction_style,
            write_buffer_size: o.write_buffer_size,
            max_write_buffer_number: o.max_write_buffer_number,
            level0_file_num_compaction_trigger: o.level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger: o.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: o.level0_stop_writes_trigger,
            max_bytes_for_level_base: o.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: o.max_bytes_for_level_multiplier,
            target_file_size_base: o.target_file_size_base,
            block_size: o.block_size,
            bloom_bits_per_key: o.bloom_bits_per_key,
            capacity_levels: o.capacity_levels,
            fast_levels: o.fast_levels,
            hotrap: o.hotrap.enabled,
            logstore: o.placement_policy == crate::tier::PlacementPolicy::LogStore,
        }
    }

    /// The options a family of these options runs with in a database opened with `db`.
    pub(crate) fn apply(&self, db: &Options) -> Options {
        let mut o = db.clone();
        o.num_levels = self.num_levels;
        o.compaction_style = self.compaction_style;
        o.write_buffer_size = self.write_buffer_size;
        o.max_write_buffer_number = self.max_write_buffer_number;
        o.level0_file_num_compaction_trigger = self.level0_file_num_compaction_trigger;
        o.level0_slowdown_writes_trigger = self.level0_slowdown_writes_trigger;
        o.level0_stop_writes_trigger = self.level0_stop_writes_trigger;
        o.max_bytes_for_level_base = self.max_bytes_for_level_base;
        o.max_bytes_for_level_multiplier = self.max_bytes_for_level_multiplier;
        o.target_file_size_base = self.target_file_size_base;
        o.block_size = self.block_size;
        o.bloom_bits_per_key = self.bloom_bits_per_key;
        o.capacity_levels = self.capacity_levels;
        o.fast_levels = self.fast_levels;
        o.hotrap.enabled = self.hotrap;
        o.placement_policy = if self.logstore {
            crate::tier::PlacementPolicy::LogStore
        } else {
            crate::tier::PlacementPolicy::Static
        };
        o
    }

    /// Checks the values a family cannot run with.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::invalid(format!("CfOptions: {what}")));
        if !(1..=crate::stats::MAX_LEVELS).contains(&self.num_levels) {
            return bad(&format!(
                "num_levels must be 1 to {}",
                crate::stats::MAX_LEVELS
            ));
        }
        if self.write_buffer_size == 0 || self.max_write_buffer_number < 2 {
            return bad("write_buffer_size must be > 0 and max_write_buffer_number ≥ 2");
        }
        if self.level0_file_num_compaction_trigger == 0
            || self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger
            || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger
        {
            return bad("L0 triggers must be > 0 and compaction ≤ slowdown ≤ stop");
        }
        if self.capacity_levels == 0
            || self.capacity_levels >= self.num_levels
            || self.fast_levels.is_some_and(|k| k >= self.num_levels)
        {
            return bad(
                "capacity_levels must be at least 1 and below num_levels, fast_levels below \
                 num_levels (every level fast: fast_levels = num_levels - 1)",
            );
        }
        if self.max_bytes_for_level_base == 0
            || self.max_bytes_for_level_multiplier <= 1.0
            || self.target_file_size_base == 0
            || self.block_size == 0
            || !(0.0..=64.0).contains(&self.bloom_bits_per_key)
        {
            return bad("level sizes, file size and block size must be positive, the multiplier above 1, bloom bits 0 to 64");
        }
        if self.logstore && self.compaction_style == crate::version::CompactionStyle::SplitForest {
            return bad(
                "logstore needs leveled compaction (the split forest's merges move whole trees)",
            );
        }
        Ok(())
    }

    /// The bytes the manifest stores (JSON).
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("CfOptions serialize")
    }

    /// Decodes what [`CfOptions::encode`] stored, for a family whose tree the manifest gives
    /// `num_levels` levels and compaction `style` (those win over the bytes). No bytes: every
    /// other option at its default. Untrusted: a bad value is `Corruption`.
    pub(crate) fn decode(
        family: &str,
        bytes: &[u8],
        num_levels: usize,
        style: CompactionStyle,
    ) -> Result<CfOptions> {
        let bytes = if bytes.is_empty() { &b"{}"[..] } else { bytes };
        let mut o: CfOptions = serde_json::from_slice(bytes).map_err(|e| {
            Error::corruption(format!(
                "column family {family:?}: unreadable options in the manifest: {e}"
            ))
        })?;
        o.num_levels = num_levels;
        o.compaction_style = style;
        o.validate().map_err(|e| {
            Error::corruption(format!(
                "column family {family:?}: invalid options in the manifest: {e}"
            ))
        })?;
        Ok(o)
    }
}

/// Creates the family `name` (`Db::create_cf`): logged in the manifest (the first family
/// turns it into format v3), then live for reads and writes. Its first writes go to the
/// current WAL, which becomes its log number.
pub(crate) fn create(inner: &Arc<DbInner>, name: &str, o: CfOptions) -> Result<ColumnFamily> {
    o.validate()?;
    if inner.extended.is_some() {
        return Err(Error::invalid(
            "column families with the extended WAL (Options::extended_wal) are not supported yet",
        ));
    }
    super::write::exclusive(inner, || {
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        let log = inner.wal.lock().current().number();
        let id =
            st.versions
                .create_family(name, o.encode(), o.num_levels, o.compaction_style, log)?;
        let fam = new_family(inner, &mut st, id, name, &o, log)?;
        drop(st);
        super::promote::start_hot_thread(inner, &fam);
        super::temperature::start(inner);
        Ok(ColumnFamily { family: fam })
    })
}

/// Sets up, at open, the families besides the default one (`(id, name, options)`), each with
/// an empty memtable on the new log `wal_number`, and removes the RALT directories of families
/// that are gone (a crash after a drop).
pub(crate) fn open_families(
    inner: &DbInner,
    families: Vec<(u32, String, CfOptions)>,
    wal_number: u64,
) -> Result<()> {
    let mut st = inner.state.lock();
    for name in inner.storage.list(&inner.dir)? {
        let dropped = name
            .strip_prefix("ralt-")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|id| !families.iter().any(|(live, _, _)| *live == id));
        if dropped {
            let _ = inner.storage.remove_dir_all(&inner.dir.join(&name));
        }
    }
    for (id, name, o) in families {
        new_family(inner, &mut st, id, &name, &o, wal_number)?;
    }
    inner.publish_handles(&st);
    Ok(())
}

/// Where family `id`'s RALT lives (HotRAP's access statistics).
pub(crate) fn ralt_dir(dir: &std::path::Path, id: u32) -> std::path::PathBuf {
    dir.join(format!("ralt-{id}"))
}

/// Sets up the run-time state of family `id` (created, or found in the manifest at open)
/// with an empty memtable whose writes start in WAL `log`.
pub(crate) fn new_family(
    inner: &DbInner,
    st: &mut DbState,
    id: u32,
    name: &str,
    o: &CfOptions,
    log: u64,
) -> Result<Arc<Family>> {
    let fopts = o.apply(&inner.opts);
    let mem = Arc::new(MemTable::for_options(log, &fopts, None));
    // No group is in flight (the caller is the front of the writer queue, or the open).
    mem.set_base_seq(inner.last_seq.load(Ordering::Acquire));
    let version = st
        .versions
        .current_of(id)
        .ok_or_else(|| Error::invalid(format!("no column family {id}")))?;
    let hot =
        super::promote::open_hotrap(&ralt_dir(&inner.dir, id), &inner.storage, &fopts, &version)?;
    let logstore = o
        .logstore
        .then(|| Arc::new(super::temperature::LogStore::new(fopts.logstore.clone())));
    let fam = Arc::new(Family::new(
        inner.token,
        id,
        name.to_string(),
        fopts,
        &mem,
        &[],
        version,
        hot,
        logstore,
    ));
    st.families.insert(
        id,
        FamilyState {
            handle: fam.clone(),
            mem,
            imms: Vec::new(),
            jobs: 0,
        },
    );
    inner.publish_handles(st);
    Ok(fam)
}

/// Drops the family `name` (`Db::drop_cf`): no new flush or compaction starts in it, the
/// running ones finish, then the drop is logged and its tables (on both tiers) become
/// obsolete; its unflushed writes are gone. Handles to it fail from then on. A drop that fails
/// leaves the family as it was.
pub(crate) fn drop_family(inner: &Arc<DbInner>, name: &str) -> Result<()> {
    let fam = {
        let mut st = inner.state.lock();
        let id = st
            .versions
            .families()
            .id_of(name)
            .ok_or_else(|| Error::invalid(format!("no column family named {name:?}")))?;
        if id == crate::version::DEFAULT_FAMILY {
            return Err(Error::invalid(
                "the default column family cannot be dropped",
            ));
        }
        let fam = st.fam(id).handle.clone();
        if fam.dropped.swap(true, Ordering::AcqRel) {
            return Err(Error::invalid(format!(
                "column family {name:?} is being dropped"
            )));
        }
        // Running jobs of the family install into its tree: wait for them. No new one starts
        // (`DbState::check_live`, and the background threads skip a dropped family).
        while st.families.get(&id).is_some_and(|fs| fs.jobs > 0) {
            inner
                .bg_cv
                .wait_for(&mut st, std::time::Duration::from_millis(10));
        }
        fam
    };
    let dropped = super::write::exclusive(inner, || {
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        let edit = st.versions.families().drop_edit(name)?;
        if let Err(e) = st.versions.log_and_apply(edit) {
            // The record may have reached the disk (a reopen would find the family dropped):
            // as after a failed flush, writes stop.
            super::write::set_bg_error_locked(inner, &mut st, e.clone());
            return Err(e);
        }
        st.families.remove(&fam.id);
        inner.publish_handles(&st);
        // Families left with nothing unflushed owe nothing to older logs: recorded, so the
        // logs the dropped family held can go.
        let current = inner.wal.lock().current().number();
        let bumps = st.empty_family_log_numbers(current, None);
        if bumps.log_number.is_some() || !bumps.family_edits.is_empty() {
            if let Err(e) = st.versions.log_and_apply(bumps) {
                // As after a failed flush: the record may have reached the disk.
                super::write::set_bg_error_locked(inner, &mut st, e);
            }
        }
        // Reads through old handles fail; the tables go once no iterator pins them.
        let empty = FamilyState {
            handle: fam.clone(),
            mem: Arc::new(MemTable::for_options(0, &fam.opts, None)),
            imms: Vec::new(),
            jobs: 0,
        };
        let v = Arc::new(crate::version::Version::new(fam.opts.num_levels));
        fam.install(&empty, v, &|_| false);
        super::background::purge_logs(inner, st);
        Ok(())
    });
    if let Err(e) = dropped {
        // Not dropped (the record did not reach the manifest, or writes had stopped): the
        // family goes on as it was.
        fam.dropped.store(false, Ordering::Release);
        inner.bg_cv.notify_all();
        return Err(e);
    }
    inner.bg_cv.notify_all();
    // Its HotRAP thread ends on its own (the family is dropped); RALT's files go now.
    if fam.hot.is_some() {
        let dir = ralt_dir(&inner.dir, fam.id);
        if let Err(e) = inner.storage.remove_dir_all(&dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove a dropped family's RALT");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_and_bad_bytes_are_corruption() {
        let o = CfOptions {
            write_buffer_size: 1 << 20,
            bloom_bits_per_key: 0.0,
            compaction_style: CompactionStyle::SplitForest,
            ..Default::default()
        };
        let (n, style) = (o.num_levels, o.compaction_style);
        assert_eq!(CfOptions::decode("a", &o.encode(), n, style).unwrap(), o);
        // Fields a later release adds are absent from older bytes: their defaults apply. The
        // manifest's shape wins over the bytes'.
        let partial = br#"{"num_levels": 4, "block_size": 1024}"#;
        let p = CfOptions::decode("a", partial, 5, CompactionStyle::Leveled).unwrap();
        assert_eq!((p.num_levels, p.block_size), (5, 1024));
        assert_eq!(p.write_buffer_size, CfOptions::default().write_buffer_size);
        let empty = CfOptions::decode("a", b"", 3, style).unwrap();
        assert_eq!(
            empty.write_buffer_size,
            CfOptions::default().write_buffer_size
        );
        for bad in [
            &b"not json"[..],
            br#"{"block_size": 0}"#,
            br#"{"num_levels": "x"}"#,
        ] {
            let e = CfOptions::decode("a", bad, 3, style).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{bad:?}");
        }
    }

    #[test]
    fn a_family_applies_its_options_over_the_databases() {
        let db = Options {
            block_cache_capacity: 12345,
            write_buffer_size: 1 << 26,
            ..Default::default()
        };
        let cf = CfOptions {
            write_buffer_size: 1 << 20,
            num_levels: 3,
            ..CfOptions::from_options(&db)
        };
        let o = cf.apply(&db);
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.num_levels, 3);
        assert_eq!(o.block_cache_capacity, 12345);
        assert_eq!(CfOptions::from_options(&o), cf);
    }
}
