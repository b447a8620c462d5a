//! Target `ralt_run`: `Run::load`, a whole RALT run file (header, then CRC-checked blocks of
//! access records) read through the local file system, then iterated and queried.
//!
//! Flag byte: bit 0 = reseal every block checksum first (walking the blocks by their length
//! headers). Properties: a loaded run iterates in strictly increasing key order over exactly
//! the records its blocks hold; queries never panic.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use strata::storage::LocalFs;
use strata::tier::hot::ralt::codec::{Record, Run, RunIter, RunWriter};

use crate::util::split_flag;

/// A per-process scratch directory for the run file.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let d = crate::util::scratch_dir();
        let p = d.path().join(format!("{:?}.ralt", std::thread::current().id()));
        (d, p)
    })
    .1
}

/// Recomputes the CRC of each block the length headers delimit.
fn reseal(d: &mut [u8]) {
    let mut pos = 5;
    while pos + 12 <= d.len() {
        let len = u32::from_le_bytes(d[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        let Some(end) = pos.checked_add(len + 12).filter(|&e| e <= d.len()) else {
            return;
        };
        let crc = strata::wal::mask_crc(crc32c::crc32c(&d[pos..end - 4]));
        d[end - 4..end].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    if flag & 1 != 0 {
        reseal(&mut d);
    }
    let path = scratch();
    std::fs::write(path, &d).expect("write the scratch run");
    let Ok(run) = Run::load(&LocalFs, path, 1) else {
        return;
    };
    let _ = run.may_be_hot(b"a");
    let _ = run.hot_bytes_in_range(b"", b"\xff\xff");
    let mut hot = Vec::new();
    let _ = run.hot_keys_in_range(b"", b"\xff\xff\xff", &mut hot);
    let mut it = RunIter::new(Arc::new(run));
    let mut prev: Option<Vec<u8>> = None;
    let mut n = 0;
    while let Ok(Some(r)) = it.next_record() {
        if let Some(p) = &prev {
            assert!(p < &r.key, "run keys out of order");
        }
        prev = Some(r.key);
        n += 1;
        assert!(n <= d.len() / 22 + 1, "more records than the file can hold");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("seed.ralt");
    let mut w = RunWriter::create(&LocalFs, &path, 1, 256).expect("create a seed run");
    for i in 0..60u32 {
        let r = Record {
            key: format!("key{i:04}").into_bytes(),
            value_size: i * 10,
            tick: i as u64,
            score: i as f64 / 7.0,
            counter: (i % 4) as u8,
            flags: (i % 8) as u8,
        };
        w.add(&r).expect("add a seed record");
    }
    w.finish(&LocalFs).expect("finish the seed run");
    let bytes = std::fs::read(&path).expect("read the seed run");
    vec![[&[1u8][..], &bytes].concat(), [&[0u8][..], &bytes].concat()]
}
