//! Target `server_value`: the server's stored-value decoder (`strata_server::value::decode`,
//! `peek`, `expiry_of`).
//!
//! Properties: the three decoders agree; a value of a known type re-encodes to exactly its
//! input bytes.

use bytes::Bytes;
use strata_server::value::{decode, encode, expiry_of, peek, ValueType};

pub fn run(data: &[u8]) {
    let full = decode(Bytes::copy_from_slice(data));
    let head = peek(data);
    let exp = expiry_of(data);
    assert_eq!(full.is_ok(), head.is_ok(), "decode and peek disagree");
    assert_eq!(full.is_ok(), exp.is_ok(), "decode and expiry_of disagree");
    let (Ok(e), Ok((t, at)), Ok(at2)) = (full, head, exp) else {
        return;
    };
    assert_eq!((e.vtype, e.expire_at), (t, at));
    assert_eq!(at, at2);
    if let Some(t) = e.vtype {
        assert_eq!(encode(t, e.expire_at, &e.payload), data, "value round trip");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    vec![
        encode(ValueType::String, None, b"hello"),
        encode(ValueType::String, Some(1_700_000_000_000), b"world"),
        encode(ValueType::String, Some(u64::MAX), b""),
    ]
}
