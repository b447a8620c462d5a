//! The parent's side of the bargain: the event log the child writes, the expected state of every
//! key, and the verification after a kill.
//!
//! **Event log** (`DIR/events.log`, one line per event, each written with its own `write(2)` so
//! it reaches the OS before the child goes on): `O` (database opened), `I t seq ops` (thread `t`
//! is about to issue batch `seq`: `P<i>` put, `D<i>` delete, `M<i>` merge, `R<a>-<b>` range
//! delete of keys `a..b`), `A t seq` (acknowledged), `E t seq msg` (the write failed: outcome unknown, the
//! thread stops), `F lost|phantom msg` (a read during the run returned a value its history does
//! not allow), `F unreadable msg` (a read failed with `Corruption`, which no injected fault
//! causes), `W msg` (another engine error: flush, compaction or read; reported, not fatal), `C`
//! (closed cleanly), `S errors timeouts` (faults injected so far). The intent line is written before the write is issued, so nothing can reach
//! the database that the log does not name; an acknowledgement may be cut off by the kill, which
//! only leaves that batch in flight.
//!
//! **What "acknowledged" means.** The harness kills the process, not the machine: a write
//! acknowledged without `sync` was handed to the OS and must survive a SIGKILL too, so every
//! acknowledged write is checked whatever the sync setting. (Power loss is not simulated; it
//! would lose unsynced writes legitimately.)
//!
//! **After a kill**, every key must hold its last acknowledged version, except keys of an
//! in-flight batch (at most one per writer thread), which hold either all of that batch's new
//! versions or none of them. A key holding an older version (or nothing where a put was
//! acknowledged) is *lost*; a value never written to that key, a batch applied in part, or a key
//! outside the key space is a *phantom*.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};
use strata::{Db, ReadOptions};

use crate::families::{family_of, Families};
use crate::history::{Version, ViolationKind};
use crate::keys;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Put(u64),
    Delete(u64),
    /// A merge operand that leaves the key as a put of the same write would
    /// (`merge::NewestWrite`).
    Merge(u64),
    /// Keys `a..b`.
    DeleteRange(u64, u64),
}

/// Ops as written in the log: `P12,D3,M7,R20-30`.
pub fn format_ops(ops: &[Op]) -> String {
    let mut s = String::new();
    for (n, op) in ops.iter().enumerate() {
        if n > 0 {
            s.push(',');
        }
        let _ = match op {
            Op::Put(i) => write!(s, "P{i}"),
            Op::Delete(i) => write!(s, "D{i}"),
            Op::Merge(i) => write!(s, "M{i}"),
            Op::DeleteRange(a, b) => write!(s, "R{a}-{b}"),
        };
    }
    s
}

pub fn parse_ops(s: &str) -> anyhow::Result<Vec<Op>> {
    s.split(',')
        .map(|op| {
            let (kind, rest) = op.split_at(1.min(op.len()));
            Ok(match kind {
                "P" => Op::Put(rest.parse()?),
                "D" => Op::Delete(rest.parse()?),
                "M" => Op::Merge(rest.parse()?),
                "R" => {
                    let (a, b) = rest.split_once('-').context("range")?;
                    Op::DeleteRange(a.parse()?, b.parse()?)
                }
                _ => bail!("bad op {op:?}"),
            })
        })
        .collect()
}

/// The final effect of a batch on each key it touches (later ops override earlier ones).
pub fn batch_effects(ops: &[Op], seq: u64) -> Vec<(u64, Version)> {
    let mut m = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Put(i) | Op::Merge(i) => {
                m.insert(i, true);
            }
            Op::Delete(i) => {
                m.insert(i, false);
            }
            Op::DeleteRange(a, b) => {
                for i in a..b {
                    m.insert(i, false);
                }
            }
        }
    }
    m.into_iter()
        .map(|(i, exists)| (i, Version { seq, exists }))
        .collect()
}

#[derive(Clone, Debug)]
pub struct Batch {
    pub thread: u64,
    pub seq: u64,
    pub ops: Vec<Op>,
}

/// What one round's event log says.
#[derive(Debug, Default)]
pub struct RoundLog {
    pub opened: bool,
    pub closed: bool,
    /// In acknowledgement order.
    pub acked: Vec<Batch>,
    /// Issued, never acknowledged (cut by the kill, or failed with an error).
    pub in_flight: Vec<Batch>,
    pub write_errors: Vec<String>,
    pub read_failures: Vec<(ViolationKind, String)>,
    pub warnings: Vec<String>,
    /// Faults the capacity-tier emulation injected (as of the child's last `S` line).
    pub injected_errors: u64,
    pub injected_timeouts: u64,
}

/// Parses the event log; a last line without its newline (cut by the kill) is ignored.
pub fn parse_log(text: &str) -> anyhow::Result<RoundLog> {
    let mut log = RoundLog::default();
    let mut pending: BTreeMap<(u64, u64), Batch> = BTreeMap::new();
    let complete = match text.rfind('\n') {
        Some(p) => &text[..p],
        None => "",
    };
    for line in complete.lines() {
        let mut f = line.splitn(4, ' ');
        match f.next() {
            Some("O") => log.opened = true,
            Some("C") => log.closed = true,
            Some("I") => {
                let thread = f.next().context("I thread")?.parse()?;
                let seq = f.next().context("I seq")?.parse()?;
                let ops = parse_ops(f.next().context("I ops")?)?;
                pending.insert((thread, seq), Batch { thread, seq, ops });
            }
            Some("A") => {
                let thread = f.next().context("A thread")?.parse()?;
                let seq = f.next().context("A seq")?.parse()?;
                let b = pending
                    .remove(&(thread, seq))
                    .with_context(|| format!("ack of a batch never issued: {line:?}"))?;
                log.acked.push(b);
            }
            Some("E") => log.write_errors.push(line.to_string()),
            Some("F") => {
                let kind = match f.next() {
                    Some("lost") => ViolationKind::Lost,
                    Some("unreadable") => ViolationKind::Unreadable,
                    _ => ViolationKind::Phantom,
                };
                log.read_failures.push((kind, line.to_string()));
            }
            Some("W") => log.warnings.push(line.to_string()),
            Some("S") => {
                log.injected_errors = f.next().context("S errors")?.parse()?;
                log.injected_timeouts = f.next().context("S timeouts")?.parse()?;
            }
            _ => bail!("bad event log line {line:?}"),
        }
    }
    log.in_flight = pending.into_values().collect();
    Ok(log)
}

/// Expected state of every key, with a short history of each for failure reports.
#[derive(Clone)]
pub struct Expected {
    pub versions: Vec<Version>,
    recent: Vec<VecDeque<String>>,
}

impl Expected {
    pub fn new(num_keys: u64) -> Self {
        Expected {
            versions: vec![
                Version {
                    seq: 0,
                    exists: false
                };
                num_keys as usize
            ],
            recent: vec![VecDeque::new(); num_keys as usize],
        }
    }

    fn note(&mut self, i: u64, round: u64, v: Version, what: &str) {
        let r = &mut self.recent[i as usize];
        if r.len() == 8 {
            r.pop_front();
        }
        r.push_back(format!(
            "round {round} seq {} {} {what}",
            v.seq,
            if v.exists { "put" } else { "del" }
        ));
    }

    pub fn apply_acked(&mut self, round: u64, b: &Batch) {
        for (i, v) in batch_effects(&b.ops, b.seq) {
            self.versions[i as usize] = v;
            self.note(i, round, v, "acked");
        }
    }

    pub fn history(&self, i: u64) -> String {
        let r = &self.recent[i as usize];
        if r.is_empty() {
            "never written".into()
        } else {
            r.iter().cloned().collect::<Vec<_>>().join("; ")
        }
    }

    /// Writes the state file the next child starts from: one line `seq exists` per key.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let mut s = String::with_capacity(self.versions.len() * 16);
        for v in &self.versions {
            let _ = writeln!(s, "{} {}", v.seq, u8::from(v.exists));
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, s)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    pub fn load(path: &Path) -> anyhow::Result<Vec<Version>> {
        std::fs::read_to_string(path)?
            .lines()
            .map(|l| {
                let (seq, e) = l.split_once(' ').context("state line")?;
                Ok(Version {
                    seq: seq.parse()?,
                    exists: e == "1",
                })
            })
            .collect()
    }
}

/// Whether `observed` is what key `i` holds after version `v`.
pub fn matches(i: u64, v: Version, observed: Option<&Vec<u8>>) -> bool {
    match observed {
        None => !v.exists,
        Some(val) => v.exists && *val == keys::value(i, v.seq),
    }
}

/// The outcome of checking a reopened database.
#[derive(Debug, Default)]
pub struct Verdict {
    pub lost: u64,
    pub phantoms: u64,
    /// In-flight batches found applied (all of them) / not applied.
    pub in_flight_applied: u64,
    pub in_flight_dropped: u64,
    /// The first wrong key, with its history.
    pub first: Option<String>,
}

impl Verdict {
    fn wrong(&mut self, kind: ViolationKind, msg: String) {
        match kind {
            ViolationKind::Lost | ViolationKind::Unreadable => self.lost += 1,
            ViolationKind::Phantom => self.phantoms += 1,
        }
        if self.first.is_none() {
            self.first = Some(msg);
        }
    }
}

/// What [`scan_keys`] found: each key index in the key space with its value, and the keys
/// outside that space (each a phantom).
pub type Scanned = (BTreeMap<u64, Vec<u8>>, Vec<Vec<u8>>);

/// Every key of the key space `0..n` an iterator holds, with its value (one forward scan from
/// the first key), and the keys outside that space it met.
pub fn scan_keys(mut it: strata::DbIterator, n: u64) -> strata::Result<Scanned> {
    let (mut scanned, mut outside) = (BTreeMap::new(), Vec::new());
    it.seek_to_first();
    while it.valid() {
        match keys::key_index(it.key()).filter(|&i| i < n) {
            Some(i) => {
                scanned.insert(i, it.value().to_vec());
            }
            None => outside.push(it.key().to_vec()),
        }
        it.next();
    }
    it.status()?;
    Ok((scanned, outside))
}

/// Reads every key of `db` (a full scan and a point get of each key) and checks it against
/// `expected` and the round's in-flight batches; in-flight batches found applied become expected.
/// With column families (`fams`), each family is scanned and a key found in a family it does
/// not belong to is a phantom.
pub fn verify(
    db: &Db,
    fams: &Families,
    round: u64,
    expected: &mut Expected,
    in_flight: &[Batch],
) -> anyhow::Result<Verdict> {
    let mut verdict = Verdict::default();
    let n = expected.versions.len() as u64;
    let (mut scanned, mut outside) = (BTreeMap::new(), Vec::new());
    for (f, it) in fams.iter_all(db)?.into_iter().enumerate() {
        let (found, out) = scan_keys(it, n)?;
        outside.extend(out);
        for (i, v) in found {
            if family_of(i, fams.extra()) == f {
                scanned.insert(i, v);
            } else {
                outside.push(keys::key(i));
            }
        }
    }
    for k in outside {
        verdict.wrong(
            ViolationKind::Phantom,
            format!(
                "key {:?} outside the key space appeared",
                String::from_utf8_lossy(&k)
            ),
        );
    }
    let mut got: Vec<Option<Vec<u8>>> = Vec::with_capacity(n as usize);
    for i in 0..n {
        let g = fams
            .get(db, &ReadOptions::default(), i)?
            .map(|b| b.to_vec());
        if g != scanned.get(&i).cloned() {
            verdict.wrong(
                ViolationKind::Phantom,
                format!(
                    "key {} get returned {:?} but a scan returned {:?}; history: {}",
                    String::from_utf8_lossy(&keys::key(i)),
                    g.as_deref().map(keys::show),
                    scanned.get(&i).map(|v| keys::show(v)),
                    expected.history(i)
                ),
            );
        }
        got.push(g);
    }
    // In-flight batches: all or nothing.
    let mut settled = vec![false; n as usize];
    for b in in_flight {
        let effects = batch_effects(&b.ops, b.seq);
        let all_new = effects
            .iter()
            .all(|&(i, v)| matches(i, v, got[i as usize].as_ref()));
        let all_old = effects
            .iter()
            .all(|&(i, _)| matches(i, expected.versions[i as usize], got[i as usize].as_ref()));
        for &(i, v) in &effects {
            settled[i as usize] = true;
            let what = if all_new {
                "in flight, applied"
            } else {
                "in flight, not applied"
            };
            expected.note(i, round, v, what);
        }
        if all_new && !all_old {
            verdict.in_flight_applied += 1;
            for &(i, v) in &effects {
                expected.versions[i as usize] = v;
            }
        } else if all_old {
            verdict.in_flight_dropped += 1;
        } else {
            let detail: Vec<String> = effects
                .iter()
                .map(|&(i, v)| {
                    format!(
                        "{}: {} (new {}, acked {})",
                        String::from_utf8_lossy(&keys::key(i)),
                        got[i as usize]
                            .as_deref()
                            .map(keys::show)
                            .unwrap_or_else(|| "absent".into()),
                        matches(i, v, got[i as usize].as_ref()),
                        matches(i, expected.versions[i as usize], got[i as usize].as_ref()),
                    )
                })
                .collect();
            verdict.wrong(
                ViolationKind::Phantom,
                format!(
                    "in-flight batch seq {} (thread {}, ops {}) partially applied: {}",
                    b.seq,
                    b.thread,
                    format_ops(&b.ops),
                    detail.join("; ")
                ),
            );
        }
    }
    for i in 0..n {
        let want = expected.versions[i as usize];
        let g = got[i as usize].as_ref();
        if settled[i as usize] || matches(i, want, g) {
            continue;
        }
        let kind = match g.and_then(|v| keys::decode_value(v)) {
            None if g.is_none() => ViolationKind::Lost,
            Some((ki, seq)) if ki == i && seq < want.seq => ViolationKind::Lost,
            _ => ViolationKind::Phantom,
        };
        verdict.wrong(
            kind,
            format!(
                "key {} holds {} but the last acknowledged write is seq {} ({}); history: {}",
                String::from_utf8_lossy(&keys::key(i)),
                g.map(|v| keys::show(v)).unwrap_or_else(|| "nothing".into()),
                want.seq,
                if want.exists { "put" } else { "delete" },
                expected.history(i)
            ),
        );
    }
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_round_trip_and_cut_line() {
        let ops = vec![Op::Put(3), Op::DeleteRange(1, 5), Op::Put(2), Op::Delete(9)];
        assert_eq!(parse_ops(&format_ops(&ops)).unwrap(), ops);
        let e = batch_effects(&ops, 7);
        assert_eq!(
            e.iter().map(|(i, v)| (*i, v.exists)).collect::<Vec<_>>(),
            vec![(1, false), (2, true), (3, false), (4, false), (9, false)]
        );
        let text = format!(
            "O\nI 0 7 {}\nI 1 8 P4\nA 0 7\nI 0 9 P1\nA 0 9",
            format_ops(&ops)
        );
        let log = parse_log(&text).unwrap();
        assert!(log.opened);
        assert_eq!(log.acked.len(), 1);
        assert_eq!(
            log.in_flight.len(),
            2,
            "the cut ack leaves batch 9 in flight"
        );
    }

    #[test]
    fn read_failures_keep_their_kind_and_warnings_do_not_fail() {
        let text = "O\nW get: I/O error: injected transient error\n\
                    F lost key 3: nothing\nF phantom key 4: v9\n\
                    F unreadable get: corruption: block checksum mismatch\n";
        let log = parse_log(text).unwrap();
        assert_eq!(log.warnings.len(), 1);
        let kinds: Vec<ViolationKind> = log.read_failures.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            vec![
                ViolationKind::Lost,
                ViolationKind::Phantom,
                ViolationKind::Unreadable
            ]
        );
        let mut v = Verdict::default();
        for (k, line) in &log.read_failures {
            v.wrong(*k, line.clone());
        }
        assert_eq!((v.lost, v.phantoms), (2, 1), "unreadable counts as lost");
    }
}
