//! RALT's state file: which runs are live, the access clock, the hot-set threshold and the
//! current limits. Written whole (`STATE.tmp`, sync, rename to `STATE`, sync the directory)
//! after every change; see `docs/format.md`, "RALT files".
//!
//! Invariant: decoding checks magic, version, CRC and exact length and returns `Corruption` on
//! anything else, never panics. Depends on `coding`, `wal::mask_crc`, `error`.

use super::threshold::Threshold;
use super::tuning::Limits;
use crate::coding::{decode_fixed32, put_fixed32, put_fixed64, put_varint64, Decoder};
use crate::error::{Error, Result};
use crate::wal::mask_crc;

pub const STATE_MAGIC: &[u8; 4] = b"RLTS";
pub const STATE_VERSION: u8 = 1;
/// More runs than this in a state file is corruption.
const MAX_STATE_RUNS: u64 = 1 << 16;

/// A live run as the state file names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEntry {
    /// The run's id (its file is `NNNNNN.ralt`).
    pub id: u64,
    /// The run file's size in bytes.
    pub size: u64,
    /// Access records in the run.
    pub records: u64,
}

/// The contents of RALT's `STATE` file.
#[derive(Clone, Debug, PartialEq)]
pub struct StateFile {
    /// Accessed HotRAP bytes so far (the score clock).
    pub clock: u64,
    /// Id the next run gets (every live run's id is below it).
    pub next_run_id: u64,
    /// Tick at which `hot_threshold.score` is expressed.
    pub threshold_tick: u64,
    /// The hot-set threshold, expressed at `threshold_tick`.
    pub hot_threshold: Threshold,
    /// The hot-set and physical limits in force.
    pub limits: Limits,
    /// Newest first.
    pub runs: Vec<RunEntry>,
}

impl StateFile {
    /// The file's bytes: magic, version, the fields, the runs, then a masked CRC32C of all that.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = STATE_MAGIC.to_vec();
        b.push(STATE_VERSION);
        put_fixed64(&mut b, self.clock);
        put_fixed64(&mut b, self.next_run_id);
        put_fixed64(&mut b, self.threshold_tick);
        put_fixed64(&mut b, self.hot_threshold.score.to_bits());
        put_fixed64(&mut b, self.hot_threshold.tie_keep.to_bits());
        put_fixed64(&mut b, self.limits.hot_set);
        put_fixed64(&mut b, self.limits.physical);
        put_varint64(&mut b, self.runs.len() as u64);
        for r in &self.runs {
            put_fixed64(&mut b, r.id);
            put_fixed64(&mut b, r.size);
            put_fixed64(&mut b, r.records);
        }
        let crc = mask_crc(crc32c::crc32c(&b));
        put_fixed32(&mut b, crc);
        b
    }

    /// Decodes a state file; a bad magic, version, checksum, value or length is `Corruption`.
    pub fn decode(data: &[u8]) -> Result<StateFile> {
        let bad = |what: &str| Error::corruption(format!("RALT state: {what}"));
        if data.len() < 9 || &data[..4] != STATE_MAGIC {
            return Err(bad("bad magic"));
        }
        if data[4] != STATE_VERSION {
            return Err(bad("unknown version"));
        }
        let (body, tail) = data.split_at(data.len() - 4);
        if decode_fixed32(tail) != Some(mask_crc(crc32c::crc32c(body))) {
            return Err(bad("checksum mismatch"));
        }
        let mut d = Decoder::new(&body[5..]);
        let mut u = || d.fixed64().ok_or_else(|| bad("truncated"));
        let clock = u()?;
        let next_run_id = u()?;
        let threshold_tick = u()?;
        let score = f64::from_bits(u()?);
        let tie_keep = f64::from_bits(u()?);
        let hot_set = u()?;
        let physical = u()?;
        if !score.is_finite() || score < 0.0 || !(0.0..=1.0).contains(&tie_keep) {
            return Err(bad("bad threshold"));
        }
        let n = d.varint64().ok_or_else(|| bad("truncated run count"))?;
        if n > MAX_STATE_RUNS {
            return Err(bad("too many runs"));
        }
        let mut runs = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let mut f = || d.fixed64().ok_or_else(|| bad("truncated run entry"));
            let (id, size, records) = (f()?, f()?, f()?);
            if id >= next_run_id {
                return Err(bad("run id not below the next id"));
            }
            runs.push(RunEntry { id, size, records });
        }
        if !d.is_empty() {
            return Err(bad("trailing bytes"));
        }
        Ok(StateFile {
            clock,
            next_run_id,
            threshold_tick,
            hot_threshold: Threshold { score, tie_keep },
            limits: Limits { hot_set, physical },
            runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StateFile {
        StateFile {
            clock: 123_456,
            next_run_id: 9,
            threshold_tick: 77,
            hot_threshold: Threshold {
                score: 2.5,
                tie_keep: 0.25,
            },
            limits: Limits {
                hot_set: 1000,
                physical: 300,
            },
            runs: vec![
                RunEntry {
                    id: 8,
                    size: 4096,
                    records: 10,
                },
                RunEntry {
                    id: 3,
                    size: 100,
                    records: 1,
                },
            ],
        }
    }

    #[test]
    fn roundtrip_and_every_truncation_fails() {
        let s = sample();
        let b = s.encode();
        assert_eq!(StateFile::decode(&b).unwrap(), s);
        for cut in 0..b.len() {
            assert!(StateFile::decode(&b[..cut]).unwrap_err().is_corruption());
        }
    }

    #[test]
    fn mutations_never_panic() {
        let b = sample().encode();
        let seed = strata_test_support::seed("ralt state mutation fuzz");
        let mut rng = strata_test_support::Rng::new(seed);
        for _ in 0..20_000 {
            let mut v = b.clone();
            let i = rng.below(v.len() as u64) as usize;
            match rng.below(3) {
                0 => v[i] ^= 1 << rng.below(8),
                1 => v[i] = rng.next_u64() as u8,
                _ => v.insert(i, rng.next_u64() as u8),
            }
            // Re-seal half the time so the field checks behind the CRC are exercised too.
            if rng.chance(50) && v.len() > 4 {
                let n = v.len() - 4;
                let crc = mask_crc(crc32c::crc32c(&v[..n]));
                v[n..].copy_from_slice(&crc.to_le_bytes());
            }
            if let Err(e) = StateFile::decode(&v) {
                assert!(e.is_corruption());
            }
        }
    }
}
