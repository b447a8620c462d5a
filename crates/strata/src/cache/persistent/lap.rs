//! [`LapCache`]: RocksMash's LSM-aware DataCache.
//!
//! One file on the fast tier: a 4 KiB superblock, then `buckets` buckets of `slots` fixed-size
//! slots. A block of table `t` at offset `o` lives in bucket `hash(t, o / 1 MiB) mod buckets`:
//! the paper hashes the table alone, which with few, large tables leaves most buckets empty and
//! caps a table's cached share at one bucket; hashing 1 MiB segments of a table spreads its
//! blocks while invalidation still visits only the buckets the table used (kept per table in
//! memory). Each bucket keeps, in
//! memory, a map from `(table, offset)` to slot, a validity bitmap and a last-use tick per slot
//! (its LRU order). Inserting takes an invalid (free) slot first, else evicts the bucket's least
//! recently used block. When compaction deletes a table, its slots' bits are cleared: the space
//! is reused at once and no valid block is disturbed.
//!
//! Slot: `magic "LAPS": u32 | len: u32 | table: u64 | offset: u64 | crc: u32 | 0: u32 | data`,
//! the masked CRC32C covering bytes 4..24 of the header and the data. Entries are verified on
//! every read; on open the file is scanned and entries of live tables are kept, so the cache
//! survives a restart, and anything damaged is discarded.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{table_hash, PersistentCache, PersistentCacheOptions};
use crate::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};
use crate::error::{Error, Result};
use crate::stats::TierStats;
use crate::storage::{RandomRwFile, Storage};
use crate::wal::mask_crc;

const SUPER: u64 = 4096;
/// Blocks of one table are spread over buckets in segments of this many bytes (1 MiB).
const SEGMENT_SHIFT: u32 = 20;
const SLOT_HEADER: usize = 32;
const SLOT_MAGIC: u32 = u32::from_le_bytes(*b"LAPS");
const FILE_MAGIC: u64 = u64::from_le_bytes(*b"STRATALP");

#[derive(Clone, Copy, Default)]
struct Slot {
    table: u64,
    offset: u64,
    len: u32,
    last_used: u64,
}

struct Bucket {
    map: HashMap<(u64, u64), u32>,
    slots: Vec<Slot>,
    valid: Vec<u64>,
}

impl Bucket {
    fn new(n: usize) -> Self {
        Bucket {
            map: HashMap::new(),
            slots: vec![Slot::default(); n],
            valid: vec![0; n.div_ceil(64)],
        }
    }
    fn is_valid(&self, i: usize) -> bool {
        self.valid[i / 64] & (1 << (i % 64)) != 0
    }
    fn set_valid(&mut self, i: usize, v: bool) {
        if v {
            self.valid[i / 64] |= 1 << (i % 64);
        } else {
            self.valid[i / 64] &= !(1 << (i % 64));
        }
    }
    fn free_slot(&self, n: usize) -> Option<usize> {
        self.valid.iter().enumerate().find_map(|(w, &bits)| {
            (bits != u64::MAX)
                .then(|| w * 64 + (!bits).trailing_zeros() as usize)
                .filter(|&i| i < n)
        })
    }
}

/// See the module docs.
pub struct LapCache {
    file: Arc<dyn RandomRwFile>,
    buckets: Vec<Mutex<Bucket>>,
    slots_per_bucket: usize,
    slot_size: u64,
    bucket_size: u64,
    tick: AtomicU64,
    used: AtomicU64,
    /// The buckets each table has blocks in, for invalidation.
    table_buckets: Mutex<HashMap<u64, Vec<u32>>>,
    capacity: u64,
    stats: Arc<TierStats>,
}

fn slot_crc(header: &[u8], data: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(&header[4..24]), data))
}

impl LapCache {
    /// Opens (or creates) the cache file under `dir`, keeping the entries of tables for which
    /// `is_live` holds.
    pub fn open(
        dir: &Path,
        storage: &dyn Storage,
        o: &PersistentCacheOptions,
        is_live: &dyn Fn(u64) -> bool,
        stats: Arc<TierStats>,
    ) -> Result<LapCache> {
        if o.slot_size < 512 || o.bucket_size < o.slot_size {
            return Err(Error::invalid(
                "LAP cache: slot_size >= 512 and bucket_size >= slot_size",
            ));
        }
        // At least 8 buckets, so a small cache is not one bucket larger than asked for.
        let bucket = o.bucket_size.min((o.capacity / 8).max(o.slot_size));
        let slots_per_bucket = (bucket / o.slot_size) as usize;
        let bucket_size = slots_per_bucket as u64 * o.slot_size;
        let n = (o.capacity / bucket_size).max(1) as usize;
        storage.create_dir_all(dir)?;
        let path = dir.join("data.cache");
        let existed = storage.exists(&path)?;
        let file = storage.open_rw(&path, SUPER + n as u64 * bucket_size)?;
        let mut sb = Vec::new();
        put_fixed64(&mut sb, FILE_MAGIC);
        put_fixed32(&mut sb, 1);
        put_fixed64(&mut sb, o.slot_size);
        put_fixed64(&mut sb, bucket_size);
        put_fixed64(&mut sb, n as u64);
        let cache = LapCache {
            file,
            buckets: (0..n)
                .map(|_| Mutex::new(Bucket::new(slots_per_bucket)))
                .collect(),
            slots_per_bucket,
            slot_size: o.slot_size,
            bucket_size,
            tick: AtomicU64::new(1),
            used: AtomicU64::new(0),
            table_buckets: Mutex::new(HashMap::new()),
            capacity: n as u64 * bucket_size,
            stats,
        };
        let same_geometry = existed
            && cache
                .file
                .read_at(0, sb.len())
                .map(|b| b[..] == sb[..])
                .unwrap_or(false);
        if same_geometry {
            cache.recover(is_live)?;
        } else {
            cache.file.write_at(0, &sb)?;
            cache.file.sync()?;
        }
        Ok(cache)
    }

    fn bucket_of(&self, table: u64, offset: u64) -> usize {
        let h = table_hash(table) ^ (offset >> SEGMENT_SHIFT).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h % self.buckets.len() as u64) as usize
    }

    fn note_bucket(&self, table: u64, b: usize) {
        let mut tb = self.table_buckets.lock();
        let v = tb.entry(table).or_default();
        if !v.contains(&(b as u32)) {
            v.push(b as u32);
        }
    }

    fn slot_pos(&self, bucket: usize, slot: usize) -> u64 {
        SUPER + bucket as u64 * self.bucket_size + slot as u64 * self.slot_size
    }

    /// Rebuilds the in-memory index from the file: valid, checksummed entries of live tables.
    fn recover(&self, is_live: &dyn Fn(u64) -> bool) -> Result<()> {
        let mut kept = 0u64;
        for (b, bucket) in self.buckets.iter().enumerate() {
            let data = self
                .file
                .read_at(self.slot_pos(b, 0), self.bucket_size as usize)?;
            let mut bk = bucket.lock();
            for s in 0..self.slots_per_bucket {
                let base = s * self.slot_size as usize;
                let h = &data[base..base + SLOT_HEADER];
                if decode_fixed32(h) != Some(SLOT_MAGIC) {
                    continue;
                }
                let len = decode_fixed32(&h[4..]).unwrap_or(0) as usize;
                let table = decode_fixed64(&h[8..]).unwrap_or(0);
                let offset = decode_fixed64(&h[16..]).unwrap_or(0);
                let crc = decode_fixed32(&h[24..]).unwrap_or(0);
                if SLOT_HEADER + len > self.slot_size as usize
                    || self.bucket_of(table, offset) != b
                    || !is_live(table)
                {
                    continue;
                }
                let payload = &data[base + SLOT_HEADER..base + SLOT_HEADER + len];
                if slot_crc(h, payload) != crc || bk.map.contains_key(&(table, offset)) {
                    continue;
                }
                bk.slots[s] = Slot {
                    table,
                    offset,
                    len: len as u32,
                    last_used: 0,
                };
                bk.set_valid(s, true);
                bk.map.insert((table, offset), s as u32);
                self.note_bucket(table, b);
                kept += len as u64;
            }
        }
        self.used.store(kept, Ordering::Relaxed);
        Ok(())
    }
}

impl PersistentCache for LapCache {
    fn get(&self, table: u64, offset: u64, len: usize) -> Option<Bytes> {
        let b = self.bucket_of(table, offset);
        let slot = {
            let mut bk = self.buckets[b].lock();
            let s = *bk.map.get(&(table, offset))? as usize;
            if !bk.is_valid(s) || bk.slots[s].len as usize != len {
                return None;
            }
            bk.slots[s].last_used = self.tick.fetch_add(1, Ordering::Relaxed);
            s
        };
        let raw = self
            .file
            .read_at(self.slot_pos(b, slot), SLOT_HEADER + len)
            .ok()?;
        let h = &raw[..SLOT_HEADER];
        let intact = decode_fixed32(h) == Some(SLOT_MAGIC)
            && decode_fixed32(&h[4..]) == Some(len as u32)
            && decode_fixed64(&h[8..]) == Some(table)
            && decode_fixed64(&h[16..]) == Some(offset)
            && decode_fixed32(&h[24..]) == Some(slot_crc(h, &raw[SLOT_HEADER..]));
        if !intact {
            // Overwritten concurrently, or damaged on disk: a miss either way.
            return None;
        }
        self.stats
            .pcache_read_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        Some(raw.slice(SLOT_HEADER..))
    }

    fn insert(&self, table: u64, offset: u64, data: &[u8]) {
        if SLOT_HEADER + data.len() > self.slot_size as usize {
            self.stats.pcache_rejected.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let b = self.bucket_of(table, offset);
        self.note_bucket(table, b);
        let slot = {
            let mut bk = self.buckets[b].lock();
            if bk.map.contains_key(&(table, offset)) {
                return;
            }
            let s = match bk.free_slot(self.slots_per_bucket) {
                Some(s) => s,
                None => {
                    let (s, victim) = bk
                        .slots
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, sl)| sl.last_used)
                        .map(|(i, sl)| (i, *sl))
                        .expect("buckets have slots");
                    bk.map.remove(&(victim.table, victim.offset));
                    self.used.fetch_sub(victim.len as u64, Ordering::Relaxed);
                    self.stats.pcache_evictions.fetch_add(1, Ordering::Relaxed);
                    s
                }
            };
            bk.slots[s] = Slot {
                table,
                offset,
                len: data.len() as u32,
                last_used: self.tick.fetch_add(1, Ordering::Relaxed),
            };
            bk.set_valid(s, true);
            bk.map.insert((table, offset), s as u32);
            s
        };
        let mut h = Vec::with_capacity(SLOT_HEADER + data.len());
        put_fixed32(&mut h, SLOT_MAGIC);
        put_fixed32(&mut h, data.len() as u32);
        put_fixed64(&mut h, table);
        put_fixed64(&mut h, offset);
        let crc = slot_crc(&h, data);
        put_fixed32(&mut h, crc);
        put_fixed32(&mut h, 0);
        h.extend_from_slice(data);
        if self.file.write_at(self.slot_pos(b, slot), &h).is_ok() {
            self.used.fetch_add(data.len() as u64, Ordering::Relaxed);
            self.stats.pcache_inserts.fetch_add(1, Ordering::Relaxed);
            self.stats
                .pcache_write_bytes
                .fetch_add(data.len() as u64, Ordering::Relaxed);
        } else {
            let mut bk = self.buckets[b].lock();
            bk.set_valid(slot, false);
            bk.map.remove(&(table, offset));
        }
    }

    fn invalidate_table(&self, table: u64) {
        let buckets = self.table_buckets.lock().remove(&table).unwrap_or_default();
        let mut n = 0;
        for b in buckets {
            let mut bk = self.buckets[b as usize].lock();
            for s in 0..self.slots_per_bucket {
                if bk.is_valid(s) && bk.slots[s].table == table {
                    bk.set_valid(s, false);
                    let sl = bk.slots[s];
                    bk.map.remove(&(sl.table, sl.offset));
                    self.used.fetch_sub(sl.len as u64, Ordering::Relaxed);
                    n += 1;
                }
            }
        }
        self.stats
            .pcache_invalidations
            .fetch_add(n, Ordering::Relaxed);
    }

    fn usage(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn name(&self) -> &'static str {
        "lap"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    fn opts() -> PersistentCacheOptions {
        PersistentCacheOptions {
            kind: super::super::PersistentCacheKind::Lap,
            capacity: 1 << 20,
            bucket_size: 64 << 10,
            slot_size: 4 << 10,
            file_size: 0,
        }
    }

    #[test]
    fn insert_get_evict_invalidate_recover() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(TierStats::default());
        let live = |_t: u64| true;
        let c = LapCache::open(dir.path(), &LocalFs, &opts(), &live, stats.clone()).unwrap();
        for off in 0..10u64 {
            c.insert(1, off * 100, &[off as u8; 1000]);
        }
        for off in 0..10u64 {
            assert_eq!(
                c.get(1, off * 100, 1000).unwrap()[..],
                [off as u8; 1000][..]
            );
        }
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 0);
        assert!(c.get(1, 5, 1000).is_none());
        drop(c);
        let c = LapCache::open(dir.path(), &LocalFs, &opts(), &live, stats.clone()).unwrap();
        for off in 0..10u64 {
            assert_eq!(
                c.get(1, off * 100, 1000).unwrap()[..],
                [off as u8; 1000][..],
                "after reopen"
            );
        }
        // 16 slots per bucket: six more fit, the rest evict.
        for off in 10..16u64 {
            c.insert(1, off * 100, &[off as u8; 1000]);
        }
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 0);
        // A full bucket evicts its least recently used block.
        for off in 20..100u64 {
            c.insert(1, off * 100, &[1; 1000]);
        }
        assert!(stats.pcache_evictions.load(Ordering::Relaxed) > 0);
        c.invalidate_table(1);
        assert!(c.get(1, 9900, 1000).is_none());
        assert_eq!(c.usage(), 0);
    }
}
