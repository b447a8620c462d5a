//! Reading every WAL file of a log location in parallel (recovery's "Read" phase): write
//! batches with their sequence numbers, and the key lists logged beside them.
//!
//! Only the newest file holding anything may end in a torn write (as at a normal open); any
//! other damage is corruption. A table's key list logged twice (a retried install) keeps the
//! last one.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::batch::{BatchOp, WriteBatch};
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
    /// Every write batch, in log order, with its first sequence number.
    pub batches: Vec<(SeqNo, WriteBatch)>,
    pub lists: HashMap<u64, KeyList>,
}

/// One WAL operation, found by sequence number.
pub(super) struct Op<'a> {
    pub kind: ValueKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

struct FileScan {
    bytes: u64,
    first: Option<SeqNo>,
    batches: Vec<(SeqNo, WriteBatch)>,
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
        batches: Vec::new(),
        lists: Vec::new(),
    };
    while let Some(rec) = reader.next_record()? {
        if keylist::is_key_list(&rec) {
            out.lists.extend(keylist::decode(&rec)?);
            continue;
        }
        let (seq, batch) =
            WriteBatch::decode(&rec).map_err(|e| Error::corruption(format!("{name}: {e}")))?;
        out.first.get_or_insert(seq);
        out.batches.push((seq, batch));
    }
    if let ReadOutcome::TornTail { offset, dropped } = reader.outcome() {
        tracing::warn!(wal = %name, offset, dropped, "dropped torn WAL tail");
    }
    Ok(out)
}

/// Reads every `*.log` in `log_dir` with `threads` readers.
pub(super) fn scan(log_dir: &Path, storage: &dyn Storage, threads: usize) -> Result<WalScan> {
    let mut numbers: Vec<u64> = storage
        .list(log_dir)?
        .iter()
        .filter_map(|n| parse_log_number(n))
        .collect();
    numbers.sort_unstable();
    let path = |n: u64| log_dir.join(format!("{n:06}.log"));
    let mut last_nonempty = None;
    for (i, n) in numbers.iter().enumerate() {
        if storage.open(&path(*n))?.size() > 0 {
            last_nonempty = Some(i);
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<FileScan>>> = (0..numbers.len()).map(|_| None).collect();
    let slots: Vec<parking_lot::Mutex<Option<Result<FileScan>>>> = (0..numbers.len())
        .map(|_| parking_lot::Mutex::new(None))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(numbers.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(n) = numbers.get(i) else { break };
                let r = scan_file(storage, &path(*n), Some(i) >= last_nonempty);
                *slots[i].lock() = Some(r);
            });
        }
    });
    for (i, s) in slots.into_iter().enumerate() {
        results[i] = s.into_inner();
    }
    let mut out = WalScan {
        numbers: numbers.clone(),
        bytes: 0,
        first_seqs: Vec::with_capacity(numbers.len()),
        batches: Vec::new(),
        lists: HashMap::new(),
    };
    for r in results {
        let f = r.ok_or_else(|| Error::invalid("a WAL reader did not finish"))??;
        out.bytes += f.bytes;
        out.first_seqs.push(f.first);
        out.batches.extend(f.batches);
        for l in f.lists {
            out.lists.insert(l.table, l);
        }
    }
    Ok(out)
}

impl WalScan {
    /// The operations with the sequence numbers in `needed` (the "Find" phase's index). Range
    /// deletions are not point entries and are left out.
    pub fn index(&self, needed: &HashSet<SeqNo>) -> HashMap<SeqNo, Op<'_>> {
        let mut idx = HashMap::with_capacity(needed.len());
        for (first, batch) in &self.batches {
            for (j, op) in batch.iter().enumerate() {
                let seq = first + j as u64;
                if !needed.contains(&seq) {
                    continue;
                }
                let op = match op {
                    BatchOp::Put(key, value) => Op {
                        kind: ValueKind::Put,
                        key,
                        value,
                    },
                    BatchOp::Delete(key) => Op {
                        kind: ValueKind::Delete,
                        key,
                        value: &[],
                    },
                    BatchOp::DeleteRange(..) => continue,
                };
                idx.insert(seq, op);
            }
        }
        idx
    }
}
