//! Redis's float arithmetic and float text, byte for byte: [`LongDouble`] for INCRBYFLOAT and
//! HINCRBYFLOAT, [`format_double`] for every reply that prints a double (ZSCORE, ZINCRBY,
//! ZMSCORE, scores WITHSCORES, RESP3 doubles).
//!
//! How redis-server 7.0 does it, and so how we do: INCRBYFLOAT parses the stored value and the
//! increment with `strtold` (rejecting leading space, trailing bytes, NaN, and overflow or
//! underflow to 0), adds them in C `long double` (80-bit x87 extended on x86-64, IEEE quad on
//! aarch64), refuses a NaN or infinite sum, and stores and replies `snprintf("%.17Lf")` with
//! trailing zeros and a trailing point removed and `-0` printed as `0` (ld2string's
//! LD_STR_HUMAN). That is why `4.071 + -0.25` prints `3.821` there, where a `f64` sum printed
//! shortest-exactly would be `3.8209999999999997`. Doubles are printed `%.17g` (addReplyDouble
//! in 7.0; `inf`/`-inf` spelt out), so a score of 1.1 reads back as `1.1000000000000001`.
//!
//! Rust has no `long double` and cannot pass one through `snprintf`'s varargs, so these few
//! operations are C (`csrc/redis_float.c`, built by `build.rs`) over an opaque 16-byte cell,
//! using the same C library functions redis-server uses; the result matches redis-server built
//! for the same platform. Invariant: nothing here panics or reads past the given slices.
//! Depends on nothing else in the crate.

use std::os::raw::{c_char, c_int, c_longlong};

/// The longest text redis accepts as a float or prints for one (its MAX_LONG_DOUBLE_CHARS).
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// A C `long double`, opaque: only the C side reads or writes its bytes.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct LongDouble([u8; 16]);

extern "C" {
    fn strata_ld_parse(s: *const c_char, len: usize, out: *mut LongDouble) -> c_int;
    fn strata_ld_from_i64(v: c_longlong, out: *mut LongDouble);
    fn strata_ld_add(a: *const LongDouble, b: *const LongDouble, out: *mut LongDouble);
    fn strata_ld_is_finite(a: *const LongDouble) -> c_int;
    fn strata_ld_format_human(a: *const LongDouble, buf: *mut c_char, cap: usize) -> c_int;
    fn strata_double_format_g17(d: f64, buf: *mut c_char, cap: usize) -> c_int;
}

impl LongDouble {
    const ZERO: LongDouble = LongDouble([0; 16]);

    /// Parses `s` as redis's `string2ld` does; `None` where redis says "not a valid float".
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_LONG_DOUBLE_CHARS {
            return None;
        }
        let mut out = LongDouble::ZERO;
        // SAFETY: `s` is valid for `s.len()` bytes (the C side copies at most that many into
        // its own NUL-terminated buffer) and `out` is a writable, aligned 16-byte cell, which
        // the C side's static assertion guarantees holds a `long double`.
        let ok = unsafe { strata_ld_parse(s.as_ptr().cast(), s.len(), &mut out) };
        (ok == 1).then_some(out)
    }

    /// `v` converted exactly (a 64-bit integer fits the extended and quad mantissas).
    pub fn from_i64(v: i64) -> LongDouble {
        let mut out = LongDouble::ZERO;
        // SAFETY: `out` is a writable, aligned cell large enough for a `long double`.
        unsafe { strata_ld_from_i64(v, &mut out) };
        out
    }

    /// `self + other` in `long double`; `None` if the sum is NaN or infinite (redis's
    /// "increment would produce NaN or Infinity").
    pub fn checked_add(&self, other: &LongDouble) -> Option<LongDouble> {
        let mut out = LongDouble::ZERO;
        // SAFETY: both inputs were written by the C side as `long double`s; `out` is a
        // writable, aligned cell.
        unsafe { strata_ld_add(self, other, &mut out) };
        out.is_finite().then_some(out)
    }

    /// Neither NaN nor infinite.
    pub fn is_finite(&self) -> bool {
        // SAFETY: `self` was written by the C side as a `long double`.
        unsafe { strata_ld_is_finite(self) == 1 }
    }

    /// The text redis stores and replies for this value (ld2string LD_STR_HUMAN).
    pub fn to_human(&self) -> String {
        let mut buf = [0u8; MAX_LONG_DOUBLE_CHARS];
        // SAFETY: `buf` is writable for `buf.len()` bytes and the C side writes at most that
        // many (snprintf's bound) and returns how many it wrote, or -1.
        let n = unsafe { strata_ld_format_human(self, buf.as_mut_ptr().cast(), buf.len()) };
        finish(&buf, n)
    }
}

/// A double as redis-server 7.0 replies it: `%.17g`, infinities as `inf` / `-inf`. (Scores
/// are never NaN; a NaN prints as `nan`, which is what `%.17g` prints.)
pub fn format_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // `%.17g` of a finite double is at most 24 bytes ("-1.2345678901234567e-308").
    let mut buf = [0u8; 32];
    // SAFETY: `buf` is writable for `buf.len()` bytes; snprintf writes at most that many.
    let n = unsafe { strata_double_format_g17(d, buf.as_mut_ptr().cast(), buf.len()) };
    finish(&buf, n)
}

/// The `n` bytes the C side wrote into a stack buffer (ASCII), copied once into the result;
/// the impossible overflow is reported as text rather than a panic.
fn finish(buf: &[u8], n: c_int) -> String {
    match usize::try_from(n) {
        Ok(n) if n <= buf.len() => String::from_utf8_lossy(&buf[..n]).into_owned(),
        _ => "nan".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(cur: &str, by: &str) -> Option<String> {
        let a = LongDouble::parse(cur.as_bytes())?;
        let b = LongDouble::parse(by.as_bytes())?;
        a.checked_add(&b).map(|s| s.to_human())
    }

    /// Expected texts are redis-server 7.0.15's replies (x86-64, glibc) to
    /// `SET k <cur>` + `INCRBYFLOAT k <by>`.
    #[test]
    fn incrbyfloat_matches_redis() {
        for (cur, by, want) in [
            ("4.071", "-0.25", "3.821"),
            ("10.50", "0.1", "10.6"),
            ("0", "0.1", "0.1"),
            ("5.0e3", "2.0e2", "5200"),
            ("1", "-1", "0"),
            ("0", "-0", "0"),
            ("3.0", "0.00000000000000001", "3.00000000000000001"),
            ("1e20", "1", "100000000000000000000"), // 1 is below half an ulp
            ("1.1", "2.2", "3.3"),
            ("0.1", "0.2", "0.3"),
            ("-1.5", "0", "-1.5"),
            ("1e-4950", "0", "0"),
            ("1.", ".5", "1.5"),
            ("-0", "0", "0"),
            ("0x10", "1", "17"),
            ("1e-20", "0", "0"),
        ] {
            assert_eq!(incr(cur, by).as_deref(), Some(want), "{cur} + {by}");
        }
    }

    #[test]
    fn parsing_follows_string2ld() {
        for bad in [
            "", " 1", "1 ", "abc", "nan", "-nan", "1e99999", "-1e99999", "1e-99999", "1x", "\t2",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(LongDouble::parse(b"\0\0").is_none());
        assert!(LongDouble::parse(b"1\0").is_none());
        for good in [
            "1",
            "-0",
            "inf",
            "-infinity",
            "1e-4950",
            "0x1p3",
            "1.",
            ".5",
        ] {
            assert!(LongDouble::parse(good.as_bytes()).is_some(), "{good:?}");
        }
        assert!(LongDouble::parse(&vec![b'1'; MAX_LONG_DOUBLE_CHARS]).is_none());
        // An infinite operand or sum is refused.
        assert_eq!(incr("inf", "1"), None);
        assert_eq!(incr("1", "-inf"), None);
        assert_eq!(incr("1.18e4932", "1.18e4932"), None);
        assert_eq!(LongDouble::from_i64(-7).to_human(), "-7");
        assert_eq!(
            LongDouble::from_i64(i64::MIN).to_human(),
            "-9223372036854775808"
        );
    }

    #[test]
    fn doubles_print_as_redis_7_0() {
        for (d, want) in [
            (1.1, "1.1000000000000001"),
            (1.5, "1.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (3.0, "3"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(format_double(d), want, "{d:e}");
        }
    }
}
