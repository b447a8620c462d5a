//! Target `lap_cache`: the LAP DataCache file's recovery scan (`LapCache::open` on an existing
//! file of the same geometry), through the local file system on tmpfs.
//!
//! Input: flag byte (bit 0: reseal the CRC of every entry header found at a unit boundary),
//! then the bucket area of a small cache (64-byte units, 8 buckets of 512 bytes) placed after a
//! valid superblock. Properties: recovery never panics; usage stays within capacity; an entry
//! `get` returns is byte for byte the one in the file; and the recovered allocator state is
//! consistent: blocks inserted afterwards read back intact.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use strata::cache::persistent::{
    LapCache, PersistentCache, PersistentCacheKind, PersistentCacheOptions,
};
use strata::stats::TierStats;
use strata::storage::LocalFs;

use crate::util::{scratch_dir, split_flag};

const SUPER: usize = 4096;
const UNIT: usize = 64;
const AREA: usize = 8 * 512;
const HEADER: usize = 32;

fn opts() -> PersistentCacheOptions {
    PersistentCacheOptions {
        kind: PersistentCacheKind::Lap,
        capacity: AREA as u64,
        bucket_size: 512,
        unit_size: UNIT as u64,
        file_size: 0,
    }
}

fn open(dir: &Path) -> LapCache {
    LapCache::open(
        dir,
        &LocalFs,
        &opts(),
        &|t| t % 3 != 0,
        Arc::new(TierStats::default()),
    )
    .expect("open the scratch LAP cache")
}

/// The scratch directory and the superblock a fresh cache of this geometry writes.
fn scratch() -> &'static (tempfile::TempDir, PathBuf, Vec<u8>) {
    static S: OnceLock<(tempfile::TempDir, PathBuf, Vec<u8>)> = OnceLock::new();
    S.get_or_init(|| {
        let d = scratch_dir();
        let p = d.path().join("lap");
        drop(open(&p));
        let file = std::fs::read(p.join("data.cache")).expect("read the fresh cache file");
        (d, p, file[..SUPER].to_vec())
    })
}

fn entry_crc(h: &[u8], data: &[u8]) -> u32 {
    strata::wal::mask_crc(crc32c::crc32c_append(crc32c::crc32c(&h[4..24]), data))
}

fn u32_at(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(d[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(d[o..o + 8].try_into().expect("8 bytes"))
}

/// Entry headers at unit boundaries whose magic matches: (unit position, table, offset, len).
fn headers(area: &[u8]) -> Vec<(usize, u64, u64, usize)> {
    (0..AREA / UNIT)
        .map(|u| u * UNIT)
        .filter(|&p| &area[p..p + 4] == b"LAPS")
        .map(|p| {
            let (len, table, off) = (u32_at(area, p + 4), u64_at(area, p + 8), u64_at(area, p + 16));
            (p, table, off, len as usize)
        })
        .collect()
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut area = rest.to_vec();
    area.resize(AREA, 0);
    if flag & 1 != 0 {
        for (p, _, _, len) in headers(&area) {
            // Only entries that stay inside their bucket can be resealed.
            if p % 512 + HEADER + len <= 512 {
                let crc = entry_crc(&area[p..p + HEADER], &area[p + HEADER..p + HEADER + len]);
                area[p + 24..p + 28].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let (_, dir, sb) = scratch();
    std::fs::write(dir.join("data.cache"), [&sb[..], &area[..]].concat())
        .expect("write the scratch cache file");
    let cache = open(dir);
    assert!(cache.usage() <= cache.capacity(), "usage above capacity");
    let found = headers(&area);
    for &(_, table, off, len) in found.iter().take(16) {
        if let Some(b) = cache.get(table, off, len) {
            // The file may name one key several times; the entry must be one of them.
            let stored = found.iter().any(|&(q, t, o, l)| {
                (t, o, l) == (table, off, len)
                    && area.get(q + HEADER..q + HEADER + l) == Some(&b[..])
            });
            assert!(stored, "recovered entry is not an entry of the file");
        }
    }
    // Keys no header in the file names (an existing key is never overwritten: a table's block
    // at an offset is immutable).
    let blocks: Vec<(u64, u64, Vec<u8>)> = (0..64u64)
        .map(|i| (1 + i % 5, i << 12, vec![i as u8 ^ 0x5a; 40 + 50 * (i as usize % 4)]))
        .filter(|(t, o, _)| !found.iter().any(|h| (h.1, h.2) == (*t, *o)))
        .take(4)
        .collect();
    for (t, o, b) in &blocks {
        cache.insert(*t, *o, b);
    }
    assert!(cache.usage() <= cache.capacity(), "usage above capacity after inserts");
    // The last insert was just made; nothing can have evicted it.
    let (t, o, b) = blocks.last().expect("at most 16 keys are excluded");
    assert_eq!(cache.get(*t, *o, b.len()).as_deref(), Some(&b[..]), "fresh insert lost");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let d = scratch_dir();
    let p = d.path().join("lap");
    let cache = open(&p);
    for i in 0..12u64 {
        cache.insert(1 + i % 5, i << 10, &vec![i as u8; 20 + 30 * (i as usize % 4)]);
    }
    drop(cache);
    let file = std::fs::read(p.join("data.cache")).expect("read the seed cache");
    vec![
        [&[0u8][..], &file[SUPER..]].concat(),
        [&[1u8][..], &file[SUPER..]].concat(),
    ]
}
