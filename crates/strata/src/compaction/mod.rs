//! Compaction: what to compact (pickers, pure functions of a version), the self-contained job
//! description, and the executor that runs a job given only storage handles.
//!
//! Invariants: a job never changes a version; its result is installed by the caller with one
//! manifest edit. The executor drops a record only when no snapshot can observe it (a newer
//! record of the same key lies in the same snapshot stripe, a newer range tombstone in the same
//! stripe covers it, or it is a tombstone in the oldest stripe at the bottommost level).
//! Depends on `sst`, `iter`, `version`, `cache`, `storage`, `range_del`; never on `db`.

pub mod executor;
pub mod filter;
pub mod job;
pub mod picker;
pub mod rate_limiter;

pub use executor::{run_compaction, write_tables, CompactionEnv, CompactionResult};
pub use filter::{CompactionFilter, FilterDecision};
pub use job::{CompactionInput, CompactionJob, CompactionReason};
pub use picker::{level_targets, pick_compaction, LevelTargets, Pick, PickerOptions};
pub use rate_limiter::RateLimiter;
