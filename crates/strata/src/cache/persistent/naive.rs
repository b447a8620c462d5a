//! [`NaiveCache`]: the baseline, modelled on RocksDB's old persistent cache: blocks are
//! appended to the current cache file; full files become read-only; when the cache exceeds its
//! capacity the least recently used *file* is deleted with every block in it. It does not
//! know about compaction, so blocks of deleted tables occupy space until their file goes.
//! Checksums are kept in memory; the cache starts empty after a restart.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{PersistentCache, PersistentCacheOptions};
use crate::error::Result;
use crate::stats::TierStats;
use crate::storage::{RandomRwFile, Storage};

struct CacheFile {
    id: u64,
    file: Arc<dyn RandomRwFile>,
    written: u64,
    last_used: u64,
    keys: Vec<(u64, u64)>,
}

struct Inner {
    files: VecDeque<CacheFile>,
    map: HashMap<(u64, u64), (u64, u64, u32, u32)>,
    next_id: u64,
    total: u64,
}

/// See the module docs.
pub struct NaiveCache {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    file_size: u64,
    capacity: u64,
    inner: Mutex<Inner>,
    tick: AtomicU64,
    stats: Arc<TierStats>,
}

impl NaiveCache {
    /// Opens an empty cache in `dir`, deleting whatever files are there; fails if `dir` cannot be
    /// created, listed or cleared.
    pub fn open(
        dir: &Path,
        storage: Arc<dyn Storage>,
        o: &PersistentCacheOptions,
        stats: Arc<TierStats>,
    ) -> Result<NaiveCache> {
        storage.create_dir_all(dir)?;
        for name in storage.list(dir)? {
            storage.remove(&dir.join(name))?;
        }
        Ok(NaiveCache {
            dir: dir.to_path_buf(),
            storage,
            file_size: o.file_size.max(4096),
            capacity: o.capacity,
            inner: Mutex::new(Inner {
                files: VecDeque::new(),
                map: HashMap::new(),
                next_id: 1,
                total: 0,
            }),
            tick: AtomicU64::new(1),
            stats,
        })
    }

    fn path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id:06}.cache"))
    }
}

impl PersistentCache for NaiveCache {
    fn get(&self, table: u64, offset: u64, len: usize) -> Option<Bytes> {
        let (file, pos, crc) = {
            let mut g = self.inner.lock();
            let &(fid, pos, l, crc) = g.map.get(&(table, offset))?;
            if l as usize != len {
                return None;
            }
            let t = self.tick.fetch_add(1, Ordering::Relaxed);
            let f = g.files.iter_mut().find(|f| f.id == fid)?;
            f.last_used = t;
            (f.file.clone(), pos, crc)
        };
        let data = file.read_at(pos, len).ok()?;
        if crc32c::crc32c(&data) != crc {
            return None;
        }
        self.stats
            .pcache_read_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        Some(data)
    }

    fn insert(&self, table: u64, offset: u64, data: &[u8]) {
        if data.len() as u64 > self.file_size {
            self.stats.pcache_rejected.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut g = self.inner.lock();
        if g.map.contains_key(&(table, offset)) {
            return;
        }
        let need_new = g
            .files
            .back()
            .is_none_or(|f| f.written + data.len() as u64 > self.file_size);
        if need_new {
            let id = g.next_id;
            g.next_id += 1;
            let Ok(file) = self.storage.open_rw(&self.path(id), self.file_size) else {
                return;
            };
            g.files.push_back(CacheFile {
                id,
                file,
                written: 0,
                last_used: self.tick.fetch_add(1, Ordering::Relaxed),
                keys: Vec::new(),
            });
            g.total += self.file_size;
        }
        let cur = g.files.back_mut().expect("a writable file");
        let pos = cur.written;
        if cur.file.write_at(pos, data).is_err() {
            return;
        }
        cur.written += data.len() as u64;
        cur.keys.push((table, offset));
        cur.last_used = self.tick.fetch_add(1, Ordering::Relaxed);
        let fid = cur.id;
        g.map.insert(
            (table, offset),
            (fid, pos, data.len() as u32, crc32c::crc32c(data)),
        );
        self.stats.pcache_inserts.fetch_add(1, Ordering::Relaxed);
        self.stats
            .pcache_write_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        // Evict whole files, least recently used first, never the one being written.
        while g.total > self.capacity && g.files.len() > 1 {
            let n = g.files.len();
            let victim = (0..n - 1)
                .min_by_key(|&i| g.files[i].last_used)
                .expect("at least one sealed file");
            let f = g.files.remove(victim).expect("index in range");
            for k in &f.keys {
                if g.map.get(k).is_some_and(|e| e.0 == f.id) {
                    g.map.remove(k);
                }
            }
            g.total -= self.file_size;
            self.stats
                .pcache_evictions
                .fetch_add(f.keys.len() as u64, Ordering::Relaxed);
            let _ = self.storage.remove(&self.path(f.id));
        }
    }

    fn invalidate_table(&self, _table: u64) {
        // Not compaction-aware: that is the point of this baseline.
    }

    fn usage(&self) -> u64 {
        self.inner.lock().files.iter().map(|f| f.written).sum()
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn name(&self) -> &'static str {
        "naive"
    }
}
