//! Target `manifest`: a whole manifest file, as recovery reads it: log framing
//! (`LogReader`, tolerating a torn tail) and a `VersionEdit` per record.
//!
//! Flag byte: bit 0 = reseal the fragment checksums first. Properties: reading terminates and
//! every decoded edit round-trips through its encoding.

use strata::version::VersionEdit;

use crate::targets::wal::read_all;
use crate::util::{real_db, reseal_log, split_flag};

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    if flag & 1 != 0 {
        reseal_log(&mut d);
    }
    if let (Ok(recs), _) = read_all(&d, true) {
        for r in recs {
            if let Ok(e) = VersionEdit::decode(&r) {
                let back = VersionEdit::decode(&e.encode()).expect("an encoded edit decodes");
                assert_eq!(back, e, "edit round trip");
            }
        }
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for m in &real_db().manifests {
        for flag in [0u8, 1] {
            let mut s = vec![flag];
            s.extend_from_slice(m);
            out.push(s);
        }
    }
    out
}
