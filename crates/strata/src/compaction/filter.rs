//! The compaction-filter hook: a user function that keeps, removes or rewrites each record as
//! compaction rewrites it (RocksDB's `CompactionFilter`), e.g. to drop expired entries.
//!
//! Contract: the filter sees only the newest version of a key that no live snapshot can see
//! (records snapshots still need are passed through untouched), and only puts. `Remove` turns
//! the record into a deletion (dropped outright at the bottommost level); `ChangeValue`
//! replaces the value and keeps the sequence number. Filters run on compaction threads and
//! must be fast, deterministic for a given input, and `Send + Sync`. Flushes do not filter.
//!
//! Remote compaction (CaaS-LSM) ships a filter by name and parameters ([`FilterSpec`]): a
//! filter whose [`CompactionFilter::spec`] is `Some` can be rebuilt by a worker
//! ([`from_spec`] for the built-in ones, or the worker's own registry); jobs of a database
//! whose filter has no spec always run locally. Time-dependent filters put "now" in the spec,
//! so a worker decides exactly as the instance would have when it built the job.

/// What to do with a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterDecision {
    /// Keeps the record unchanged.
    Keep,
    /// Turns the record into a deletion (dropped outright at the bottommost level).
    Remove,
    /// Replaces the record's value with this one, keeping its sequence number.
    ChangeValue(Vec<u8>),
}

/// A user-supplied compaction filter; see the module docs for the contract.
pub trait CompactionFilter: Send + Sync {
    /// A stable name, for logs.
    fn name(&self) -> &str;
    /// Decides the fate of `key`'s current value during a compaction into `level`.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> FilterDecision;
    /// The filter as a name and parameters a compaction worker can rebuild it from, taken
    /// when a job is built; `None` (the default): the filter cannot leave the process.
    fn spec(&self) -> Option<FilterSpec> {
        None
    }
}

/// A compaction filter described by name and parameters (shipped with remote jobs).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FilterSpec {
    /// The filter's name (e.g. [`TtlFilter::NAME`]), by which a worker rebuilds it.
    pub name: String,
    /// The filter's parameters, by name, as strings.
    pub params: std::collections::BTreeMap<String, String>,
}

impl FilterSpec {
    fn param_u64(&self, key: &str) -> crate::Result<u64> {
        self.params
            .get(key)
            .ok_or_else(|| crate::Error::invalid(format!("filter {}: missing {key}", self.name)))?
            .parse()
            .map_err(|e| crate::Error::invalid(format!("filter {}: {key}: {e}", self.name)))
    }
}

/// Builds a built-in filter from its spec (`strata.ttl`); an unknown name is an error.
pub fn from_spec(spec: &FilterSpec) -> crate::Result<std::sync::Arc<dyn CompactionFilter>> {
    match spec.name.as_str() {
        TtlFilter::NAME => Ok(std::sync::Arc::new(TtlFilter {
            ttl_secs: spec.param_u64("ttl_secs")?,
            now_secs: Some(spec.param_u64("now_secs")?),
        })),
        other => Err(crate::Error::invalid(format!(
            "unknown compaction filter {other:?}"
        ))),
    }
}

/// Time to live, as RocksDB's `DBWithTTL`: every value ends in the 8-byte little-endian Unix
/// time (seconds) it was written at ([`TtlFilter::stamp`]); a value older than `ttl_secs`
/// becomes a deletion. Values shorter than the stamp are kept.
#[derive(Clone, Debug)]
pub struct TtlFilter {
    ttl_secs: u64,
    /// Fixed "now" (a filter rebuilt from a spec); `None`: the clock.
    now_secs: Option<u64>,
}

impl TtlFilter {
    /// The name of the TTL filter in a [`FilterSpec`].
    pub const NAME: &'static str = "strata.ttl";

    /// A filter removing values written `ttl` or longer ago (in whole seconds), by the clock.
    pub fn new(ttl: std::time::Duration) -> Self {
        TtlFilter {
            ttl_secs: ttl.as_secs(),
            now_secs: None,
        }
    }

    /// `value` with its write time appended.
    pub fn stamp(value: &[u8], written_at_secs: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(value.len() + 8);
        v.extend_from_slice(value);
        v.extend_from_slice(&written_at_secs.to_le_bytes());
        v
    }

    fn now(&self) -> u64 {
        self.now_secs.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        })
    }
}

impl CompactionFilter for TtlFilter {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> FilterDecision {
        let Some(stamp) = value.len().checked_sub(8).map(|at| &value[at..]) else {
            return FilterDecision::Keep;
        };
        let written = u64::from_le_bytes(stamp.try_into().expect("8 bytes"));
        if written.saturating_add(self.ttl_secs) <= self.now() {
            FilterDecision::Remove
        } else {
            FilterDecision::Keep
        }
    }

    fn spec(&self) -> Option<FilterSpec> {
        let mut params = std::collections::BTreeMap::new();
        params.insert("ttl_secs".to_string(), self.ttl_secs.to_string());
        params.insert("now_secs".to_string(), self.now().to_string());
        Some(FilterSpec {
            name: Self::NAME.to_string(),
            params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_filter_round_trips_through_its_spec() {
        let f = TtlFilter {
            ttl_secs: 10,
            now_secs: Some(1_000),
        };
        let g = from_spec(&f.spec().expect("spec")).expect("rebuilt");
        // (written at, expected decision)
        let cases = [
            (989, FilterDecision::Remove),
            (990, FilterDecision::Remove),
            (991, FilterDecision::Keep),
            (2_000, FilterDecision::Keep),
        ];
        for (at, want) in cases {
            let v = TtlFilter::stamp(b"payload", at);
            assert_eq!(f.filter(3, b"k", &v), want, "local, written at {at}");
            assert_eq!(g.filter(3, b"k", &v), want, "rebuilt, written at {at}");
        }
        assert_eq!(f.filter(3, b"k", b"short"), FilterDecision::Keep);
        let mut bad = f.spec().expect("spec");
        bad.params.remove("ttl_secs");
        assert!(from_spec(&bad).is_err());
        bad.name = "nope".into();
        assert!(from_spec(&bad).is_err());
    }
}
