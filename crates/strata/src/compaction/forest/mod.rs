//! SifrDB's split MS-forest compaction (papers/sifrdb.txt §4): each level below L0 holds
//! several *trees* (sorted runs of fixed-size, disjoint tables, recorded per table in the
//! manifest); when a level has collected `trees_per_level` trees they are merged into one new
//! tree of the next level (the last level merges into itself), but only tables whose ranges
//! overlap are read and rewritten — the rest move into the new tree by metadata alone, so
//! sequential writes cost about one write per byte while random writes keep the forest's low
//! write amplification. A long merge cleans early: every `cleaning_threshold` sealed outputs
//! it installs its progress (the compaction journal, a manifest edit), and the inputs it has
//! passed are deleted, bounding the space a merge holds.
//!
//! - [`plan`]: the pure merge plan (which tables move, which merge).
//! - [`SplitForestPolicy`]: the pure picker (resume an interrupted merge, L0, full levels,
//!   then tables on the wrong tier).
//! - [`run_forest_merge`]: the executor, handing [`Checkpoint`]s to the engine.
//!
//! Reads stay correct while inputs disappear: a tree's cut (set by each checkpoint) hides its
//! keys below the cut, which the output tree serves (SifrDB's redirection map), and a reader
//! that pinned an older version keeps its tables alive through reference counts (what SifrDB's
//! "twice check" does by tagging). Depends on `version`, `iter`, the compaction executor; never
//! on `db`.

pub mod merge;
pub mod plan;
pub mod policy;

pub use merge::{run_forest_merge, Checkpoint};
pub use plan::{plan, PlannedTable, Segment};
pub use policy::{level_merge, SplitForestPolicy};

/// Tuning of the split forest (SifrDB §4–5 defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct ForestOptions {
    /// Trees a level collects before they are merged into the next level (the forest's growth
    /// factor; 4 in the paper's evaluation).
    pub trees_per_level: usize,
    /// Sealed output tables between early-cleaning checkpoints (10 in the paper; 0 turns
    /// early cleaning off, and a merge then holds its inputs until it ends).
    pub cleaning_threshold: usize,
    /// Threads probing candidate tables of a point lookup in parallel (16 in the paper; 0 or
    /// 1 searches sequentially). Parallel search starts only when at least two candidates are
    /// on the capacity tier, where each probe is a network request.
    pub search_threads: usize,
}

impl Default for ForestOptions {
    fn default() -> Self {
        ForestOptions {
            trees_per_level: 4,
            cleaning_threshold: 10,
            search_threads: 16,
        }
    }
}
