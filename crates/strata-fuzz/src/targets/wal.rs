//! Target `wal`: the write-ahead log reader (`strata::wal::LogReader`) over arbitrary bytes.
//!
//! Flag byte: bit 0 = read as the last log (a damaged tail may be dropped), bit 1 = reseal the
//! fragment checksums first. Properties: reading terminates; the records' total size is at
//! most the input size; a strict read that succeeds agrees with a tolerant one (which then
//! reports `Clean`); the records written again with the real writer read back identically.

use strata::wal::{LogReader, ReadOutcome};

use crate::util::{log_records, real_db, reseal_log, split_flag, write_log};

/// Reads every record; `Err` on corruption.
pub fn read_all(data: &[u8], tolerate_tail: bool) -> (strata::Result<Vec<Vec<u8>>>, ReadOutcome) {
    let mut r = LogReader::new(data, "fuzz", tolerate_tail);
    let mut out = Vec::new();
    loop {
        // Every record consumes at least one header: more records than bytes is a loop.
        assert!(out.len() <= data.len(), "log reader does not terminate");
        match r.next_record() {
            Ok(Some(rec)) => out.push(rec.into_owned()),
            Ok(None) => return (Ok(out), r.outcome().clone()),
            Err(e) => {
                assert!(e.is_corruption(), "log damage must be corruption: {e}");
                return (Err(e), r.outcome().clone());
            }
        }
    }
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    if flag & 2 != 0 {
        reseal_log(&mut d);
    }
    let tolerant = read_all(&d, true);
    let strict = read_all(&d, false);
    if let Ok(recs) = &tolerant.0 {
        let total: usize = recs.iter().map(Vec::len).sum();
        assert!(total <= d.len(), "records larger than the log");
        if tolerant.1 == ReadOutcome::Clean {
            let again = write_log(recs);
            let (back, outcome) = read_all(&again, false);
            assert_eq!(back.ok().as_ref(), Some(recs), "rewritten log reads differently");
            assert_eq!(outcome, ReadOutcome::Clean);
        }
    }
    if let Ok(recs) = &strict.0 {
        assert_eq!(strict.1, ReadOutcome::Clean);
        assert_eq!(tolerant.0.as_ref().ok(), Some(recs), "strict and tolerant reads differ");
        assert_eq!(tolerant.1, ReadOutcome::Clean);
    }
    if flag & 1 != 0 {
        // The engine's use: a damaged tail of the last log may be dropped, never anything else.
        let _ = log_records(&d);
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for log in &real_db().logs {
        for flag in [0u8, 1, 2, 3] {
            let mut s = vec![flag];
            s.extend_from_slice(log);
            out.push(s);
        }
    }
    // Records spanning blocks (First/Middle/Last fragments) and empty records.
    let recs: Vec<Vec<u8>> = vec![vec![], vec![7; 40_000], b"x".to_vec(), vec![1; 32 * 1024 - 14]];
    let mut s = vec![2u8];
    s.extend_from_slice(&write_log(&recs));
    out.push(s);
    out
}
