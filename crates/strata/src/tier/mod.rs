//! Tiers: where a table lives (the fast local directory or the capacity tier) and the policy
//! that decides it.
//!
//! Owns [`Tier`], the pure placement decision ([`placement`]) and [`TableStore`], the facade
//! through which tables are created, opened and removed on either tier (with the LAP caches in
//! front of the capacity tier), hot-record promotion (`tier/hot`, HotRAP) and table
//! temperatures with the tier cost model (`tier/temperature`, LogStore). Depends on `storage`, `cache::persistent`,
//! `stats`, `checkpoint` (the registry that protects
//! shared tables); never on `db`. The garbage-collection rule for capacity-tier tables is
//! [`gc`]'s.

pub mod gc;
pub mod hot;
pub mod placement;
pub mod shared;
mod tables;
pub mod temperature;

pub use placement::{tier_for_level, Placement};
pub use tables::{local_path, object_name, TableStore, TablesConfig};
pub use temperature::{LogStoreOptions, PlacementPolicy};

/// Where a table's bytes live.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Tier {
    /// The local fast directory.
    #[default]
    Fast,
    /// The capacity tier (object store).
    Capacity,
}

impl Tier {
    /// The tier's byte in a version edit: 0 for fast, 1 for capacity.
    pub fn as_u8(self) -> u8 {
        match self {
            Tier::Fast => 0,
            Tier::Capacity => 1,
        }
    }
    /// The tier of a version-edit byte; `None` for an unknown byte.
    pub fn from_u8(b: u8) -> Option<Tier> {
        match b {
            0 => Some(Tier::Fast),
            1 => Some(Tier::Capacity),
            _ => None,
        }
    }
    /// The tier's name: `"fast"` or `"capacity"`.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Capacity => "capacity",
        }
    }
}
