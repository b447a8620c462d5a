//! How the server lays out its data in the engine's single key space.
//!
//! Every engine key starts with a one-byte namespace:
//!
//! | prefix | contents |
//! |---|---|
//! | `0x01` | server metadata (`0x01 "format"` → the layout version, [`LAYOUT_VERSION`]) |
//! | `0x10` | database 0: `0x10 ‖ user key` → an encoded value (see `value`) |
//!
//! Invariants: a user key maps to exactly one engine key and back; all of database 0 lies in
//! `[DB0_START, DB0_END)`, so FLUSHDB is one range delete and SCAN/KEYS/DBSIZE iterate one
//! bounded range. Other prefixes are reserved (future databases and types).
//! Depends on nothing else in the crate (the engine's key-size limit only).

/// Namespace byte of server metadata.
pub const NS_META: u8 = 0x01;
/// Namespace byte of database 0.
pub const NS_DB0: u8 = 0x10;
/// First engine key of database 0 (inclusive).
pub const DB0_START: &[u8] = &[NS_DB0];
/// End of database 0 (exclusive).
pub const DB0_END: &[u8] = &[NS_DB0 + 1];
/// The metadata key holding the layout version.
pub const FORMAT_KEY: &[u8] = b"\x01format";
/// The layout version this build writes and reads.
pub const LAYOUT_VERSION: &[u8] = b"strata-server-layout/1";

/// Largest user key: the engine's limit less the namespace byte.
pub const MAX_USER_KEY: usize = strata::MAX_KEY_SIZE - 1;

/// The engine key for `user_key` in database 0.
pub fn data_key(user_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + 1);
    k.push(NS_DB0);
    k.extend_from_slice(user_key);
    k
}

/// The user key of an engine key of database 0, or `None` for any other namespace.
pub fn user_key(engine_key: &[u8]) -> Option<&[u8]> {
    match engine_key.split_first() {
        Some((&NS_DB0, rest)) => Some(rest),
        _ => None,
    }
}

/// The exclusive upper bound of engine keys starting with `prefix` (of database 0): the
/// smallest key greater than every key with that prefix.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = data_key(prefix);
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return end;
        }
    }
    DB0_END.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let k = data_key(b"user:1");
        assert_eq!(user_key(&k), Some(&b"user:1"[..]));
        assert!(k.as_slice() >= DB0_START && k.as_slice() < DB0_END);
        assert!(data_key(b"").as_slice() >= DB0_START);
        assert!(data_key(&[0xff; 10]).as_slice() < DB0_END);
        assert_eq!(user_key(FORMAT_KEY), None);
        assert_eq!(prefix_end(b"ab"), b"\x10ac");
        assert_eq!(prefix_end(b"a\xff"), b"\x10b");
        assert_eq!(prefix_end(b""), DB0_END);
        assert_eq!(prefix_end(b"\xff\xff"), DB0_END);
    }
}
