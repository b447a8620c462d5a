//! Little-endian fixed-width and LEB128 varint encoding used by every on-disk format.
//! Decoders never panic on short or malformed input: they return `None` and the caller turns
//! that into a corruption error with context. Depends on nothing else in the crate.

pub fn put_fixed32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

pub fn put_fixed64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

pub fn decode_fixed32(b: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

pub fn decode_fixed64(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?))
}

pub fn put_varint64(buf: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 10];
    let n = encode_varint64(&mut b, v);
    buf.extend_from_slice(&b[..n]);
}

/// Writes `v` as a varint into `buf`; returns its length (1..=10).
pub fn encode_varint64(buf: &mut [u8; 10], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    n + 1
}

pub fn put_varint32(buf: &mut Vec<u8>, v: u32) {
    put_varint64(buf, v as u64)
}

/// Decodes a varint at the start of `b`; returns the value and the bytes consumed.
#[inline]
pub fn decode_varint64(b: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

#[inline]
pub fn decode_varint32(b: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = decode_varint64(b)?;
    if n > 5 || v > u32::MAX as u64 {
        return None;
    }
    Some((v as u32, n))
}

pub fn put_length_prefixed(buf: &mut Vec<u8>, s: &[u8]) {
    put_varint64(buf, s.len() as u64);
    buf.extend_from_slice(s);
}

/// A cursor over untrusted bytes: every read checks bounds.
pub struct Decoder<'a> {
    pub buf: &'a [u8],
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = decode_varint64(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = decode_varint32(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    pub fn fixed64(&mut self) -> Option<u64> {
        let v = decode_fixed64(self.buf)?;
        self.buf = &self.buf[8..];
        Some(v)
    }
    pub fn fixed32(&mut self) -> Option<u32> {
        let v = decode_fixed32(self.buf)?;
        self.buf = &self.buf[4..];
        Some(v)
    }
    pub fn u8(&mut self) -> Option<u8> {
        let (&v, rest) = self.buf.split_first()?;
        self.buf = rest;
        Some(v)
    }
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Some(a)
    }
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.varint64()?;
        self.bytes(usize::try_from(n).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip_and_truncation() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(decode_varint64(&b), Some((v, b.len())));
            assert_eq!(decode_varint64(&b[..b.len() - 1]), None);
        }
        let mut b = Vec::new();
        put_varint64(&mut b, u32::MAX as u64 + 1);
        assert_eq!(decode_varint32(&b), None);
    }
}
