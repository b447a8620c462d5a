//! Garbage collection of collection sub-keys: the decision the compaction filter (see
//! `expiry::ExpiryFilter`) makes for records of the sub-key namespace.
//!
//! A sub-key is stale — and removed when compaction rewrites it — when its user key's current
//! metadata is absent, expired, not a collection, or a collection of another version: no read
//! can reach it (collections read only the current version's prefix) and, since versions are
//! never reused, none ever will. Invariants: anything this module cannot parse or decide (an
//! undecodable sub-key or metadata record, an engine error, no database attached yet) is
//! kept, so the filter never destroys data it does not understand. The decision reads the
//! latest metadata with `Db::get`, on the compaction thread.
//! Depends on `keyspace`, `value`, `expiry`, `collections::{meta, subkey}` and the engine; must not
//! depend on `commands` or the network layer (it runs on compaction threads).

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use strata::Db;

use super::{meta, subkey};
use crate::expiry::is_expired;
use crate::keyspace;
use crate::value;

/// Where the filter finds the database: set once it is open, cleared before it closes (the
/// filter is part of the database's options, so holding the handle for good would be a cycle).
/// Also remembers the last decision by (user key, version): a compaction meets a collection's
/// sub-keys one after another, so one metadata lookup serves the whole run. Reusing it is safe:
/// a stale collection version never becomes live again (versions are not reused), and a live
/// one that turns stale meanwhile only keeps its garbage until a later compaction.
#[derive(Default)]
pub struct DbSlot {
    db: RwLock<Option<Db>>,
    last: Mutex<Option<(Vec<u8>, bool)>>,
}

impl DbSlot {
    pub fn new() -> Arc<DbSlot> {
        Arc::new(DbSlot::default())
    }

    pub fn attach(&self, db: Db) {
        *self.db.write() = Some(db);
    }

    pub fn detach(&self) {
        *self.db.write() = None;
        *self.last.lock() = None;
    }
}

/// Whether the sub-key `key` is stale at time `now` (ms); `false` when undecidable.
pub fn is_stale(slot: &DbSlot, key: &[u8], now: u64) -> bool {
    let Some(sk) = subkey::parse(key) else {
        return false;
    };
    // The bytes up to and including the version identify (user key, version).
    let id = &key[..key.len() - sk.rest.len() - 1];
    if let Some((last, stale)) = slot.last.lock().as_ref() {
        if last.as_slice() == id {
            return *stale;
        }
    }
    let guard = slot.db.read();
    let Some(db) = guard.as_ref() else {
        return false;
    };
    let stale = match db.get(keyspace::data_key(sk.user_key)) {
        Ok(Some(raw)) => stale_against(&raw, sk.version, now),
        Ok(None) => true,
        Err(_) => return false,
    };
    drop(guard);
    *slot.last.lock() = Some((id.to_vec(), stale));
    stale
}

/// The decision given the user key's current stored value `raw`.
pub fn stale_against(raw: &[u8], version: u64, now: u64) -> bool {
    let Ok((vtype, expire_at)) = value::peek(raw) else {
        return false;
    };
    let Some(vtype) = vtype else { return false };
    if !vtype.is_collection() || is_expired(expire_at, now) {
        return true;
    }
    let off = if expire_at.is_some() {
        value::HEADER_LEN_EXPIRY
    } else {
        value::HEADER_LEN
    };
    match meta::decode(vtype, &raw[off..]) {
        Ok(m) => m.version != version,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{encode, ValueType};

    fn stored(vtype: ValueType, expire_at: Option<u64>, version: u64) -> Vec<u8> {
        let m = meta::Meta {
            version,
            size: 1,
            head: 0,
            tail: 0,
            ..Default::default()
        };
        encode(vtype, expire_at, &meta::encode(vtype, &m))
    }

    #[test]
    fn decisions() {
        assert!(!stale_against(&stored(ValueType::Hash, None, 5), 5, 10));
        assert!(stale_against(&stored(ValueType::Hash, None, 5), 4, 10));
        assert!(stale_against(&stored(ValueType::Set, Some(9), 5), 5, 10));
        assert!(!stale_against(&stored(ValueType::Set, Some(11), 5), 5, 10));
        assert!(stale_against(&encode(ValueType::String, None, b"x"), 5, 10));
        assert!(!stale_against(b"garbage", 5, 10));
        assert!(!stale_against(
            &encode(ValueType::Hash, None, b"short"),
            5,
            10
        ));
    }

    #[test]
    fn undecidable_without_a_database() {
        let slot = DbSlot::new();
        let k = subkey::element(b"h", 1, subkey::ELEM, b"f");
        assert!(!is_stale(&slot, &k, 0));
        assert!(!is_stale(&slot, b"not a subkey", 0));
    }
}
