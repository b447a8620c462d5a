//! Target `meta_sidecar`: the MetaCache sidecar decoder (`MetaCache::get`: a 56-byte header,
//! then a capacity table's metadata tail), read through the local file system.
//!
//! Input: flag byte (bit 0: reseal the header and tail checksums), the table size as 8
//! little-endian bytes, then the sidecar file. Properties: a sidecar that is accepted returns
//! exactly its tail, ending at the table size, and the real encoder (`insert`) writes the same
//! bytes back (apart from the reserved header word the reader ignores).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use strata::cache::persistent::MetaCache;
use strata::stats::TierStats;
use strata::storage::LocalFs;

use crate::util::split_flag;

const HEADER: usize = 56;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let d = crate::util::scratch_dir();
        let p = d.path().to_path_buf();
        (d, p)
    })
    .1
}

fn open(dir: &std::path::Path) -> MetaCache {
    MetaCache::open(
        dir,
        Arc::new(LocalFs),
        &HashSet::from([1u64]),
        Arc::new(TierStats::default()),
    )
    .expect("open the scratch sidecar directory")
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let Some((size, sidecar)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let table_size = u64::from_le_bytes(*size);
    let mut d = sidecar.to_vec();
    if flag & 1 != 0 && d.len() >= HEADER {
        let tail = strata::wal::mask_crc(crc32c::crc32c(&d[HEADER..]));
        d[44..48].copy_from_slice(&tail.to_le_bytes());
        let head = strata::wal::mask_crc(crc32c::crc32c(&d[..48]));
        d[48..52].copy_from_slice(&head.to_le_bytes());
    }
    let dir = scratch();
    std::fs::create_dir_all(dir.join("meta")).expect("scratch meta directory");
    std::fs::write(dir.join("meta/000001.meta"), &d).expect("write the scratch sidecar");
    let cache = open(dir);
    let Some((off, tail)) = cache.get(1, table_size) else {
        return;
    };
    assert_eq!(&tail[..], &d[HEADER..], "the tail is the sidecar's body");
    assert_eq!(off + tail.len() as u64, table_size, "the tail ends at the table's end");
    cache
        .insert(1, table_size, off, &tail, None)
        .expect("re-insert the sidecar");
    let again = std::fs::read(dir.join("meta/000001.meta")).expect("read the sidecar back");
    assert_eq!(again.len(), d.len());
    assert_eq!(&again[..52], &d[..52], "sidecar header round trip");
    assert_eq!(&again[HEADER..], &d[HEADER..]);
}

pub fn seeds() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let cache = open(dir.path());
    let tail: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    cache.insert(1, 10_300, 10_000, &tail, None).expect("seed sidecar");
    let bytes = std::fs::read(dir.path().join("meta/000001.meta")).expect("read the seed");
    vec![[&[1u8][..], &10_300u64.to_le_bytes(), &bytes].concat()]
}
