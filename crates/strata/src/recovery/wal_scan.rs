//! Reading every WAL file of a log location in parallel (recovery's "Read" and "Find" phases):
//! one reader per file keeps the file's write batches in one buffer and indexes their
//! operations densely by sequence number (a file's batches hold consecutive sequence numbers,
//! so the index is a vector, not a hash map), and collects the key lists logged beside them.
//!
//! Any file may end in a torn write: the extended WAL keeps files whose torn tail an earlier
//! open dropped, and whatever a dropped tail held that a table needs is caught later (a
//! missing operation or key list, a content checksum). Other damage is corruption. A table's
//! key list logged twice keeps the last one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::batch::{decode_ops, BatchOp};
use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::types::{SeqNo, ValueKind};
use crate::wal::keylist::{self, KeyList};
use crate::wal::{LogReader, ReadOutcome};

pub(super) struct WalScan {
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
pub(super) struct Op<'a> {
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
    bytes: u64,
    first: Option<SeqNo>,
    /// Every batch payload of the file, back to back.
    buf: Vec<u8>,
    /// `ops[i]`: the operation with sequence number `first + i`.
    ops: Vec<Loc>,
    lists: Vec<KeyList>,
}

fn parse_log_number(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".log")?;
    (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

fn scan_file(storage: &dyn Storage, path: &Path, tolerate_torn: bool) -> Result<FileScan> {
    let data = storage.read_all(path)?;
    let name = path.display().to_string();
    let mut reader = LogReader::new(&data, name.clone(), tolerate_torn);
    let mut out = FileScan {
        bytes: data.len() as u64,
        first: None,
        buf: Vec::new(),
        ops: Vec::new(),
        lists: Vec::new(),
    };
    let too_big = || Error::corruption(format!("{name}: WAL file too large to index"));
    while let Some(rec) = reader.next_record()? {
        if keylist::is_key_list(&rec) {
            out.lists.extend(keylist::decode(&rec)?);
            continue;
        }
        let base = out.buf.len();
        out.buf.extend_from_slice(&rec);
        let stored = &out.buf[base..];
        let (seq, count, ops) = decode_ops(stored)?;
        let first = *out.first.get_or_insert(seq);
        let at = seq
            .checked_sub(first)
            // No gap inside a log is longer than the log (one writer assigns consecutive
            // sequence numbers): a longer one is damage, not a reason to allocate.
            .filter(|d| *d as usize >= out.ops.len() && *d - out.ops.len() as u64 <= out.bytes)
            .ok_or_else(|| {
                Error::corruption(format!(
                    "{name}: write batch with sequence {seq} after later ones"
                ))
            })? as usize;
        out.ops.resize(at, NONE);
        let off = |s: &[u8]| -> Result<u32> {
            u32::try_from(s.as_ptr() as usize - out.buf.as_ptr() as usize).map_err(|_| too_big())
        };
        let mut n = 0u32;
        let mut locs = Vec::with_capacity(count as usize);
        for op in ops {
            n += 1;
            locs.push(
                match op.map_err(|e| Error::corruption(format!("{name}: {e}")))? {
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
                    BatchOp::DeleteRange(..) => NONE,
                },
            );
        }
        if n != count {
            return Err(Error::corruption(format!(
                "{name}: write batch header counts {count} records but holds {n}"
            )));
        }
        out.ops.extend(locs);
    }
    if let ReadOutcome::TornTail { offset, dropped } = reader.outcome() {
        tracing::warn!(wal = %name, offset, dropped, "dropped torn WAL tail");
    }
    Ok(out)
}

/// Reads and indexes every `*.log` numbered `from` or above in `log_dir` with `threads`
/// readers (files below `from` hold nothing needed, and may be partly deleted).
pub(super) fn scan(
    log_dir: &Path,
    storage: &dyn Storage,
    threads: usize,
    from: u64,
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
    std::thread::scope(|s| {
        for _ in 0..threads.min(numbers.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(n) = numbers.get(i) else { break };
                let r = scan_file(storage, &path(*n), true);
                *slots[i].lock() = Some(r);
            });
        }
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
        out.bytes += f.bytes;
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
    /// The put or delete with sequence number `seq`, if a WAL file holds one.
    pub fn op(&self, seq: SeqNo) -> Option<Op<'_>> {
        let i = self
            .files
            .partition_point(|f| f.first.is_some_and(|s| s <= seq));
        let f = self.files.get(i.checked_sub(1)?)?;
        let loc = f.ops.get((seq - f.first?) as usize)?;
        let kind = ValueKind::from_u8(loc.kind)?;
        let at = |o: u32, n: u32| f.buf.get(o as usize..(o as usize + n as usize));
        Some(Op {
            kind,
            key: at(loc.key, loc.key_len)?,
            value: at(loc.value, loc.value_len)?,
        })
    }
}
