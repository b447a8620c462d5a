//! Opens tables on either tier for inspection and walks their index and entries.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::format::BlockHandle;
use crate::sst::Table;
use crate::stats::{EngineStats, TierStats};
use crate::storage::object::{CapacityOptions, CapacityTier};
use crate::storage::{LocalFs, RandomAccessFile, Storage};
use crate::tier::{local_path, object_name, Tier};
use crate::types::{parse_internal_key, SeqNo, ValueKind};

/// Opens table files of one database: fast-tier tables from its directory, capacity-tier
/// tables from the object store at the URL given (if any).
pub struct TableOpener {
    dir: PathBuf,
    capacity: Option<Arc<CapacityTier>>,
}

/// One point entry of a table.
pub struct TableEntry {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The entry's sequence number.
    pub seq: SeqNo,
    /// What the entry is (`Put`, `Delete`, ...).
    pub kind: ValueKind,
    /// The entry's value (empty for a deletion).
    pub value: Vec<u8>,
}

/// What walking every entry of a table found.
#[derive(Debug, Default, Clone, Copy)]
pub struct TableDump {
    /// Point entries walked (fewer than the table holds if the walk was stopped or started late).
    pub entries: u64,
    /// Data blocks of the table, by its index.
    pub data_blocks: u64,
}

impl TableOpener {
    /// `capacity_url`: the capacity tier (`file://`, `s3://`, `memory://`), if the database has
    /// one. Without it capacity-tier tables cannot be opened.
    pub fn new(dir: &Path, capacity_url: Option<&str>) -> Result<Self> {
        // Opening a `file://` store creates its directory; a tool that only reads must not.
        if let Some(path) = capacity_url.and_then(|u| u.strip_prefix("file://")) {
            if !Path::new(path).is_dir() {
                return Err(Error::invalid(format!(
                    "capacity tier {path}: no such directory"
                )));
            }
        }
        let capacity = capacity_url
            .map(|url| {
                CapacityTier::open(
                    &CapacityOptions::new(url),
                    None,
                    Arc::new(TierStats::default()),
                )
            })
            .transpose()?;
        Ok(TableOpener {
            dir: dir.to_path_buf(),
            capacity,
        })
    }

    /// Whether a capacity tier was given, so capacity-tier tables can be opened.
    pub fn has_capacity(&self) -> bool {
        self.capacity.is_some()
    }

    /// Where table `id` lives on `tier`, for messages: a local path or an object name.
    pub fn location(&self, id: u64, tier: Tier) -> String {
        match tier {
            Tier::Fast => local_path(&self.dir, id).display().to_string(),
            Tier::Capacity => format!("capacity:{}", object_name(id)),
        }
    }

    /// Opens the raw file of table `id` on `tier`. The size is the file's own (for a capacity
    /// table, from a listing when `size` is not known).
    pub fn open_file(
        &self,
        id: u64,
        tier: Tier,
        size: Option<u64>,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        match tier {
            Tier::Fast => LocalFs.open(&local_path(&self.dir, id)),
            Tier::Capacity => {
                let cap = self.capacity.as_ref().ok_or_else(|| {
                    Error::invalid(format!(
                        "table {id:06} is on the capacity tier: pass its URL (--capacity)"
                    ))
                })?;
                let name = object_name(id);
                let size = match size {
                    Some(s) => s,
                    None => cap
                        .list("tables")?
                        .into_iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, s)| s)
                        .ok_or_else(|| {
                            Error::corruption(format!("capacity:{name}: object not found"))
                        })?,
                };
                Ok(Arc::new(cap.reader(&name, size)))
            }
        }
    }

    /// Opens table `id` (footer, index, filter, range tombstones and properties are read and
    /// checksummed now; data blocks when iterated).
    pub fn open(&self, id: u64, tier: Tier, size: Option<u64>) -> Result<Arc<Table>> {
        let file = self.open_file(id, tier, size)?;
        Ok(Arc::new(Table::open(
            id,
            file,
            None,
            Arc::new(EngineStats::default()),
        )?))
    }

    /// Opens a table file by path (any name).
    pub fn open_path(path: &Path) -> Result<Arc<Table>> {
        let id = path
            .file_name()
            .and_then(|n| super::parse_numbered(&n.to_string_lossy(), ".sst"))
            .unwrap_or(0);
        let file = LocalFs.open(path)?;
        Ok(Arc::new(Table::open(
            id,
            file,
            None,
            Arc::new(EngineStats::default()),
        )?))
    }

    /// Ids and sizes of the table objects on the capacity tier (empty without one).
    pub fn capacity_tables(&self) -> Result<Vec<(u64, u64)>> {
        let Some(cap) = &self.capacity else {
            return Ok(Vec::new());
        };
        let mut out: Vec<(u64, u64)> = cap
            .list("tables")?
            .into_iter()
            .filter_map(|(n, size)| {
                let base = n.strip_prefix("tables/")?;
                Some((super::parse_numbered(base, ".sst")?, size))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Ids of the `<n>.sst` files in the database directory.
    pub fn local_tables(&self) -> Result<Vec<u64>> {
        let mut out: Vec<u64> = LocalFs
            .list(&self.dir)?
            .into_iter()
            .filter_map(|n| super::parse_numbered(&n, ".sst"))
            .collect();
        out.sort();
        Ok(out)
    }
}

/// Calls `f` for each point entry of `table` in order, reading (and checksumming) every data
/// block; stops early when `f` returns false. Checks that internal keys strictly increase and,
/// with a MashMeta index and from the start, that the trie lists exactly the table's user keys,
/// each at the block holding its newest version.
pub fn for_each_entry(
    table: &Arc<Table>,
    start_user_key: Option<&[u8]>,
    mut f: impl FnMut(TableEntry) -> bool,
) -> Result<TableDump> {
    let mut it = table.iter(false);
    match start_user_key {
        Some(k) => it.seek(&crate::types::lookup_key(k, crate::types::MAX_SEQ)),
        None => it.seek_to_first(),
    }
    let mut dump = TableDump::default();
    let mut prev: Option<Vec<u8>> = None;
    // With a MashMeta index, read from the start: the next key number the trie must give.
    let trie = match (table.index(), start_user_key) {
        (crate::sst::index::TableIndex::Trie(m), None) => Some(m.clone()),
        _ => None,
    };
    let mut next_key = 0usize;
    let mismatch = |what: String| {
        Error::corruption(format!(
            "table {:06}: the MashMeta index disagrees with the data: {what}",
            table.id()
        ))
    };
    let mut stopped = false;
    while it.valid() {
        let p = parse_internal_key(it.key())?;
        if let Some(m) = &trie {
            let new_key = prev
                .as_deref()
                .is_none_or(|k| crate::types::user_key(k) != p.user_key);
            if new_key {
                if m.probe(p.user_key) != crate::sst::index::trie::Probe::Found(next_key) {
                    return Err(mismatch(format!("key number {next_key} not found as such")));
                }
                let block = it.block_number();
                if block != Some(m.block_of_key(next_key)) {
                    return Err(mismatch(format!(
                        "key number {next_key} is in block {block:?}, the trie says {}",
                        m.block_of_key(next_key)
                    )));
                }
                next_key += 1;
            }
        }
        if let Some(prev) = &prev {
            if crate::types::compare_internal(prev, it.key()).is_ge() {
                return Err(Error::corruption(format!(
                    "table {:06}: keys out of order at entry {}",
                    table.id(),
                    dump.entries
                )));
            }
        }
        prev = Some(it.key().to_vec());
        dump.entries += 1;
        let go = f(TableEntry {
            user_key: p.user_key.to_vec(),
            seq: p.seq,
            kind: p.kind,
            value: it.value().to_vec(),
        });
        if !go {
            stopped = true;
            break;
        }
        it.next();
    }
    it.status()?;
    if let Some(m) = trie.filter(|_| !stopped) {
        if next_key != m.num_keys() {
            return Err(mismatch(format!(
                "{} keys in the data, {} in the trie",
                next_key,
                m.num_keys()
            )));
        }
    }
    dump.data_blocks = table.index_entries()?.len() as u64;
    Ok(dump)
}

/// The index of `table`: each data block's separator key and handle.
pub fn index_of(table: &Table) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
    table.index_entries()
}
