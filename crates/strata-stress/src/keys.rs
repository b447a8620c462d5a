//! Keys and self-describing values. Key `i` is `k` + 7 decimal digits (so numeric and byte order
//! agree). The value written to key `i` by the write with stress sequence `seq` is a pure function
//! of `(i, seq)`: `"{i}:{seq}:"` followed by filler whose length and bytes derive from a hash of
//! both, so any value read back names the write it came from and is checked byte for byte.

/// The key of index `i`.
pub fn key(i: u64) -> Vec<u8> {
    format!("k{i:07}").into_bytes()
}

/// The index of a key made by [`key`].
pub fn key_index(k: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(k).ok()?.strip_prefix('k')?;
    if s.len() != 7 {
        return None;
    }
    s.parse().ok()
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of key `i` written with sequence `seq`: mostly short, one in ten up to ~4 KiB.
pub fn value(i: u64, seq: u64) -> Vec<u8> {
    let h = mix(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ mix(seq));
    let len = if h.is_multiple_of(10) {
        100 + (h >> 8) % 3900
    } else {
        (h >> 8) % 100
    } as usize;
    let mut v = format!("{i}:{seq}:").into_bytes();
    v.extend((0..len).map(|j| b'a' + ((h >> ((j % 8) * 8)) % 26) as u8));
    v
}

/// The `(key index, seq)` a value claims to come from, if it is exactly that write's value.
pub fn decode_value(v: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(v.get(..v.len().min(48))?).ok()?;
    let mut parts = s.splitn(3, ':');
    let i: u64 = parts.next()?.parse().ok()?;
    let seq: u64 = parts.next()?.parse().ok()?;
    parts.next()?;
    (value(i, seq) == v).then_some((i, seq))
}

/// A printable prefix of a value for reports.
pub fn show(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(&v[..v.len().min(40)]).into_owned();
    if v.len() > 40 {
        format!("{s}... ({} bytes)", v.len())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_describe_themselves() {
        for i in [0, 7, 9_999_999] {
            assert_eq!(key_index(&key(i)), Some(i));
            for seq in [1, 1 << 32, u64::MAX / 3] {
                let v = value(i, seq);
                assert_eq!(decode_value(&v), Some((i, seq)));
                let mut bad = v.clone();
                *bad.last_mut().unwrap() ^= 1;
                assert!(decode_value(&bad).is_none());
            }
        }
        assert_eq!(decode_value(b"junk"), None);
    }
}
