//! Target `server_float`: the server's redis-exact float arithmetic and text
//! (`strata_server::redis_float`), which hands client bytes to C's `strtold` and prints with
//! `snprintf`.
//!
//! Input: the bytes up to the first `|` are the stored value, the rest the increment (as
//! INCRBYFLOAT gets them); the first 8 bytes also read as a double.
//!
//! Properties: nothing panics or overruns; a parsed value prints as plain ASCII digits (with
//! `-` and `.`) that parse again; adding a parsed zero leaves the printed value unchanged; a
//! sum that is accepted is finite and prints; `format_double` of a finite double reads back as
//! exactly that double (`%.17g` round-trips), and prints `inf`/`-inf` for the infinities.

use strata_server::redis_float::{format_double, LongDouble};

pub fn run(data: &[u8]) {
    let (cur, incr) = match data.iter().position(|&b| b == b'|') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let zero = LongDouble::from_i64(0);
    for part in [cur, incr] {
        if let Some(v) = LongDouble::parse(part) {
            if !v.is_finite() {
                assert!(v.checked_add(&zero).is_none(), "an infinite sum accepted");
                continue;
            }
            let text = v.to_human();
            assert!(!text.is_empty(), "empty text");
            assert!(
                text.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'.'),
                "unexpected text {text:?}"
            );
            assert!(LongDouble::parse(text.as_bytes()).is_some(), "{text:?} does not parse");
            let same = v.checked_add(&zero).expect("x + 0 is finite");
            assert_eq!(same.to_human(), text, "x + 0 printed differently");
        }
    }
    if let (Some(a), Some(b)) = (LongDouble::parse(cur), LongDouble::parse(incr)) {
        if let Some(sum) = a.checked_add(&b) {
            assert!(sum.is_finite());
            assert!(!sum.to_human().is_empty());
        }
    }
    let mut eight = [0u8; 8];
    let n = data.len().min(8);
    eight[..n].copy_from_slice(&data[..n]);
    let d = f64::from_le_bytes(eight);
    let text = format_double(d);
    if d.is_nan() {
        return;
    }
    if d.is_infinite() {
        assert_eq!(text, if d > 0.0 { "inf" } else { "-inf" });
        return;
    }
    let back: f64 = text.parse().unwrap_or_else(|_| panic!("{text:?} is not a float"));
    assert_eq!(back.to_bits(), d.to_bits(), "{d:e} printed as {text:?}");
}

pub fn seeds() -> Vec<Vec<u8>> {
    vec![
        b"4.071|-0.25".to_vec(),
        b"10.50|0.1".to_vec(),
        b"1e308|1e308".to_vec(),
        b"1e4932|1e4932".to_vec(),
        b"0x1p3|inf".to_vec(),
        b" 1|1 ".to_vec(),
        b"-0|0".to_vec(),
        b"1e-4950|nan".to_vec(),
        1.1f64.to_le_bytes().to_vec(),
        f64::MIN_POSITIVE.to_le_bytes().to_vec(),
    ]
}
