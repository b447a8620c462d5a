//! Target `manifest`: recovery of the version state, `VersionSet::recover`, over a `CURRENT`
//! file and the manifest it names (log framing, a `VersionEdit` per record, each applied to the
//! version), written to a scratch directory on tmpfs.
//!
//! Input: flag byte (bit 0: reseal the manifest's fragment checksums), the length of `CURRENT`
//! (one byte), `CURRENT`'s bytes, then the manifest. Properties: recovery never panics; every
//! record that decodes round-trips through its encoding; a recovered state hands out file
//! numbers above every table id and above the manifest's own number.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use strata::storage::LocalFs;
use strata::version::{VersionEdit, VersionSet};

use crate::targets::wal::read_all;
use crate::util::{real_db, reseal_log, scratch_dir, split_flag, write_log};

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let d = scratch_dir();
        let p = d.path().join("db");
        (d, p)
    })
    .1
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let (n, rest) = split_flag(rest);
    let Some((current, manifest)) = rest.split_at_checked(n as usize) else {
        return;
    };
    let mut m = manifest.to_vec();
    if flag & 1 != 0 {
        reseal_log(&mut m);
    }
    if let (Ok(recs), _) = read_all(&m, true) {
        for r in recs {
            if let Ok(e) = VersionEdit::decode(&r) {
                let back = VersionEdit::decode(&e.encode()).expect("an encoded edit decodes");
                assert_eq!(back, e, "edit round trip");
            }
        }
    }
    let dir = scratch();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("scratch db directory");
    std::fs::write(dir.join("CURRENT"), current).expect("write CURRENT");
    let name = std::str::from_utf8(current)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| s.starts_with("MANIFEST-") && !s.contains(['/', '\0', '\n']));
    if let Some(name) = name {
        std::fs::write(dir.join(name), &m).expect("write the manifest");
    }
    let Ok(vs) = VersionSet::recover(dir, Arc::new(LocalFs), 7, 64 << 20) else {
        return;
    };
    let next = vs.new_file_number();
    let v = vs.current();
    assert!(
        v.all_files()
            .chain(vs.families().all_files())
            .all(|f| f.id < next),
        "next file number not above every table"
    );
    assert!(next > vs.manifest_number(), "next file number not above the manifest's");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, m) in real_db().manifests.iter().enumerate() {
        let current = format!("MANIFEST-{:06}\n", i + 1);
        for flag in [0u8, 1] {
            out.push([&[flag, current.len() as u8][..], current.as_bytes(), m].concat());
        }
    }
    // A v3 manifest: a snapshot creating two families, then a record dropping one.
    let snapshot = VersionEdit {
        families_dropped: Vec::new(),
        family_edits: vec![(2, VersionEdit { num_levels: Some(3), ..Default::default() })],
        ..VersionEdit::decode(&crate::targets::version_edit::family_record()).expect("seed decodes")
    };
    let drop = VersionEdit {
        families_dropped: vec![2],
        ..Default::default()
    };
    let m = write_log(&[snapshot.encode(), drop.encode()]);
    let current = "MANIFEST-000001\n";
    out.push([&[0, current.len() as u8][..], current.as_bytes(), &m].concat());
    out
}
