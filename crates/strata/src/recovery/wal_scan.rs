//! Reading every WAL file of a log location in parallel (recovery's "Read" and "Find" phases):
//! readers fetch the files while indexers index the ones fetched. Each file's bytes are kept
//! whole (the batches are indexed where they lie, never copied, except the few that span log
//! blocks); its operations are indexed densely by sequence number (a file's batches hold
//! consecutive sequence numbers, so the index is a vector, not a hash map), and the key lists
//! logged beside them are checked and those of the tables the caller needs (the lost ones)
//! decoded: a log holds the lists of every table ever installed, most of them compacted away
//! since.
//!
//! Any file may end in a torn write: the extended WAL keeps files whose torn tail an earlier
//! open dropped, and whatever a dropped tail held that a table needs is caught later (a
//! missing operation or key list, a content checksum). Other damage is corruption. A table's
//! key list logged twice keeps the last one.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::batch::{decode_ops, BatchOp};
use crate::error::{Error, Result};
use crate::storage::{Storage, WholeFile};
use crate::types::{SeqNo, ValueKind};
use crate::wal::keylist::{self, KeyList};
use crate::wal::{LogReader, ReadOutcome};

pub(crate) struct WalScan {
    /// WAL file numbers, oldest first.
    pub numbers: Vec<u64>,
    pub bytes: u64,
    /// Each file's first write-batch sequence number.
    pub first_seqs: Vec<Option<SeqNo>>,
    /// Files holding batches, by ascending first sequence number.
    files: Vec<FileScan>,
    pub lists: HashMap<u64, KeyList>,
}

/// One WAL operation, found by sequence number.
pub(crate) struct Op<'a> {
    pub kind: ValueKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Where an operation's key and value lie in its file's buffer (`kind` 0xff: no point
/// operation has this sequence number — a range deletion, or a gap).
#[derive(Clone, Copy)]
struct Loc {
    key: u32,
    key_len: u32,
    value: u32,
    value_len: u32,
    kind: u8,
}

const NONE: Loc = Loc {
    key: 0,
    key_len: 0,
    value: 0,
    value_len: 0,
    kind: 0xff,
};

struct FileScan {
    first: Option<SeqNo>,
    /// The file's bytes (mapped, for a local file); most batches are indexed where they lie.
    data: WholeFile,
    /// Batches that spanned log blocks, reassembled back to back. A [`Loc`] offset at or past
    /// `data.len()` points here (minus `data.len()`).
    spill: Vec<u8>,
    /// `ops[i]`: the operation with sequence number `first + i`.
    ops: Vec<Loc>,
    lists: Vec<KeyList>,
}

impl FileScan {
    fn bytes_at(&self, off: u32, len: u32) -> Option<&[u8]> {
        let (off, len) = (off as usize, len as usize);
        match off.checked_sub(self.data.len()) {
            None => self.data.get(off..off.checked_add(len)?),
            Some(o) => self.spill.get(o..o.checked_add(len)?),
        }
    }
}

fn parse_log_number(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".log")?;
    (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

/// Indexes the WAL file `data` read from `path`.
fn scan_file(
    data: WholeFile,
    path: &Path,
    tolerate_torn: bool,
    keep: &(dyn Fn(u64) -> bool + Sync),
) -> Result<FileScan> {
    let name = path.display().to_string();
    let too_big = || Error::corruption(format!("{name}: WAL file too large to index"));
    // Offsets are u32 (a spilled batch's too: `off` checks those).
    if data.len() > u32::MAX as usize {
        return Err(too_big());
    }
    let mut ops: Vec<Loc> = Vec::new();
    let mut spill: Vec<u8> = Vec::new();
    let mut lists = Vec::new();
    let mut first: Option<SeqNo> = None;
    let mut reader = LogReader::new(&data, name.clone(), tolerate_torn);
    while let Some(rec) = reader.next_record()? {
        if keylist::is_key_list(&rec) {
            lists.extend(keylist::decode_tables(&rec, keep)?);
            continue;
        }
        if crate::wal::link::is_log_link(&rec) {
            continue;
        }
        // Where the batch's bytes will stay: in the file's buffer, or copied to the spill.
        let (stored, origin, shift): (&[u8], usize, usize) = match &rec {
            Cow::Borrowed(r) => (r, data.as_ptr() as usize, 0),
            Cow::Owned(r) => {
                let at = spill.len();
                spill.extend_from_slice(r);
                (&spill[at..], spill.as_ptr() as usize, data.len())
            }
        };
        let (seq, count, batch) = decode_ops(stored)?;
        let first = *first.get_or_insert(seq);
        let at = seq
            .checked_sub(first)
            // No gap inside a log is longer than the log (one writer assigns consecutive
            // sequence numbers): a longer one is damage, not a reason to allocate.
            .filter(|d| *d as usize >= ops.len() && *d - ops.len() as u64 <= data.len() as u64)
            .ok_or_else(|| {
                Error::corruption(format!(
                    "{name}: write batch with sequence {seq} after later ones"
                ))
            })? as usize;
        ops.resize(at, NONE);
        let off = |s: &[u8]| -> Result<u32> {
            u32::try_from(s.as_ptr() as usize - origin + shift).map_err(|_| too_big())
        };
        let mut n = 0u32;
        for op in batch {
            n += 1;
            let (family, op) = op.map_err(|e| Error::corruption(format!("{name}: {e}")))?;
            if family != crate::version::DEFAULT_FAMILY {
                return Err(Error::invalid(format!(
                    "{name}: a record of column family {family}: the extended WAL does not \
                     support column families yet"
                )));
            }
            ops.push(match op {
                BatchOp::Put(k, v) => Loc {
                    key: off(k)?,
                    key_len: k.len() as u32,
                    value: off(v)?,
                    value_len: v.len() as u32,
                    kind: ValueKind::Put as u8,
                },
                BatchOp::Delete(k) => Loc {
                    key: off(k)?,
                    key_len: k.len() as u32,
                    value: 0,
                    value_len: 0,
                    kind: ValueKind::Delete as u8,
                },
                BatchOp::Merge(k, v) => Loc {
                    key: off(k)?,
                    key_len: k.len() as u32,
                    value: off(v)?,
                    value_len: v.len() as u32,
                    kind: ValueKind::Merge as u8,
                },
                BatchOp::DeleteRange(..) => NONE,
            });
        }
        if n != count {
            return Err(Error::corruption(format!(
                "{name}: write batch header counts {count} records but holds {n}"
            )));
        }
    }
    if let ReadOutcome::TornTail { offset, dropped } = reader.outcome() {
        tracing::warn!(wal = %name, offset, dropped, "dropped torn WAL tail");
    }
    drop(reader);
    Ok(FileScan {
        first,
        data,
        spill,
        ops,
        lists,
    })
}

/// Reads and indexes every `*.log` numbered `from` or above in `log_dir`, with `threads`
/// fetching files and `threads` indexing them (files below `from` hold nothing needed, and may
/// be partly deleted). Collects the key lists of the tables `keep` accepts.
pub(crate) fn scan(
    log_dir: &Path,
    storage: &dyn Storage,
    threads: usize,
    from: u64,
    keep: &(dyn Fn(u64) -> bool + Sync),
) -> Result<WalScan> {
    let mut numbers: Vec<u64> = storage
        .list(log_dir)?
        .iter()
        .filter_map(|n| parse_log_number(n))
        .filter(|n| *n >= from)
        .collect();
    numbers.sort_unstable();
    let path = |n: u64| log_dir.join(format!("{n:06}.log"));
    let next = AtomicUsize::new(0);
    let slots: Vec<parking_lot::Mutex<Option<Result<FileScan>>>> = (0..numbers.len())
        .map(|_| parking_lot::Mutex::new(None))
        .collect();
    // Fetching a file overlaps indexing others: from an object store a file is a listing and
    // ranged GETs, each a request's latency, which indexers would otherwise wait out in turn.
    // Readers fetch files in order, ahead of the indexers by at most the channel's `workers`
    // files plus one a reader holds waiting to send.
    let workers = threads.min(numbers.len()).max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Result<WholeFile>)>(workers);
    // Shared by the indexers only: if they all stop (a panic), the receiver goes with them and
    // the readers' sends fail instead of blocking for ever.
    let rx = std::sync::Arc::new(parking_lot::Mutex::new(rx));
    let (next, numbers_ref, path_ref, slots_ref) = (&next, &numbers, &path, &slots);
    std::thread::scope(|s| {
        for _ in 0..workers {
            let tx = tx.clone();
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(n) = numbers_ref.get(i) else { break };
                if tx.send((i, storage.read_whole(&path_ref(*n)))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for _ in 0..workers {
            let rx = rx.clone();
            s.spawn(move || loop {
                let Ok((i, data)) = rx.lock().recv() else {
                    break;
                };
                let p = path_ref(numbers_ref[i]);
                *slots_ref[i].lock() = Some(data.and_then(|d| scan_file(d, &p, true, keep)));
            });
        }
        drop(rx);
    });
    let mut out = WalScan {
        numbers: numbers.clone(),
        bytes: 0,
        first_seqs: Vec::with_capacity(numbers.len()),
        files: Vec::new(),
        lists: HashMap::new(),
    };
    for s in slots {
        let f = s
            .into_inner()
            .ok_or_else(|| Error::invalid("a WAL reader did not finish"))??;
        out.bytes += f.data.len() as u64;
        out.first_seqs.push(f.first);
        let mut f = f;
        for l in std::mem::take(&mut f.lists) {
            out.lists.insert(l.table, l);
        }
        if f.first.is_some() {
            out.files.push(f);
        }
    }
    out.files.sort_by_key(|f| f.first);
    Ok(out)
}

impl WalScan {
    fn loc(&self, seq: SeqNo) -> Option<(&FileScan, &Loc)> {
        let (file, at) = self.position(seq)?;
        let f = &self.files[file];
        Some((f, &f.ops[at]))
    }

    /// The put or delete with sequence number `seq`, if a WAL file holds one.
    pub fn op(&self, seq: SeqNo) -> Option<Op<'_>> {
        let (f, loc) = self.loc(seq)?;
        f.op(loc)
    }

    /// How many files hold batches (numbered `0..files()` by ascending first sequence number).
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Where [`WalScan::op`] looks for sequence number `seq`: (file, index in the file), if a
    /// file's range covers it (a gap or a range deletion still has no operation there).
    pub fn position(&self, seq: SeqNo) -> Option<(usize, usize)> {
        let i = self
            .files
            .partition_point(|f| f.first.is_some_and(|s| s <= seq));
        let file = i.checked_sub(1)?;
        let at = (seq - self.files[file].first?) as usize;
        (at < self.files[file].ops.len()).then_some((file, at))
    }

    /// The first sequence number of file `file` (below [`WalScan::files`]) and how many it
    /// covers.
    pub fn file_span(&self, file: usize) -> (SeqNo, usize) {
        let f = &self.files[file];
        (f.first.unwrap_or(0), f.ops.len())
    }

    /// Operation `at` of file `file`, if it is a put or delete.
    pub fn op_at(&self, file: usize, at: usize) -> Option<Op<'_>> {
        let f = self.files.get(file)?;
        f.op(f.ops.get(at)?)
    }
}

impl FileScan {
    fn op(&self, loc: &Loc) -> Option<Op<'_>> {
        let kind = ValueKind::from_u8(loc.kind)?;
        Some(Op {
            kind,
            key: self.bytes_at(loc.key, loc.key_len)?,
            value: self.bytes_at(loc.value, loc.value_len)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::WriteBatch;
    use crate::storage::LocalFs;
    use crate::wal::keylist::{KeyList, KeyListEntry};
    use crate::wal::LogWriter;

    /// Every operation is found where it was written: batches inside one log block (indexed in
    /// place), batches spanning blocks (reassembled into the spill), sequence gaps, range
    /// deletions, and key lists between the batches.
    #[test]
    fn every_operation_is_found_in_place_or_spilled() {
        let dir = tempfile::tempdir().unwrap();
        type Written = Option<(ValueKind, Vec<u8>, Vec<u8>)>;
        let mut expect: Vec<(SeqNo, Written)> = Vec::new();
        let mut seq: SeqNo = 10;
        for n in [7u64, 8] {
            let mut w = LogWriter::new(
                LocalFs
                    .create(&dir.path().join(format!("{n:06}.log")))
                    .unwrap(),
                n,
            );
            for i in 0..300usize {
                let mut b = WriteBatch::new();
                let mut ops = Vec::new();
                for j in 0..1 + i % 3 {
                    let key = format!("k{n}-{i}-{j}").into_bytes();
                    // Every 50th value is larger than a log block (32 KiB).
                    let value =
                        vec![(i + j) as u8; if i % 50 == 7 { 70_000 } else { i * 13 % 900 }];
                    match (i + j) % 7 {
                        0 => {
                            b.delete(&key);
                            ops.push(Some((ValueKind::Delete, key, Vec::new())));
                        }
                        1 => {
                            b.delete_range(&key, b"z");
                            ops.push(None);
                        }
                        _ => {
                            b.put(&key, &value);
                            ops.push(Some((ValueKind::Put, key, value)));
                        }
                    }
                }
                w.add_record(b.encode_with_seq(seq)).unwrap();
                for op in ops {
                    expect.push((seq, op));
                    seq += 1;
                }
                if i % 40 == 0 {
                    let list = KeyList {
                        table: n * 1000 + i as u64,
                        entries: vec![KeyListEntry::Ref(seq - 1)],
                        tombstones: Vec::new(),
                        checksum: 0,
                    };
                    w.add_record(&keylist::encode(&[list])).unwrap();
                }
                // A gap: sequence numbers no operation in this log holds.
                if i % 97 == 0 {
                    seq += 5;
                }
            }
            w.sync().unwrap();
        }
        let scan = scan(dir.path(), &LocalFs, 2, 0, &|_| true).unwrap();
        assert_eq!(scan.numbers, vec![7, 8]);
        assert_eq!(scan.lists.len(), 16);
        assert!(
            scan.files.iter().all(|f| !f.spill.is_empty()),
            "no batch spanned blocks"
        );
        for (s, want) in &expect {
            let got = scan
                .op(*s)
                .map(|o| (o.kind, o.key.to_vec(), o.value.to_vec()));
            assert_eq!(&got, want, "sequence {s}");
        }
        let written: std::collections::HashSet<SeqNo> = expect.iter().map(|(s, _)| *s).collect();
        let gaps: Vec<SeqNo> = (0..seq + 2).filter(|s| !written.contains(s)).collect();
        assert!(gaps.len() > 10);
        for s in gaps {
            assert!(scan.op(s).is_none(), "sequence {s} was never written");
        }
    }

    /// Only the lists `keep` accepts are collected, and of a table listed in two files the
    /// later one.
    #[test]
    fn only_kept_tables_lists_are_collected_the_last_one_of_each() {
        let dir = tempfile::tempdir().unwrap();
        let list = |table: u64, seq: SeqNo| KeyList {
            table,
            entries: vec![KeyListEntry::Ref(seq)],
            tombstones: vec![crate::range_del::RangeTombstone::new("a", "b", seq)],
            checksum: table as u32,
        };
        for (n, lists) in [
            (1u64, vec![list(5, 1), list(6, 1)]),
            (2, vec![list(5, 2), list(7, 2)]),
        ] {
            let mut w = LogWriter::new(
                LocalFs
                    .create(&dir.path().join(format!("{n:06}.log")))
                    .unwrap(),
                n,
            );
            let mut b = WriteBatch::new();
            b.put(b"k", b"v");
            w.add_record(b.encode_with_seq(n)).unwrap();
            w.add_record(&keylist::encode(&lists)).unwrap();
            w.sync().unwrap();
        }
        let keep = [5u64, 7];
        let some = scan(dir.path(), &LocalFs, 2, 0, &|t| keep.contains(&t)).unwrap();
        let mut tables: Vec<u64> = some.lists.keys().copied().collect();
        tables.sort_unstable();
        assert_eq!(tables, keep);
        assert_eq!(some.lists[&5], list(5, 2));
        assert_eq!(some.lists[&7], list(7, 2));
        let all = scan(dir.path(), &LocalFs, 1, 0, &|_| true).unwrap();
        assert_eq!(all.lists.len(), 3);
        assert_eq!(all.lists[&6], list(6, 1));
    }

    /// More files than readers, one of them unreadable: the scan reports that file's error
    /// (readers and indexers hand files over without waiting on one that failed), and reads
    /// every file once the fault is gone.
    #[test]
    fn a_file_that_cannot_be_read_fails_the_scan() {
        use crate::storage::{FaultFs, FaultPlan};
        let dir = tempfile::tempdir().unwrap();
        let mut seq: SeqNo = 1;
        for n in 1..=9u64 {
            let mut w = LogWriter::new(
                LocalFs
                    .create(&dir.path().join(format!("{n:06}.log")))
                    .unwrap(),
                n,
            );
            for i in 0..20 {
                let mut b = WriteBatch::new();
                b.put(format!("k{n}-{i}").as_bytes(), b"v");
                w.add_record(b.encode_with_seq(seq)).unwrap();
                seq += 1;
            }
            w.sync().unwrap();
        }
        let fs = FaultFs::new(std::sync::Arc::new(LocalFs));
        for threads in [1, 2, 4] {
            fs.set_plan(FaultPlan {
                path_filter: Some("000005.log".into()),
                fail_reads: true,
                ..Default::default()
            });
            let e = scan(dir.path(), &fs, threads, 0, &|_| true)
                .err()
                .expect("file 5 fails");
            assert!(
                e.to_string().contains("000005.log"),
                "{threads} threads: {e}"
            );
            fs.heal();
            let ok = scan(dir.path(), &fs, threads, 0, &|_| true).unwrap();
            assert_eq!(ok.numbers, (1..=9).collect::<Vec<u64>>());
            assert!((1..seq).all(|s| ok.op(s).is_some()), "{threads} threads");
        }
    }
}
