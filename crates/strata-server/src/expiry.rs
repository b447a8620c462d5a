//! Key expiry: the clock, expiry arithmetic with Redis's overflow rules, and the compaction
//! filter that removes expired keys from the engine.
//!
//! Invariants: a value whose expiry is `<= now` is never returned to a client (reads check it;
//! see `store`); the compaction filter removes only database-0 keys whose header decodes and
//! says they expired, and collection sub-keys that `collections::gc` finds stale; it keeps
//! everything else untouched (metadata, undecodable bytes), so it can never destroy data it
//! does not understand. The filter is monotonic in time: once it
//! would remove a record it always would (assuming the wall clock does not step backwards).
//! Depends on `keyspace`, `value`, `collections::gc`; the engine's `CompactionFilter` trait.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use strata::compaction::FilterSpec;
use strata::{CompactionFilter, FilterDecision};

use crate::collections::gc::{self, DbSlot};
use crate::keyspace;
use crate::value;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether a value with `expire_at` is expired at `now`.
pub fn is_expired(expire_at: Option<u64>, now: u64) -> bool {
    expire_at.is_some_and(|at| at <= now)
}

/// The unit of an expiry argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
}

/// Converts a relative (`EX`, `PX`, `EXPIRE`) or absolute (`EXAT`, `PXAT`, `EXPIREAT`) expiry
/// argument to absolute milliseconds, with Redis's overflow checks. `None` means "invalid
/// expire time". The result may be in the past (or negative, clamped to 0): callers treat
/// that as "expire now".
pub fn absolute_ms(value: i64, unit: Unit, relative: bool, now: u64) -> Option<u64> {
    let ms = match unit {
        Unit::Seconds => value.checked_mul(1000)?,
        Unit::Millis => value,
    };
    let at = if relative {
        ms.checked_add(i64::try_from(now).ok()?)?
    } else {
        ms
    };
    Some(at.max(0) as u64)
}

/// The compaction filter: drops expired keys of database 0 and stale collection sub-keys.
pub struct ExpiryFilter {
    /// A fixed clock (a filter rebuilt on a compaction worker); `None`: the wall clock.
    now: Option<u64>,
    removed: Arc<AtomicU64>,
    db: Arc<DbSlot>,
    stale_removed: Arc<AtomicU64>,
}

impl ExpiryFilter {
    /// A filter counting its removals of expired keys in `removed` (reported as
    /// `expired_keys` by INFO). Without a database attached to [`ExpiryFilter::with_db`]'s
    /// slot, sub-keys are all kept.
    pub fn new(removed: Arc<AtomicU64>) -> Self {
        ExpiryFilter {
            now: None,
            removed,
            db: DbSlot::new(),
            stale_removed: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Looks up collection metadata in the database attached to `db`, counting removed stale
    /// sub-keys in `stale_removed`.
    pub fn with_db(mut self, db: Arc<DbSlot>, stale_removed: Arc<AtomicU64>) -> Self {
        self.db = db;
        self.stale_removed = stale_removed;
        self
    }
}

/// The name remote compaction jobs carry the filter by.
pub const FILTER_NAME: &str = "strata-server.expiry";

/// Rebuilds the filter on a compaction worker from a job's spec: expired keys are removed as
/// of the instance's clock when it built the job. The worker has no database to look up
/// collection metadata in, so stale sub-keys are kept (a later local compaction removes
/// them).
pub fn filter_from_spec(spec: &FilterSpec) -> strata::Result<Arc<dyn CompactionFilter>> {
    if spec.name != FILTER_NAME {
        return Err(strata::Error::invalid_argument(format!(
            "not the server's filter: {}",
            spec.name
        )));
    }
    let now = spec
        .params
        .get("now_ms")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| strata::Error::invalid_argument("expiry filter spec without now_ms"))?;
    let mut f = ExpiryFilter::new(Arc::new(AtomicU64::new(0)));
    f.now = Some(now);
    Ok(Arc::new(f))
}

impl CompactionFilter for ExpiryFilter {
    fn name(&self) -> &str {
        FILTER_NAME
    }

    fn spec(&self) -> Option<FilterSpec> {
        let now = self.now.unwrap_or_else(now_ms);
        Some(FilterSpec {
            name: FILTER_NAME.to_string(),
            params: [("now_ms".to_string(), now.to_string())].into(),
        })
    }

    fn filter(&self, _level: usize, key: &[u8], value: &[u8]) -> FilterDecision {
        let now = self.now.unwrap_or_else(now_ms);
        if key.first() == Some(&keyspace::NS_SUB) {
            if gc::is_stale(&self.db, key, now) {
                self.stale_removed.fetch_add(1, Ordering::Relaxed);
                return FilterDecision::Remove;
            }
            return FilterDecision::Keep;
        }
        if keyspace::user_key(key).is_none() {
            return FilterDecision::Keep;
        }
        match value::expiry_of(value) {
            Ok(Some(at)) if at <= now => {
                self.removed.fetch_add(1, Ordering::Relaxed);
                FilterDecision::Remove
            }
            _ => FilterDecision::Keep,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{encode, ValueType};

    #[test]
    fn arithmetic_follows_redis() {
        assert_eq!(absolute_ms(10, Unit::Seconds, true, 1000), Some(11_000));
        assert_eq!(absolute_ms(10, Unit::Millis, false, 1000), Some(10));
        assert_eq!(absolute_ms(i64::MAX, Unit::Seconds, true, 0), None);
        assert_eq!(absolute_ms(i64::MAX, Unit::Millis, true, 5), None);
        assert_eq!(absolute_ms(-5, Unit::Seconds, false, 0), Some(0));
    }

    #[test]
    fn filter_removes_only_expired_data() {
        let n = Arc::new(AtomicU64::new(0));
        let f = ExpiryFilter::new(n.clone());
        let k = keyspace::data_key(b"a");
        let past = encode(ValueType::String, Some(1), b"v");
        let future = encode(ValueType::String, Some(u64::MAX), b"v");
        let none = encode(ValueType::String, None, b"v");
        assert_eq!(f.filter(1, &k, &past), FilterDecision::Remove);
        assert_eq!(f.filter(1, &k, &future), FilterDecision::Keep);
        assert_eq!(f.filter(1, &k, &none), FilterDecision::Keep);
        assert_eq!(f.filter(1, &k, b"garbage"), FilterDecision::Keep);
        assert_eq!(
            f.filter(1, keyspace::FORMAT_KEY, &past),
            FilterDecision::Keep
        );
        assert_eq!(n.load(Ordering::Relaxed), 1);
    }
}
