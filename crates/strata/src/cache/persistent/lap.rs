//! [`LapCache`]: RocksMash's LSM-aware DataCache.
//!
//! One file on the fast tier: a 4 KiB superblock, then `buckets` buckets of `units` allocation
//! units of `unit_size` bytes. A block of table `t` at offset `o` lives in bucket
//! `hash(t, o / 1 MiB) mod buckets`: the paper hashes the table alone, which with few, large
//! tables leaves most buckets empty and caps a table's cached share at one bucket; hashing 1 MiB
//! segments of a table spreads its blocks while invalidation still visits only the buckets the
//! table used (kept per table in memory).
//!
//! An entry (a 32-byte header and the block) takes as many contiguous units as it needs: blocks
//! are stored as the table holds them, compressed and of varying size, and fixed-size slots
//! sized for the largest block wasted a third of the cache on compressed tables. Each bucket
//! keeps, in memory, a map from `(table, offset)` to entry, each entry's units and last-use tick
//! (its LRU order), and a per-unit owner table (the validity bitmap, plus the back-pointer a
//! variable-size allocator needs). Inserting takes the first free run of units that fits (space
//! freed by invalidation is used first); otherwise it evicts the bucket's least recently used
//! entry and, if the hole is still too small, its physical neighbours. When compaction deletes
//! a table, its entries are dropped from memory: the space is reused at once and no valid block
//! is disturbed.
//!
//! Entry header: `magic "LAPS": u32 | len: u32 | table: u64 | offset: u64 | crc: u32 | 0: u32`,
//! then `len` bytes of data; the masked CRC32C covers bytes 4..24 of the header and the data.
//! Entries are verified on every read; on open the file is scanned unit by unit and intact
//! entries of live tables are kept, so the cache survives a restart, and anything damaged is
//! discarded. Byte layout: `docs/format.md` §9.
//!
//! Depends on `storage` and `stats` only.

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
const HEADER: usize = 32;
const ENTRY_MAGIC: u32 = u32::from_le_bytes(*b"LAPS");
const FILE_MAGIC: u64 = u64::from_le_bytes(*b"STRATALP");
const FILE_VERSION: u32 = 2;
/// A free unit in [`Bucket::owner`].
const FREE: u16 = u16::MAX;
/// Units per bucket are capped so an entry index fits the owner table's `u16`.
const MAX_UNITS: u64 = FREE as u64;

#[derive(Clone, Copy, Default)]
struct Entry {
    table: u64,
    offset: u64,
    len: u32,
    start: u32,
    units: u32,
    last_used: u64,
}

struct Bucket {
    map: HashMap<(u64, u64), u16>,
    /// Entry slab; indices on `free_entries` are unused.
    entries: Vec<Entry>,
    free_entries: Vec<u16>,
    /// The entry occupying each unit, or [`FREE`].
    owner: Vec<u16>,
    /// Units marked [`FREE`] in `owner`: a full bucket skips the search for a hole.
    free_units: usize,
}

impl Bucket {
    fn new(units: usize) -> Self {
        Bucket {
            map: HashMap::new(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            owner: vec![FREE; units],
            free_units: units,
        }
    }

    /// The first run of `k` free units.
    fn find_free(&self, k: usize) -> Option<usize> {
        if self.free_units < k {
            return None;
        }
        let mut run = 0;
        for (u, &o) in self.owner.iter().enumerate() {
            if o == FREE {
                run += 1;
                if run == k {
                    return Some(u + 1 - k);
                }
            } else {
                run = 0;
            }
        }
        None
    }

    fn add(&mut self, e: Entry) -> u16 {
        let idx = match self.free_entries.pop() {
            Some(i) => {
                self.entries[i as usize] = e;
                i
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u16
            }
        };
        for o in &mut self.owner[e.start as usize..(e.start + e.units) as usize] {
            *o = idx;
        }
        self.free_units -= e.units as usize;
        self.map.insert((e.table, e.offset), idx);
        idx
    }

    /// Drops entry `idx`, returning it.
    fn remove(&mut self, idx: u16) -> Entry {
        let e = self.entries[idx as usize];
        for o in &mut self.owner[e.start as usize..(e.start + e.units) as usize] {
            *o = FREE;
        }
        self.free_units += e.units as usize;
        self.map.remove(&(e.table, e.offset));
        self.free_entries.push(idx);
        e
    }

    fn live(&self) -> impl Iterator<Item = u16> + '_ {
        self.map.values().copied()
    }

    /// Frees `k` contiguous units by eviction: the least recently used entry, then as many of
    /// its physical neighbours as the hole needs. Returns the run's start and the evicted
    /// entries. The bucket must have at least `k` units.
    fn make_room(&mut self, k: usize) -> (usize, Vec<Entry>) {
        let mut evicted = Vec::new();
        let Some(victim) = self
            .live()
            .min_by_key(|&i| self.entries[i as usize].last_used)
        else {
            // Unreachable: with no entry every unit is free, and `k` fits the bucket.
            return (0, evicted);
        };
        let e = self.remove(victim);
        evicted.push(e);
        let n = self.owner.len();
        let (mut lo, mut hi) = (e.start as usize, (e.start + e.units) as usize);
        while lo > 0 && self.owner[lo - 1] == FREE {
            lo -= 1;
        }
        while hi - lo < k && hi < n {
            match self.owner[hi] {
                FREE => hi += 1,
                i => {
                    let e = self.remove(i);
                    hi = (e.start + e.units) as usize;
                    evicted.push(e);
                }
            }
        }
        while hi - lo < k {
            match self.owner[lo - 1] {
                FREE => lo -= 1,
                i => {
                    let e = self.remove(i);
                    lo = e.start as usize;
                    evicted.push(e);
                }
            }
        }
        (lo, evicted)
    }
}

/// See the module docs.
pub struct LapCache {
    file: Arc<dyn RandomRwFile>,
    buckets: Vec<Mutex<Bucket>>,
    units_per_bucket: usize,
    unit_size: u64,
    bucket_size: u64,
    tick: AtomicU64,
    used: AtomicU64,
    /// The buckets each table has blocks in, for invalidation.
    table_buckets: Mutex<HashMap<u64, Vec<u32>>>,
    capacity: u64,
    stats: Arc<TierStats>,
}

fn entry_crc(header: &[u8], data: &[u8]) -> u32 {
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
        let unit = o.unit_size;
        if unit < 64 || o.bucket_size < unit {
            return Err(Error::invalid(
                "LAP cache: unit_size >= 64 and bucket_size >= unit_size",
            ));
        }
        // At least 8 buckets, so a small cache is not one bucket larger than asked for.
        let bucket = o.bucket_size.min((o.capacity / 8).max(unit));
        let units_per_bucket = (bucket / unit).min(MAX_UNITS) as usize;
        let bucket_size = units_per_bucket as u64 * unit;
        let n = (o.capacity / bucket_size).max(1) as usize;
        storage.create_dir_all(dir)?;
        let path = dir.join("data.cache");
        let existed = storage.exists(&path)?;
        let file = storage.open_rw(&path, SUPER + n as u64 * bucket_size)?;
        let mut sb = Vec::new();
        put_fixed64(&mut sb, FILE_MAGIC);
        put_fixed32(&mut sb, FILE_VERSION);
        put_fixed64(&mut sb, unit);
        put_fixed64(&mut sb, bucket_size);
        put_fixed64(&mut sb, n as u64);
        let cache = LapCache {
            file,
            buckets: (0..n)
                .map(|_| Mutex::new(Bucket::new(units_per_bucket)))
                .collect(),
            units_per_bucket,
            unit_size: unit,
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

    fn unit_pos(&self, bucket: usize, unit: usize) -> u64 {
        SUPER + bucket as u64 * self.bucket_size + unit as u64 * self.unit_size
    }

    /// Units an entry of `len` data bytes takes.
    fn units_for(&self, len: usize) -> usize {
        (HEADER + len).div_ceil(self.unit_size as usize)
    }

    /// Rebuilds the in-memory index from the file: intact entries of live tables, found by
    /// scanning each bucket unit by unit and skipping over every entry kept.
    fn recover(&self, is_live: &dyn Fn(u64) -> bool) -> Result<()> {
        let mut kept = 0u64;
        let unit = self.unit_size as usize;
        for (b, bucket) in self.buckets.iter().enumerate() {
            let data = self
                .file
                .read_at(self.unit_pos(b, 0), self.bucket_size as usize)?;
            let mut bk = bucket.lock();
            let mut u = 0;
            while u < self.units_per_bucket {
                let base = u * unit;
                let h = &data[base..base + HEADER.min(data.len() - base)];
                let ok = h.len() == HEADER && decode_fixed32(h) == Some(ENTRY_MAGIC);
                let len = if ok {
                    decode_fixed32(&h[4..]).unwrap_or(0) as usize
                } else {
                    0
                };
                let (table, offset) = if ok {
                    (
                        decode_fixed64(&h[8..]).unwrap_or(0),
                        decode_fixed64(&h[16..]).unwrap_or(0),
                    )
                } else {
                    (0, 0)
                };
                let units = self.units_for(len);
                let keep = ok
                    && u + units <= self.units_per_bucket
                    && self.bucket_of(table, offset) == b
                    && is_live(table)
                    && !bk.map.contains_key(&(table, offset))
                    && decode_fixed32(&h[24..])
                        == Some(entry_crc(h, &data[base + HEADER..base + HEADER + len]));
                if !keep {
                    u += 1;
                    continue;
                }
                bk.add(Entry {
                    table,
                    offset,
                    len: len as u32,
                    start: u as u32,
                    units: units as u32,
                    last_used: 0,
                });
                self.note_bucket(table, b);
                kept += len as u64;
                u += units;
            }
        }
        self.used.store(kept, Ordering::Relaxed);
        Ok(())
    }
}

impl PersistentCache for LapCache {
    fn get(&self, table: u64, offset: u64, len: usize) -> Option<Bytes> {
        let b = self.bucket_of(table, offset);
        let start = {
            let mut bk = self.buckets[b].lock();
            let i = *bk.map.get(&(table, offset))? as usize;
            let tick = self.tick.fetch_add(1, Ordering::Relaxed);
            let e = &mut bk.entries[i];
            if e.len as usize != len {
                return None;
            }
            e.last_used = tick;
            e.start as usize
        };
        let raw = self
            .file
            .read_at(self.unit_pos(b, start), HEADER + len)
            .ok()?;
        let h = &raw[..HEADER];
        let intact = decode_fixed32(h) == Some(ENTRY_MAGIC)
            && decode_fixed32(&h[4..]) == Some(len as u32)
            && decode_fixed64(&h[8..]) == Some(table)
            && decode_fixed64(&h[16..]) == Some(offset)
            && decode_fixed32(&h[24..]) == Some(entry_crc(h, &raw[HEADER..]));
        if !intact {
            // Overwritten concurrently, or damaged on disk: a miss either way.
            return None;
        }
        self.stats
            .pcache_read_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        Some(raw.slice(HEADER..))
    }

    fn insert(&self, table: u64, offset: u64, data: &[u8]) {
        let k = self.units_for(data.len());
        if k > self.units_per_bucket {
            self.stats.pcache_rejected.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let b = self.bucket_of(table, offset);
        let start = {
            let mut bk = self.buckets[b].lock();
            if bk.map.contains_key(&(table, offset)) {
                return;
            }
            // Recorded before the entry exists, so an invalidation racing this insert finds it.
            self.note_bucket(table, b);
            let start = match bk.find_free(k) {
                Some(s) => s,
                None => {
                    let (s, evicted) = bk.make_room(k);
                    for e in &evicted {
                        self.used.fetch_sub(e.len as u64, Ordering::Relaxed);
                    }
                    self.stats
                        .pcache_evictions
                        .fetch_add(evicted.len() as u64, Ordering::Relaxed);
                    s
                }
            };
            bk.add(Entry {
                table,
                offset,
                len: data.len() as u32,
                start: start as u32,
                units: k as u32,
                last_used: self.tick.fetch_add(1, Ordering::Relaxed),
            });
            start
        };
        let mut h = Vec::with_capacity(HEADER + data.len());
        put_fixed32(&mut h, ENTRY_MAGIC);
        put_fixed32(&mut h, data.len() as u32);
        put_fixed64(&mut h, table);
        put_fixed64(&mut h, offset);
        let crc = entry_crc(&h, data);
        put_fixed32(&mut h, crc);
        put_fixed32(&mut h, 0);
        h.extend_from_slice(data);
        if self.file.write_at(self.unit_pos(b, start), &h).is_ok() {
            self.used.fetch_add(data.len() as u64, Ordering::Relaxed);
            self.stats.pcache_inserts.fetch_add(1, Ordering::Relaxed);
            self.stats
                .pcache_write_bytes
                .fetch_add(data.len() as u64, Ordering::Relaxed);
        } else {
            let mut bk = self.buckets[b].lock();
            if let Some(&i) = bk.map.get(&(table, offset)) {
                if bk.entries[i as usize].start as usize == start {
                    bk.remove(i);
                }
            }
        }
    }

    fn invalidate_table(&self, table: u64) {
        let buckets = self.table_buckets.lock().remove(&table).unwrap_or_default();
        let mut n = 0;
        for b in buckets {
            let mut bk = self.buckets[b as usize].lock();
            let mine: Vec<u16> = bk
                .live()
                .filter(|&i| bk.entries[i as usize].table == table)
                .collect();
            for i in mine {
                let e = bk.remove(i);
                self.used.fetch_sub(e.len as u64, Ordering::Relaxed);
                n += 1;
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
            unit_size: 256,
            file_size: 0,
        }
    }

    #[test]
    fn insert_get_evict_invalidate_recover() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(TierStats::default());
        let live = |_t: u64| true;
        let c = LapCache::open(dir.path(), &LocalFs, &opts(), &live, stats.clone()).unwrap();
        // 992-byte blocks take 4 units (1024 bytes): 64 fit in a 64 KiB bucket. Offsets below
        // 1 MiB share table 1's first bucket.
        for off in 0..10u64 {
            c.insert(1, off * 1000, &[off as u8; 992]);
        }
        for off in 0..10u64 {
            assert_eq!(c.get(1, off * 1000, 992).unwrap()[..], [off as u8; 992][..]);
        }
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 0);
        assert!(c.get(1, 5, 992).is_none());
        assert!(c.get(1, 0, 999).is_none(), "a different length is a miss");
        drop(c);
        let c = LapCache::open(dir.path(), &LocalFs, &opts(), &live, stats.clone()).unwrap();
        for off in 0..10u64 {
            assert_eq!(
                c.get(1, off * 1000, 992).unwrap()[..],
                [off as u8; 992][..],
                "after reopen"
            );
        }
        assert_eq!(c.usage(), 9_920);
        for off in 10..64u64 {
            c.insert(1, off * 1000, &[off as u8; 992]);
        }
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 0);
        // A full bucket evicts its least recently used block: touch block 0, insert one more.
        assert!(c.get(1, 0, 992).is_some());
        c.insert(1, 64_000, &[64; 992]);
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 1);
        assert!(c.get(1, 0, 992).is_some(), "recently used survives");
        assert!(c.get(1, 1000, 992).is_none(), "least recently used went");
        c.invalidate_table(1);
        assert!(c.get(1, 64_000, 992).is_none());
        assert_eq!(c.usage(), 0);
    }

    #[test]
    fn small_blocks_share_space_a_large_one_evicts_neighbours() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(TierStats::default());
        let live = |_t: u64| true;
        let c = LapCache::open(dir.path(), &LocalFs, &opts(), &live, stats.clone()).unwrap();
        // 224-byte blocks take one unit each: the whole bucket (256 units) holds 256 of them.
        for i in 0..256u64 {
            c.insert(7, i * 300, &[i as u8; 224]);
        }
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 0);
        assert_eq!(c.usage(), 256 * 224);
        // A 4000-byte block needs 16 contiguous units: the LRU block and 15 neighbours go.
        c.insert(7, 900_000, &[9; 4000]);
        assert_eq!(stats.pcache_evictions.load(Ordering::Relaxed), 16);
        assert_eq!(c.get(7, 900_000, 4000).unwrap()[..], [9; 4000][..]);
        assert!(c.get(7, 0, 224).is_none());
        assert!(c.get(7, 15 * 300, 224).is_none());
        assert_eq!(c.get(7, 16 * 300, 224).unwrap()[..], [16; 224][..]);
        assert_eq!(c.usage(), (256 - 16) * 224 + 4000);
        // Larger than a bucket: rejected.
        c.insert(7, 950_000, &vec![1; 64 << 10]);
        assert_eq!(stats.pcache_rejected.load(Ordering::Relaxed), 1);
    }

    /// Random inserts of varying sizes, lookups, invalidations and reopenings: a hit always
    /// returns the inserted bytes, never a dead table's; entries never overlap; the owner table
    /// and usage agree with the entries.
    #[test]
    fn model_random_sizes() {
        let seed = strata_test_support::seed("lap model");
        let mut rng = strata_test_support::Rng::new(seed);
        let mut next = move || rng.next_u64();
        let dir = tempfile::tempdir().unwrap();
        let stats = Arc::new(TierStats::default());
        let dead = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let is_live = {
            let dead = dead.clone();
            move |t: u64| !dead.lock().contains(&t)
        };
        let o = PersistentCacheOptions {
            capacity: 256 << 10,
            bucket_size: 32 << 10,
            ..opts()
        };
        let block = |t: u64, off: u64, len: usize| -> Vec<u8> {
            (0..len)
                .map(|i| (t * 31 + off * 7 + i as u64) as u8)
                .collect()
        };
        let mut c = LapCache::open(dir.path(), &LocalFs, &o, &is_live, stats.clone()).unwrap();
        for step in 0..20_000 {
            let t = next() % 12;
            let off = (next() % 64) * 4096 + (next() % 4) * (1 << 20);
            let len = (off as usize / 4096 * 97 + t as usize * 13) % 5000 + 1;
            match next() % 100 {
                0..=49 => {
                    if !dead.lock().contains(&t) {
                        c.insert(t, off, &block(t, off, len));
                    }
                }
                50..=96 => {
                    if let Some(got) = c.get(t, off, len) {
                        assert_eq!(got[..], block(t, off, len)[..], "seed {seed} step {step}");
                        assert!(!dead.lock().contains(&t), "seed {seed}: dead table hit");
                    }
                }
                97..=98 => {
                    c.invalidate_table(t);
                    dead.lock().insert(t);
                }
                _ => {
                    drop(c);
                    c = LapCache::open(dir.path(), &LocalFs, &o, &is_live, stats.clone()).unwrap();
                }
            }
            if step % 500 == 0 {
                let mut total = 0u64;
                for b in &c.buckets {
                    let bk = b.lock();
                    let mut owned = vec![FREE; bk.owner.len()];
                    for (&(t, off), &i) in &bk.map {
                        let e = bk.entries[i as usize];
                        assert_eq!((e.table, e.offset), (t, off), "seed {seed}");
                        for u in e.start..e.start + e.units {
                            assert_eq!(owned[u as usize], FREE, "seed {seed}: overlap");
                            owned[u as usize] = i;
                        }
                        total += e.len as u64;
                    }
                    assert_eq!(owned, bk.owner, "seed {seed}: owner table");
                    let free = owned.iter().filter(|&&o| o == FREE).count();
                    assert_eq!(free, bk.free_units, "seed {seed}: free units");
                }
                assert_eq!(total, c.usage(), "seed {seed}: usage");
                assert!(c.usage() <= c.capacity());
            }
        }
        assert!(stats.pcache_evictions.load(Ordering::Relaxed) > 0);
    }
}
