//! Integer parsing and printing, and double parsing, with Redis's exact rules.
//!
//! Owns: `parse_i64` (Redis `string2ll`: no sign but `-`, no leading zeros, no spaces, at most
//! 20 bytes), `parse_u64`, `parse_f64` (a full-string double, no spaces, NaN rejected: scores
//! and timeouts) and `push_i64`. Float arithmetic and float text live in `redis_float`.
//! Invariant: these functions never panic and never allocate more than the formatted output.
//! Depends on nothing else in the crate.

/// Parses a signed 64-bit integer the way Redis's `string2ll` does.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    // The first digit must be 1..=9: no leading zeros, no "-0", no empty digits.
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parses an unsigned 64-bit integer (SCAN cursors). Like `strtoull` with full-string
/// consumption: digits only.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Parses a float the way Redis's `string2ld` does: the whole string must be a number, with no
/// leading or trailing space; NaN is rejected; infinities are accepted.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5120 {
        return None;
    }
    if s[0].is_ascii_whitespace() || s[s.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    // Rust accepts "nan", "inf", "infinity" (any case); strtold also accepts the infinities and
    // hex floats. Hex floats are rare enough to leave out.
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// Appends the decimal form of `v` to `out`.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"1.0",
            b"-",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats_follow_string2ld() {
        assert_eq!(parse_f64(b"10.50"), Some(10.5));
        assert_eq!(parse_f64(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"abc"), None);
    }
}
