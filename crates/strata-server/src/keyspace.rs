//! How the server lays out its data in the engine's single key space.
//!
//! Every engine key starts with a one-byte namespace:
//!
//! | prefix | contents |
//! |---|---|
//! | `0x01` | server metadata (`0x01 "format"` → the layout version, [`LAYOUT_VERSION`]) |
//! | `0x02` | function libraries: `0x02 ‖ library name` → `0x01 ‖ library code` (FUNCTION LOAD) |
//! | `0x10` | database 0: `0x10 ‖ hash32(user key) ‖ user key` → an encoded value (see `value`) |
//! | `0x11` | elements of database 0's collections (hashes, lists, sets, sorted sets): see `collections::subkey` |
//!
//! `hash32` is the first four bytes (big-endian) of the XXH3-64 hash of the user key. Redis
//! keys usually share long prefixes (`user:`, `session:`, `key:0000…`), which would make every
//! engine key comparison run past the first eight bytes (the part the memtable keeps inline);
//! the hash makes almost every comparison decided there, which more than halves the memtable's
//! cost per lookup and insert. Redis semantics need no key order (SCAN's order is unspecified),
//! so the only loss is that KEYS/SCAN with a literal-prefix pattern cannot seek to the prefix —
//! they scan the namespace, as Redis does.
//!
//! Invariants: a user key maps to exactly one engine key and back; all of database 0 lies in
//! `[DB0_START, DB0_END)`, so FLUSHDB is one range delete and SCAN/KEYS/DBSIZE iterate one
//! bounded range. Other prefixes are reserved (future databases and types). Changing the hash
//! or its length changes the on-disk layout and needs a new [`LAYOUT_VERSION`].
//! Depends on nothing else in the crate (the engine's key-size limit only).

use xxhash_rust::xxh3::xxh3_64;

/// Namespace byte of server metadata.
pub const NS_META: u8 = 0x01;
/// Namespace byte of function libraries.
pub const NS_FUNCTIONS: u8 = 0x02;
/// First engine key of the function libraries (inclusive).
pub const FUNCTIONS_START: &[u8] = &[NS_FUNCTIONS];
/// End of the function libraries (exclusive).
pub const FUNCTIONS_END: &[u8] = &[NS_FUNCTIONS + 1];
/// Version byte leading a stored library's code.
pub const FUNCTION_VALUE_VERSION: u8 = 1;

/// The engine key of the function library `name`.
pub fn function_key(name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + name.len());
    k.push(NS_FUNCTIONS);
    k.extend_from_slice(name.as_bytes());
    k
}

/// Namespace byte of database 0.
pub const NS_DB0: u8 = 0x10;
/// First engine key of database 0 (inclusive).
pub const DB0_START: &[u8] = &[NS_DB0];
/// End of database 0 (exclusive).
pub const DB0_END: &[u8] = &[NS_DB0 + 1];
/// Namespace byte of collection sub-keys (database 0).
pub const NS_SUB: u8 = 0x11;
/// First engine key of the sub-key namespace (inclusive).
pub const SUB_START: &[u8] = &[NS_SUB];
/// End of the sub-key namespace (exclusive).
pub const SUB_END: &[u8] = &[NS_SUB + 1];
/// The metadata key holding the layout version.
pub const FORMAT_KEY: &[u8] = b"\x01format";
/// The layout version this build writes and reads.
pub const LAYOUT_VERSION: &[u8] = b"strata-server-layout/1";
/// Bytes of the key hash after the namespace byte.
pub const HASH_LEN: usize = 4;
/// Bytes an engine key adds to a user key.
pub const OVERHEAD: usize = 1 + HASH_LEN;

/// Largest user key: the engine's limit less the namespace byte and the hash.
pub const MAX_USER_KEY: usize = strata::MAX_KEY_SIZE - OVERHEAD;

/// The engine key for `user_key` in database 0.
pub fn data_key(user_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + OVERHEAD);
    push_data_key(&mut k, user_key);
    k
}

/// Calls `f` with the engine key for `user_key` in database 0, built on the stack when it is
/// short (most keys): for a write that copies the key into its batch anyway, a heap
/// allocation per key would be wasted.
pub fn with_data_key<R>(user_key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    const STACK: usize = 64;
    let n = user_key.len() + OVERHEAD;
    if n > STACK {
        return f(&data_key(user_key));
    }
    let mut buf = [0u8; STACK];
    buf[..OVERHEAD].copy_from_slice(&data_key_prefix(user_key));
    buf[OVERHEAD..n].copy_from_slice(user_key);
    f(&buf[..n])
}

/// Appends the engine key for `user_key` in database 0 to `buf` (several keys in one buffer).
pub fn push_data_key(buf: &mut Vec<u8>, user_key: &[u8]) {
    buf.extend_from_slice(&data_key_prefix(user_key));
    buf.extend_from_slice(user_key);
}

/// What a data key puts before the user key: the namespace byte and the key hash.
fn data_key_prefix(user_key: &[u8]) -> [u8; OVERHEAD] {
    let mut p = [NS_DB0; OVERHEAD];
    p[1..].copy_from_slice(&key_hash(user_key).to_be_bytes());
    p
}

/// The 32-bit key hash that follows the namespace byte (of data keys and sub-keys).
pub fn key_hash(user_key: &[u8]) -> u32 {
    (xxh3_64(user_key) >> 32) as u32
}

/// The user key of an engine key of database 0, or `None` for any other namespace.
pub fn user_key(engine_key: &[u8]) -> Option<&[u8]> {
    match engine_key.split_first() {
        Some((&NS_DB0, rest)) if rest.len() >= HASH_LEN => Some(&rest[HASH_LEN..]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stack-built key is `data_key`'s, short or long.
    #[test]
    fn with_data_key_is_data_key() {
        for len in [0, 1, 16, 58, 59, 60, 64, 65, 300] {
            let k: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            with_data_key(&k, |d| assert_eq!(d, &data_key(&k)[..], "len {len}"));
        }
    }

    #[test]
    fn round_trip_and_bounds() {
        for k in [&b"user:1"[..], b"", &[0xff; 10], &[0x00; 3]] {
            let e = data_key(k);
            assert_eq!(user_key(&e), Some(k));
            assert!(e.as_slice() >= DB0_START && e.as_slice() < DB0_END);
        }
        assert_eq!(user_key(FORMAT_KEY), None);
        assert_eq!(user_key(b"\x10ab"), None);
    }

    #[test]
    fn shared_prefixes_differ_in_the_first_eight_bytes() {
        let a = data_key(b"key:000000000001");
        let b = data_key(b"key:000000000002");
        assert_ne!(a[..8], b[..8]);
    }
}
