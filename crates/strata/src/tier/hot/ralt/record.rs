//! Access records: what RALT stores per key, their byte encoding, and the pure score and
//! counter arithmetic of HotRAP §3.2 and §3.7.
//!
//! Score (exponential smoothing): a record stores `(tick, score)`; its real score at tick `now`
//! is `score * (1 - alpha)^(now - tick)`. One access contributes 1 at the tick it happened in.
//! Merging two records of one key decays the older to the newer tick and adds the scores.
//!
//! Counter and stable tag (Algorithm 1): the first access sets `counter = 1`, `stable = false`;
//! merging with an existing record adds the counters (capped at [`MAX_COUNTER`]) and sets
//! `stable`. Every `decay_period_bytes` of accessed HotRAP bytes all counters drop by one; the
//! drop is applied lazily from the tick (the decay *epoch* of tick `t` is
//! `floor(t * tick_bytes / decay_period_bytes)`), so nothing is rewritten when time passes.
//! A record is *stable* when its tag is set and its decayed counter is above zero.
//!
//! Invariants: decoding never panics; a decoded record has a finite, non-negative score, a
//! counter ≤ [`MAX_COUNTER`] and no unknown flag bits. Depends only on `coding` and `error`.

use crate::coding::{put_fixed32, put_fixed64, put_varint64, Decoder};
use crate::error::{Error, Result};

/// Counter cap (the paper's maximum counter value): a stable key that stops being accessed
/// loses stability after at most this many decay periods.
pub const MAX_COUNTER: u8 = 3;

/// Flag bit: the stable tag of Algorithm 1.
pub const FLAG_STABLE: u8 = 1;
/// Flag bit: the record was hot when its run was written (drives the run's bloom and sums).
pub const FLAG_HOT: u8 = 2;
/// Flag bit: the record's score was at or above the hot-set threshold when its run was
/// written (counts toward the hot-set limit, stable or not).
pub const FLAG_CANDIDATE: u8 = 4;
const KNOWN_FLAGS: u8 = FLAG_STABLE | FLAG_HOT | FLAG_CANDIDATE;

/// The largest key RALT accepts in a record (larger ones are corruption on decode).
pub const MAX_KEY_LEN: u64 = 1 << 20;

/// One key's access history.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The accessed user key.
    pub key: Vec<u8>,
    /// Size of the value in the data store at the last access (not the value itself).
    pub value_size: u32,
    /// Time slice `score` refers to.
    pub tick: u64,
    /// Score as of `tick`: exponentially smoothed accesses (see the module docs).
    pub score: f64,
    /// Algorithm 1 counter as of `tick` (decays lazily by epochs).
    pub counter: u8,
    /// `FLAG_*` bits.
    pub flags: u8,
}

/// The clock parameters that score and counter math need.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decay {
    /// Exponential-smoothing weight: scores shrink by `1 - alpha` per tick.
    pub alpha: f64,
    pub tick_bytes: u64,
    pub decay_period_bytes: u64,
}

impl Decay {
    /// The real score at `now` of a `(tick, score)` pair.
    pub fn score_at(&self, score: f64, tick: u64, now: u64) -> f64 {
        if now <= tick {
            return score;
        }
        // `powi` (repeated squaring) costs a fraction of `powf`, and RALT decays a score for
        // every record it flushes, merges or classifies; its relative error, about
        // `(now - tick) * 2^-53`, is far below what the hot/cold threshold can notice.
        let ticks = now - tick;
        let keep = 1.0 - self.alpha;
        score
            * match i32::try_from(ticks) {
                Ok(n) => keep.powi(n),
                Err(_) => keep.powf(ticks as f64),
            }
    }

    /// The counter-decay epoch a tick falls in.
    pub fn epoch(&self, tick: u64) -> u64 {
        let p = self.decay_period_bytes.max(1) as u128;
        (tick as u128 * self.tick_bytes as u128 / p).min(u64::MAX as u128) as u64
    }

    /// A counter stored at `tick`, decayed to `now`.
    pub fn counter_at(&self, counter: u8, tick: u64, now: u64) -> u8 {
        let passed = self.epoch(now).saturating_sub(self.epoch(tick));
        counter.saturating_sub(passed.min(255) as u8)
    }
}

impl Record {
    /// The record of one access at `tick`.
    pub fn first_access(key: &[u8], value_size: u32, tick: u64) -> Record {
        Record {
            key: key.to_vec(),
            value_size,
            tick,
            score: 1.0,
            counter: 1,
            flags: 0,
        }
    }

    /// The HotRAP size: the key-value record's size in the data store.
    pub fn hotrap_size(&self) -> u64 {
        self.key.len() as u64 + self.value_size as u64
    }

    /// Whether the stable tag of Algorithm 1 is set (regardless of the decayed counter).
    pub fn tagged_stable(&self) -> bool {
        self.flags & FLAG_STABLE != 0
    }

    /// Stable at `now` (Algorithm 1: tag set and decayed counter above zero).
    pub fn is_stable(&self, d: &Decay, now: u64) -> bool {
        self.tagged_stable() && d.counter_at(self.counter, self.tick, now) > 0
    }

    /// Merges another record of the same key into this one (order does not matter).
    pub fn merge(&mut self, other: &Record, d: &Decay) {
        debug_assert_eq!(self.key, other.key);
        let (old, new) = if other.tick >= self.tick {
            (&*self, other)
        } else {
            (other, &*self)
        };
        let tick = new.tick;
        let score = d.score_at(old.score, old.tick, tick) + new.score;
        let counter = d
            .counter_at(old.counter, old.tick, tick)
            .saturating_add(new.counter)
            .min(MAX_COUNTER);
        let value_size = new.value_size;
        self.tick = tick;
        self.score = score;
        self.counter = counter;
        self.value_size = value_size;
        // A hit on an existing key activates the stable tag; build-time flags are recomputed.
        self.flags = FLAG_STABLE;
    }

    /// Encoded length in bytes (the record's physical size).
    pub fn encoded_len(&self) -> usize {
        varint_len(self.key.len() as u64) + self.key.len() + 4 + 8 + 8 + 1 + 1
    }

    /// `varint key_len | key | u32 value_size | u64 tick | f64 score | u8 counter | u8 flags`.
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.key.len() as u64);
        buf.extend_from_slice(&self.key);
        put_fixed32(buf, self.value_size);
        put_fixed64(buf, self.tick);
        put_fixed64(buf, self.score.to_bits());
        buf.push(self.counter);
        buf.push(self.flags);
    }

    /// Decodes one record from the front of `d`.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Record> {
        let bad = |what: &str| Error::corruption(format!("RALT record: {what}"));
        let klen = d.varint64().ok_or_else(|| bad("bad key length"))?;
        if klen > MAX_KEY_LEN {
            return Err(bad("key too long"));
        }
        let key = d
            .bytes(klen as usize)
            .ok_or_else(|| bad("truncated key"))?
            .to_vec();
        let value_size = d.fixed32().ok_or_else(|| bad("truncated value size"))?;
        let tick = d.fixed64().ok_or_else(|| bad("truncated tick"))?;
        let score = f64::from_bits(d.fixed64().ok_or_else(|| bad("truncated score"))?);
        let counter = d.u8().ok_or_else(|| bad("truncated counter"))?;
        let flags = d.u8().ok_or_else(|| bad("truncated flags"))?;
        if !score.is_finite() || score < 0.0 {
            return Err(bad("score not a finite non-negative number"));
        }
        if counter > MAX_COUNTER {
            return Err(bad("counter above the maximum"));
        }
        if flags & !KNOWN_FLAGS != 0 {
            return Err(bad("unknown flag bits"));
        }
        Ok(Record {
            key,
            value_size,
            tick,
            score,
            counter,
            flags,
        })
    }
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Decay = Decay {
        alpha: 0.5,
        tick_bytes: 10,
        decay_period_bytes: 100,
    };

    fn rec(tick: u64, score: f64, counter: u8, flags: u8) -> Record {
        Record {
            key: b"k".to_vec(),
            value_size: 7,
            tick,
            score,
            counter,
            flags,
        }
    }

    #[test]
    fn score_decay_table() {
        // (score, tick, now, expected)
        let cases = [
            (1.0, 0, 0, 1.0),
            (1.0, 0, 1, 0.5),
            (4.0, 3, 5, 1.0),
            (2.0, 5, 3, 2.0), // a record newer than `now` is not grown
            (1.0, 0, 1100, 0.0),
        ];
        for (s, t, now, want) in cases {
            let got = D.score_at(s, t, now);
            assert!(
                (got - want).abs() < 1e-12,
                "{s}@{t} at {now}: {got} != {want}"
            );
        }
    }

    #[test]
    fn counter_decay_table() {
        // 10 ticks per epoch. (counter, tick, now, expected)
        let cases = [
            (3, 0, 9, 3),
            (3, 0, 10, 2),
            (3, 9, 10, 2), // the boundary is global, not per record
            (3, 5, 35, 0),
            (1, 12, 19, 1),
            (2, 12, 1000, 0),
        ];
        for (c, t, now, want) in cases {
            assert_eq!(D.counter_at(c, t, now), want, "{c}@{t} at {now}");
        }
    }

    #[test]
    fn merge_table() {
        // (a, b, expected tick, score, counter, stable)
        let cases = [
            (rec(0, 1.0, 1, 0), rec(0, 1.0, 1, 0), 0, 2.0, 2, true),
            (rec(0, 1.0, 1, 0), rec(2, 1.0, 1, 0), 2, 1.25, 2, true),
            (rec(2, 1.0, 1, 0), rec(0, 1.0, 1, 0), 2, 1.25, 2, true),
            // counter capped; older counter decayed by one epoch first
            (rec(5, 8.0, 3, 1), rec(12, 1.0, 1, 0), 12, 1.0625, 3, true),
            (
                rec(0, 8.0, 3, 1),
                rec(30, 2.0, 1, 0),
                30,
                2.0 + 8.0 / (1u64 << 30) as f64,
                1,
                true,
            ),
            (
                rec(0, 8.0, 1, 1),
                rec(10, 1.0, 1, 0),
                10,
                1.0 + 8.0 / 1024.0,
                1,
                true,
            ),
        ];
        for (i, (a, b, tick, score, counter, stable)) in cases.into_iter().enumerate() {
            let mut m = a.clone();
            m.merge(&b, &D);
            assert_eq!(m.tick, tick, "case {i}");
            assert!((m.score - score).abs() < 1e-12, "case {i}: {}", m.score);
            assert_eq!(m.counter, counter, "case {i}");
            assert_eq!(m.tagged_stable(), stable, "case {i}");
            let mut r = b.clone();
            r.merge(&a, &D);
            assert_eq!(
                (r.tick, r.counter),
                (m.tick, m.counter),
                "case {i} commutes"
            );
            assert!((r.score - m.score).abs() < 1e-12, "case {i} commutes");
        }
    }

    #[test]
    fn stability_follows_counter_and_tag() {
        let first = Record::first_access(b"k", 1, 0);
        assert!(!first.is_stable(&D, 0));
        let mut m = first.clone();
        m.merge(&Record::first_access(b"k", 1, 1), &D);
        assert!(m.is_stable(&D, 1));
        assert!(m.is_stable(&D, 19)); // counter 2 at epoch 0 → 1 at epoch 1
        assert!(!m.is_stable(&D, 20)); // → 0 at epoch 2
    }

    #[test]
    fn encode_decode_roundtrip_and_rejects() {
        let r = Record {
            key: b"hello".to_vec(),
            value_size: 1000,
            tick: 42,
            score: 3.5,
            counter: 2,
            flags: FLAG_STABLE | FLAG_HOT,
        };
        let mut buf = Vec::new();
        r.encode_into(&mut buf);
        assert_eq!(buf.len(), r.encoded_len());
        let mut d = Decoder::new(&buf);
        assert_eq!(Record::decode(&mut d).unwrap(), r);
        assert!(d.is_empty());
        for cut in 0..buf.len() {
            assert!(Record::decode(&mut Decoder::new(&buf[..cut])).is_err());
        }
        let n = buf.len();
        let mut bad = buf.clone();
        bad[n - 1] = 0x80;
        assert!(Record::decode(&mut Decoder::new(&bad))
            .unwrap_err()
            .is_corruption());
        let mut bad = buf.clone();
        bad[n - 2] = MAX_COUNTER + 1;
        assert!(Record::decode(&mut Decoder::new(&bad)).is_err());
        let mut bad = buf;
        bad[n - 3] = 0xff; // top byte of the score: NaN / negative
        bad[n - 4] = 0xff;
        assert!(Record::decode(&mut Decoder::new(&bad)).is_err());
    }
}
