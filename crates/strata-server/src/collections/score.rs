//! Sorted-set scores: the order-preserving byte encoding of the score index, the stored score
//! value, and the parsing of ZRANGEBYSCORE/ZCOUNT bounds (`(1.5`, `-inf`, `+inf`).
//!
//! Invariants: for finite or infinite doubles `a < b` iff `encode(a) < encode(b)` bytewise,
//! and -0.0 encodes as 0.0 (Redis compares them equal); NaN is never stored (commands reject
//! it before). Depends on `numbers` only; must not depend on the engine or
//! on commands (pure encoding).

use crate::numbers::parse_f64;

/// The 8-byte order-preserving encoding of a score.
pub fn encode(score: f64) -> [u8; 8] {
    let s = if score == 0.0 { 0.0 } else { score };
    let bits = s.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

/// Inverts [`encode`].
pub fn decode(b: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(b);
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// A score bound: the value and whether it is exclusive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    pub value: f64,
    pub exclusive: bool,
}

impl Bound {
    /// Whether `s` is above (or at, if inclusive) this bound taken as a minimum.
    pub fn admits_min(&self, s: f64) -> bool {
        if self.exclusive {
            s > self.value
        } else {
            s >= self.value
        }
    }

    /// Whether `s` is below (or at, if inclusive) this bound taken as a maximum.
    pub fn admits_max(&self, s: f64) -> bool {
        if self.exclusive {
            s < self.value
        } else {
            s <= self.value
        }
    }
}

/// Parses a score bound the way Redis's `zslParseRange` does; `None` is an invalid bound.
pub fn parse_bound(a: &[u8]) -> Option<Bound> {
    let (exclusive, num) = match a.first() {
        Some(b'(') => (true, &a[1..]),
        _ => (false, a),
    };
    let value = parse_f64(num)?;
    if value.is_nan() {
        return None;
    }
    Some(Bound { value, exclusive })
}

/// A lexicographic bound (`[a`, `(a`, `-`, `+`) as ZRANGEBYLEX takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    NegInf,
    PosInf,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

impl LexBound {
    pub fn admits_min(&self, m: &[u8]) -> bool {
        match self {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Incl(v) => m >= v.as_slice(),
            LexBound::Excl(v) => m > v.as_slice(),
        }
    }

    pub fn admits_max(&self, m: &[u8]) -> bool {
        match self {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(v) => m <= v.as_slice(),
            LexBound::Excl(v) => m < v.as_slice(),
        }
    }
}

/// Parses a lex bound (Redis's `zslParseLexRangeItem`).
pub fn parse_lex(a: &[u8]) -> Option<LexBound> {
    match a.split_first() {
        Some((b'-', [])) => Some(LexBound::NegInf),
        Some((b'+', [])) => Some(LexBound::PosInf),
        Some((b'[', r)) => Some(LexBound::Incl(r.to_vec())),
        Some((b'(', r)) => Some(LexBound::Excl(r.to_vec())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_preserved() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            1.5,
            1e300,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(encode(w[0]) < encode(w[1]), "{} < {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(decode(encode(x)), x);
        }
        assert_eq!(encode(-0.0), encode(0.0));
    }

    #[test]
    fn bounds() {
        assert_eq!(
            parse_bound(b"(1.5"),
            Some(Bound {
                value: 1.5,
                exclusive: true
            })
        );
        assert_eq!(parse_bound(b"-inf").unwrap().value, f64::NEG_INFINITY);
        assert!(parse_bound(b"(").is_none());
        assert!(parse_bound(b"abc").is_none());
        assert_eq!(parse_lex(b"-"), Some(LexBound::NegInf));
        assert_eq!(parse_lex(b"[a"), Some(LexBound::Incl(b"a".to_vec())));
        assert!(parse_lex(b"a").is_none());
        assert!(parse_lex(b"").is_none());
    }
}
