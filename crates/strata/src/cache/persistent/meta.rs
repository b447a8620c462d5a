//! [`MetaCache`]: per-table metadata sidecars on the fast tier.
//!
//! Sidecar `meta/<id>.meta`: a 56-byte header — magic `"STRATAMC"`, version u32 (1), table id
//! u64, table size u64, tail offset u64, tail length u64, CRC32C of the tail u32, CRC32C of the
//! header's first 48 bytes u32 (both masked), reserved u32 — then the table's bytes from the
//! tail offset to its end.
//!
//! The cache also keeps, in memory, each sidecar's size (read from the directory at open) and —
//! once the table has been written or opened in this process — how much of it is index, bloom
//! filter or MashMeta trie ([`MetaCache::totals`], the figures RocksMash §3.3 sets out to shrink).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};
use crate::error::Result;
use crate::stats::TierStats;
use crate::storage::Storage;
use crate::wal::mask_crc;

const MAGIC: u64 = u64::from_le_bytes(*b"STRATAMC");
const HEADER: usize = 56;

/// Sidecars of capacity tables' metadata.
pub struct MetaCache {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    present: Mutex<HashMap<u64, Sidecar>>,
    stats: Arc<TierStats>,
}

/// What one sidecar holds.
#[derive(Clone, Copy, Debug, Default)]
struct Sidecar {
    bytes: u64,
    kinds: Option<MetaKinds>,
}

/// The index, filter and trie bytes of one capacity table's metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaKinds {
    /// Block-index bytes (0 when the table has a MashMeta trie index instead).
    pub index: u64,
    /// Bloom-filter bytes.
    pub filter: u64,
    /// MashMeta trie-index bytes (0 when the table has a block index).
    pub trie: u64,
}

impl MetaKinds {
    /// From a table's properties.
    pub fn of(p: &crate::sst::TableProperties) -> MetaKinds {
        let (index, trie) = match p.index_type {
            1 => (0, p.index_size),
            _ => (p.index_size, 0),
        };
        MetaKinds {
            index,
            filter: p.filter_size,
            trie,
        }
    }
}

/// Capacity-table metadata held on the fast tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MetaTotals {
    /// Sidecars, and their bytes on the fast tier (headers included).
    pub tables: u64,
    /// Bytes of the sidecars on the fast tier, headers included.
    pub bytes: u64,
    /// Of the tables whose make-up is known (written or opened since the database opened):
    /// how many, and their block-index, bloom-filter and MashMeta-trie bytes.
    pub known_tables: u64,
    /// Block-index bytes of the known tables.
    pub index_bytes: u64,
    /// Bloom-filter bytes of the known tables.
    pub filter_bytes: u64,
    /// MashMeta trie-index bytes of the known tables.
    pub trie_bytes: u64,
}

impl MetaCache {
    /// Opens the sidecar directory, keeping sidecars of `live` tables and deleting the rest.
    pub fn open(
        db_dir: &Path,
        storage: Arc<dyn Storage>,
        live: &HashSet<u64>,
        stats: Arc<TierStats>,
    ) -> Result<MetaCache> {
        let dir = db_dir.join("meta");
        storage.create_dir_all(&dir)?;
        let mut present = HashMap::new();
        for name in storage.list(&dir)? {
            let id = name
                .strip_suffix(".meta")
                .and_then(|s| s.parse::<u64>().ok());
            match id {
                Some(id) if live.contains(&id) => {
                    let bytes = storage.open(&dir.join(&name))?.size();
                    present.insert(id, Sidecar { bytes, kinds: None });
                }
                _ => storage.remove(&dir.join(&name))?,
            }
        }
        Ok(MetaCache {
            dir,
            storage,
            present: Mutex::new(present),
            stats,
        })
    }

    fn path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id:06}.meta"))
    }

    /// Stores the tail of table `id` (bytes `offset..table_size`).
    pub fn insert(
        &self,
        id: u64,
        table_size: u64,
        offset: u64,
        tail: &[u8],
        kinds: Option<MetaKinds>,
    ) -> Result<()> {
        let mut h = Vec::with_capacity(HEADER + tail.len());
        put_fixed64(&mut h, MAGIC);
        put_fixed32(&mut h, 1);
        put_fixed64(&mut h, id);
        put_fixed64(&mut h, table_size);
        put_fixed64(&mut h, offset);
        put_fixed64(&mut h, tail.len() as u64);
        put_fixed32(&mut h, mask_crc(crc32c::crc32c(tail)));
        let hc = mask_crc(crc32c::crc32c(&h));
        put_fixed32(&mut h, hc);
        put_fixed32(&mut h, 0);
        h.extend_from_slice(tail);
        let mut f = self.storage.create(&self.path(id))?;
        f.append(&h)?;
        f.sync()?;
        self.present.lock().insert(
            id,
            Sidecar {
                bytes: h.len() as u64,
                kinds,
            },
        );
        self.stats.meta_builds.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The tail of table `id` and its offset, if a valid sidecar is present (one local read).
    /// A damaged or mismatched sidecar is deleted and reported as absent.
    pub fn get(&self, id: u64, table_size: u64) -> Option<(u64, Bytes)> {
        if !self.present.lock().contains_key(&id) {
            return None;
        }
        let path = self.path(id);
        let data = self.storage.read_all(&path).ok()?;
        let ok = (|| {
            if data.len() < HEADER || decode_fixed64(&data)? != MAGIC {
                return None;
            }
            let f = |o: usize| decode_fixed64(&data[o..]);
            let (ver, tid, size, off, len) =
                (decode_fixed32(&data[8..])?, f(12)?, f(20)?, f(28)?, f(36)?);
            let (tail_crc, head_crc) = (decode_fixed32(&data[44..])?, decode_fixed32(&data[48..])?);
            if ver != 1
                || tid != id
                || size != table_size
                || head_crc != mask_crc(crc32c::crc32c(&data[..48]))
                // `len` is untrusted: compare without adding to it.
                || (data.len() - HEADER) as u64 != len
                || off.checked_add(len)? != size
            {
                return None;
            }
            let tail = Bytes::from(data).slice(HEADER..);
            (mask_crc(crc32c::crc32c(&tail)) == tail_crc).then_some((off, tail))
        })();
        match ok {
            Some(v) => {
                self.stats.meta_local_reads.fetch_add(1, Ordering::Relaxed);
                Some(v)
            }
            None => {
                tracing::warn!(table = id, "discarding a damaged metadata sidecar");
                self.remove(id);
                None
            }
        }
    }

    /// Records what table `id`'s metadata is made of (when the table is opened).
    pub fn note_kinds(&self, id: u64, kinds: MetaKinds) {
        if let Some(s) = self.present.lock().get_mut(&id) {
            s.kinds = Some(kinds);
        }
    }

    /// What the sidecars hold.
    pub fn totals(&self) -> MetaTotals {
        let mut t = MetaTotals::default();
        for s in self.present.lock().values() {
            t.tables += 1;
            t.bytes += s.bytes;
            if let Some(k) = s.kinds {
                t.known_tables += 1;
                t.index_bytes += k.index;
                t.filter_bytes += k.filter;
                t.trie_bytes += k.trie;
            }
        }
        t
    }

    /// Drops the sidecar of a deleted table.
    pub fn remove(&self, id: u64) {
        self.present.lock().remove(&id);
        let _ = self.storage.remove(&self.path(id));
    }

    /// The number of sidecars present.
    pub fn len(&self) -> usize {
        self.present.lock().len()
    }

    /// Whether no sidecar is present.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    /// Found by the `meta_sidecar` cargo-fuzz run: a tail length near `u64::MAX` in a sidecar
    /// header overflowed `HEADER + len` (a panic with overflow checks).
    #[test]
    fn fuzz_meta_sidecar_tail_length_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let live = HashSet::from([1u64]);
        let mc = MetaCache::open(dir.path(), Arc::new(LocalFs), &live, Arc::default()).unwrap();
        mc.insert(1, 110, 100, b"0123456789", None).unwrap();
        assert_eq!(mc.get(1, 110).unwrap().1.as_ref(), b"0123456789");
        let path = mc.path(1);
        let mut data = std::fs::read(&path).unwrap();
        let len = u64::MAX - 10;
        data[36..44].copy_from_slice(&len.to_le_bytes());
        let hc = mask_crc(crc32c::crc32c(&data[..48]));
        data[48..52].copy_from_slice(&hc.to_le_bytes());
        std::fs::write(&path, &data).unwrap();
        let mc = MetaCache::open(dir.path(), Arc::new(LocalFs), &live, Arc::default()).unwrap();
        assert!(mc.get(1, 110).is_none());
    }
}
