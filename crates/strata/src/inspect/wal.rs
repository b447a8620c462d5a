//! Reads a write-ahead log (`<n>.log`) as the write batches it holds.

use std::path::{Path, PathBuf};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::storage::{LocalFs, Storage};
use crate::types::SeqNo;
use crate::wal::{LogReader, ReadOutcome};

/// One logged write batch.
pub struct WalRecord {
    /// The sequence number of the batch's first operation.
    pub seq: SeqNo,
    /// The batch's operations.
    pub batch: WriteBatch,
}

/// A WAL's decoded contents.
pub struct WalDump {
    /// The WAL's file name (e.g. `000012.log`).
    pub name: String,
    /// The write batches logged, in log order (key-list records not included).
    pub records: Vec<WalRecord>,
    /// `(offset, bytes dropped)` when the log ended in a torn tail (only tolerated when asked).
    pub torn_tail: Option<(u64, u64)>,
    /// Extended-WAL key lists logged in this file: `(table, entries, of which inline)`.
    pub key_lists: Vec<(u64, usize, usize)>,
    /// The log this one links to (its log-link record: a memtable switch sealed it).
    pub next_log: Option<u64>,
}

/// Reads one WAL. With `tolerate_tail`, a damaged suffix with nothing valid after it is dropped
/// as recovery drops it (the log being written may end mid-record); otherwise it is an error.
pub fn read_wal(path: &Path, tolerate_tail: bool) -> Result<WalDump> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let data = LocalFs.read_all(path)?;
    let mut reader = LogReader::new(&data, name.clone(), tolerate_tail);
    let mut records = Vec::new();
    let mut key_lists = Vec::new();
    let mut next_log = None;
    while let Some(rec) = reader.next_record()? {
        if crate::wal::keylist::is_key_list(&rec) {
            for l in crate::wal::keylist::decode(&rec)
                .map_err(|e| Error::corruption(format!("{name}: {e}")))?
            {
                let inline = l
                    .entries
                    .iter()
                    .filter(|e| matches!(e, crate::wal::keylist::KeyListEntry::Inline(_)))
                    .count();
                key_lists.push((l.table, l.entries.len(), inline));
            }
            continue;
        }
        if crate::wal::link::is_log_link(&rec) {
            next_log = Some(
                crate::wal::link::decode(&rec)
                    .map_err(|e| Error::corruption(format!("{name}: {e}")))?,
            );
            continue;
        }
        let (seq, batch) = WriteBatch::decode(&rec)
            .map_err(|e| Error::corruption(format!("{name}: record {}: {e}", records.len())))?;
        records.push(WalRecord { seq, batch });
    }
    let torn_tail = match reader.outcome() {
        ReadOutcome::Clean => None,
        ReadOutcome::TornTail { offset, dropped } => Some((*offset, *dropped)),
    };
    Ok(WalDump {
        name,
        records,
        torn_tail,
        key_lists,
        next_log,
    })
}

/// Whether log `number` may end in a torn tail without that being damage, as recovery sees it:
/// the newest log (it may be mid-write), and any log below the manifest's live log number
/// (`live`), which recovery replayed already, dropping its tail — the extended WAL keeps such
/// logs in the log location after a crash and a reopen.
pub fn torn_tail_allowed(number: u64, newest: Option<u64>, live: Option<u64>) -> bool {
    newest == Some(number) || live.is_some_and(|l| number < l)
}

/// Every `<n>.log` file in `dir` and, for a database with a `wal_location` directory, in
/// `log_dir` too (the database directory keeps the logs written before it had one), oldest
/// first.
pub fn list_wals(dir: &Path, log_dir: Option<&Path>) -> Result<Vec<(u64, PathBuf)>> {
    let mut out: Vec<(u64, PathBuf)> = Vec::new();
    for d in std::iter::once(dir).chain(log_dir.filter(|l| *l != dir)) {
        out.extend(
            LocalFs
                .list(d)?
                .into_iter()
                .filter_map(|n| Some((super::parse_numbered(&n, ".log")?, d.join(n)))),
        );
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::torn_tail_allowed;

    #[test]
    fn torn_tails_are_damage_only_in_logs_recovery_has_not_replayed() {
        // (log, newest, manifest's live log number) -> allowed
        let cases = [
            (9, Some(9), Some(7), true),  // the newest: may be mid-write
            (8, Some(9), Some(7), false), // live, not the newest: damage
            (7, Some(9), Some(7), false), // the live log itself: damage
            (5, Some(9), Some(7), true),  // replayed already (kept by the extended WAL)
            (5, Some(9), None, false),    // no manifest: only the newest
            (9, Some(9), None, true),
            (3, None, None, false),
        ];
        for (n, newest, live, want) in cases {
            assert_eq!(
                torn_tail_allowed(n, newest, live),
                want,
                "{n} {newest:?} {live:?}"
            );
        }
    }
}
