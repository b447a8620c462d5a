//! Target `ralt_state`: `StateFile::decode`, RALT's state file.
//!
//! Flag byte: bit 0 = reseal the trailing checksum. Properties: a decoded state has a valid
//! threshold and run ids below the next id, and round-trips through the real encoder.

use strata::tier::hot::ralt::codec::{Limits, RunEntry, StateFile, Threshold};

use crate::util::{reseal_trailing_crc, split_flag};

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    reseal_trailing_crc(flag, &mut d);
    let Ok(s) = StateFile::decode(&d) else {
        return;
    };
    assert!(s.runs.iter().all(|r| r.id < s.next_run_id));
    assert!((0.0..=1.0).contains(&s.hot_threshold.tie_keep));
    let back = StateFile::decode(&s.encode()).expect("an encoded state decodes");
    assert_eq!(back, s, "state round trip");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let s = StateFile {
        clock: 1 << 30,
        next_run_id: 10,
        threshold_tick: 5,
        hot_threshold: Threshold {
            score: 0.75,
            tie_keep: 0.5,
        },
        limits: Limits {
            hot_set: 1 << 20,
            physical: 1 << 22,
        },
        runs: vec![
            RunEntry {
                id: 9,
                size: 4096,
                records: 100,
            },
            RunEntry {
                id: 3,
                size: 1,
                records: 1,
            },
        ],
    };
    vec![[&[1u8][..], &s.encode()].concat()]
}
