//! Per-key version histories, shared by the child's writer and reader threads, against which
//! every read during a round is checked.
//!
//! A key's history is the list of versions written to it (sequence number, and whether the key
//! exists afterwards), the first being the state the parent verified before the round. A writer
//! appends versions *before* it issues a batch and advances the key's acknowledged mark *after*
//! the write returns. A read that captures `lo` (the acknowledged mark) before it starts and `hi`
//! (the last issued version) after its view is fixed may return exactly the versions `lo..=hi`:
//! older ones are lost writes, anything else is a phantom. Each key is written by one writer
//! thread at a time, so versions are in sequence order.

use std::sync::Mutex;

use crate::keys;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// Stress sequence of the write (0: never written).
    pub seq: u64,
    /// Whether the key holds `keys::value(i, seq)` after it (false: deleted / absent).
    pub exists: bool,
}

struct KeyHist {
    versions: Vec<Version>,
    acked: usize,
}

/// What a wrong read was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// An acknowledged write is missing (an older version, or nothing, came back).
    Lost,
    /// Something came back that was never written (or not yet issued) to that key.
    Phantom,
    /// The read failed with an error no injected fault causes (`Corruption`): the engine could
    /// not read back what it holds. Counted as lost.
    Unreadable,
}

#[derive(Debug)]
pub struct Violation {
    pub kind: ViolationKind,
    pub message: String,
}

pub struct History {
    keys: Vec<Mutex<KeyHist>>,
}

impl History {
    pub fn new(initial: &[Version]) -> Self {
        History {
            keys: initial
                .iter()
                .map(|&v| {
                    Mutex::new(KeyHist {
                        versions: vec![v],
                        acked: 0,
                    })
                })
                .collect(),
        }
    }

    fn lock(&self, i: u64) -> std::sync::MutexGuard<'_, KeyHist> {
        self.keys[i as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Records the final effect of a batch about to be issued.
    pub fn issue(&self, effects: &[(u64, Version)]) {
        for &(i, v) in effects {
            self.lock(i).versions.push(v);
        }
    }

    /// Marks the last issued version of each key acknowledged.
    pub fn ack(&self, effects: &[(u64, Version)]) {
        for &(i, _) in effects {
            let mut h = self.lock(i);
            h.acked = h.versions.len() - 1;
        }
    }

    /// Index of the last acknowledged version of key `i` (capture before a read).
    pub fn low(&self, i: u64) -> usize {
        self.lock(i).acked
    }

    /// Index of the last issued version of key `i` (capture after a read's view is fixed).
    pub fn high(&self, i: u64) -> usize {
        self.lock(i).versions.len() - 1
    }

    /// Checks that `observed` (the value read for key `i`) is one of versions `lo..=hi`.
    pub fn check(
        &self,
        i: u64,
        lo: usize,
        hi: usize,
        observed: Option<&[u8]>,
    ) -> Result<(), Violation> {
        let h = self.lock(i);
        let allowed = &h.versions[lo..=hi];
        let fail = |kind, what: String| {
            Err(Violation {
                kind,
                message: format!(
                    "key {} read {what}; allowed versions {lo}..={hi}; history: {}",
                    String::from_utf8_lossy(&keys::key(i)),
                    describe(&h.versions, h.acked)
                ),
            })
        };
        match observed {
            None => {
                if allowed.iter().any(|v| !v.exists) {
                    Ok(())
                } else {
                    fail(ViolationKind::Lost, "nothing".into())
                }
            }
            Some(val) => match keys::decode_value(val) {
                Some((ki, seq)) if ki == i => {
                    match h.versions.binary_search_by_key(&seq, |v| v.seq) {
                        Ok(j) if (lo..=hi).contains(&j) && h.versions[j].exists => Ok(()),
                        Ok(j) if j < lo => fail(
                            ViolationKind::Lost,
                            format!("stale version {j} (seq {seq})"),
                        ),
                        _ => fail(
                            ViolationKind::Phantom,
                            format!("seq {seq}, not an allowed put ({})", keys::show(val)),
                        ),
                    }
                }
                _ => fail(
                    ViolationKind::Phantom,
                    format!("a value never written to it: {:?}", keys::show(val)),
                ),
            },
        }
    }
}

/// The last versions of a history, `*` marking the acknowledged one.
fn describe(versions: &[Version], acked: usize) -> String {
    let start = versions.len().saturating_sub(12);
    let mut s = String::new();
    if start > 0 {
        s.push_str("... ");
    }
    for (j, v) in versions.iter().enumerate().skip(start) {
        s.push_str(&format!(
            "[{j}] seq {} {}{} ",
            v.seq,
            if v.exists { "put" } else { "del" },
            if j == acked { " (last acked)" } else { "" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_must_fall_in_the_window() {
        let h = History::new(&[Version {
            seq: 0,
            exists: false,
        }]);
        let v1 = Version {
            seq: 5,
            exists: true,
        };
        h.issue(&[(0, v1)]);
        assert!(h.check(0, 0, 1, Some(&keys::value(0, 5))).is_ok());
        assert!(h.check(0, 0, 1, None).is_ok());
        h.ack(&[(0, v1)]);
        assert_eq!(h.low(0), 1);
        let e = h.check(0, 1, 1, None).unwrap_err();
        assert_eq!(e.kind, ViolationKind::Lost);
        let e = h.check(0, 1, 1, Some(&keys::value(0, 6))).unwrap_err();
        assert_eq!(e.kind, ViolationKind::Phantom);
        let e = h.check(0, 1, 1, Some(&keys::value(1, 5))).unwrap_err();
        assert_eq!(e.kind, ViolationKind::Phantom);
    }
}
