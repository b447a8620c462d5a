//! Compaction: what to compact (a [`CompactionPolicy`] over a read-only [`PickerInput`]), the
//! self-contained job description (inputs, output level and tier, HotRAP routing and promoted
//! records), and the executor that runs a job given only storage handles, behind a
//! [`CompactionRunner`].
//!
//! Invariants: a job never changes a version; its result is installed by the caller with one
//! manifest edit. The executor drops a record only when no snapshot can observe it (a newer
//! record of the same key lies in the same snapshot stripe, a newer range tombstone in the same
//! stripe covers it, or it is a tombstone in the oldest stripe at the bottommost level).
//! Depends on `sst`, `iter`, `version`, `cache`, `storage`, `range_del`; never on `db`.

pub mod executor;
pub mod filter;
pub mod forest;
pub mod job;
pub mod logstore;
pub mod picker;
pub mod policy;
pub mod rate_limiter;
pub mod remote;
pub mod runner;

pub use executor::{run_compaction, write_tables, CompactionEnv, CompactionResult, IdReserver};
pub use filter::{CompactionFilter, FilterDecision, FilterSpec, TtlFilter};
pub use forest::{ForestOptions, SplitForestPolicy};
pub use job::{
    CompactionInput, CompactionJob, CompactionReason, ForestMerge, HotRoute, PromotedRecord,
};
pub use logstore::LogStorePolicy;
pub use picker::{level_targets, pick_compaction, ForestPick, LevelTargets, Pick, PickerOptions};
pub use policy::{CompactionPolicy, LeveledPolicy, PickerInput};
pub use rate_limiter::RateLimiter;
pub use runner::{CompactionRunner, LocalRunner};
