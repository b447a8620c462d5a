//! The seam every compaction policy plugs into (DESIGN.md, "One seam for the policies").
//!
//! - [`PickerInput`]: a read-only snapshot of what a picker may look at — the version (levels of
//!   sorted runs), the tables already being compacted, the level-sizing options, placement, the
//!   bytes running jobs are about to write to the fast tier, and per-table statistics (HotRAP's
//!   hot bytes; LogStore's temperatures, tier costs and deferral state).
//! - [`CompactionPolicy`]: a pure `pick` over that input. Leveled picking (with HotRAP's
//!   hot-aware scoring when hot bytes are present) is [`LeveledPolicy`]; the split forest
//!   ([`super::SplitForestPolicy`]) and LogStore ([`super::LogStorePolicy`]) implement the same
//!   trait.
//! - What a job does with its outputs (the tier, HotRAP's per-key routing of hot records to a
//!   fast-tier output, promoted records merged in) is data in the [`super::CompactionJob`],
//!   which any [`super::CompactionRunner`] executes the same way.
//!
//! Depends on `version`, `tier::placement`; never on `db`.

use std::collections::{HashMap, HashSet};

use super::picker::{pick_compaction, Pick, PickerOptions};
use crate::tier::temperature::TemperatureSnapshot;
use crate::tier::{tier_for_level, Placement, Tier};
use crate::version::Version;

/// Everything a picker may read. Built under the database lock, read without it.
pub struct PickerInput<'a> {
    /// The current version: each level's sorted runs of tables.
    pub version: &'a Version,
    /// Ids of tables in running compactions.
    pub busy: &'a HashSet<u64>,
    /// Level sizing and the L0 trigger.
    pub options: &'a PickerOptions,
    /// Which levels go on which tier, and the fast-tier budget.
    pub placement: &'a Placement,
    /// Input bytes of running jobs whose outputs go to the fast tier (counted against the
    /// fast-tier budget before they land).
    pub running_fast_bytes: u64,
    /// HotRAP: estimated hot bytes of each table of the last fast level (empty when off).
    pub hot_bytes: &'a HashMap<u64, u64>,
    /// HotRAP is on: the last fast level is scored and picked hot-aware.
    pub hot_aware: bool,
    /// LogStore: table temperatures, tier costs and the deferral state (`None`: static
    /// placement).
    pub temperature: Option<&'a TemperatureSnapshot>,
    /// Key ranges running jobs write into each level.
    pub writing: &'a [super::picker::Writing],
    /// The capacity tier is down (its health, `stats/health.rs`): compactions that would
    /// read or write it are not picked, so the fast tier's own compactions go on during an
    /// outage instead of queueing behind retries that fail.
    pub capacity_down: bool,
}

impl PickerInput<'_> {
    /// Where tables written into `level` go now, fast-tier budget included.
    pub fn tier_for(&self, level: usize) -> Tier {
        tier_for_level(
            self.placement,
            level,
            self.version.deepest_non_empty(),
            self.version.fast_bytes() + self.running_fast_bytes,
        )
    }

    /// Whether `p` needs the capacity tier (writes into it or reads a table on it) while it is
    /// down: such a pick would only fail and hold the fast tier's compactions back.
    pub fn waits_for_capacity(&self, p: &Pick) -> bool {
        self.capacity_down
            && (p.output_tier == Tier::Capacity
                || p.inputs
                    .iter()
                    .flat_map(|(_, files)| files)
                    .any(|f| f.tier == Tier::Capacity))
    }

    /// Where `level` belongs, ignoring the budget.
    pub fn level_tier(&self, level: usize) -> Tier {
        tier_for_level(self.placement, level, self.version.deepest_non_empty(), 0)
    }

    /// The level whose compactions go from the fast tier into the capacity tier, when HotRAP
    /// scores it hot-aware.
    pub fn hot_aware_level(&self) -> Option<usize> {
        if !self.hot_aware || !self.placement.has_capacity {
            return None;
        }
        let l = self
            .placement
            .last_fast_level(self.version.deepest_non_empty(), 0);
        (l >= 1 && l + 1 < self.version.num_levels()).then_some(l)
    }
}

/// A compaction policy: picks the next compaction from a read-only snapshot.
pub trait CompactionPolicy: Send + Sync {
    /// The most urgent compaction, or `None` when the tree is in shape.
    fn pick(&self, input: &PickerInput<'_>) -> Option<Pick>;
    /// The policy's name: `"leveled"`, `"split-forest"` or `"logstore"`.
    fn name(&self) -> &'static str;
}

/// RocksDB-style leveled compaction with dynamic level sizing and HotRAP's hot-aware scoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeveledPolicy;

impl CompactionPolicy for LeveledPolicy {
    fn pick(&self, input: &PickerInput<'_>) -> Option<Pick> {
        pick_compaction(input)
    }
    fn name(&self) -> &'static str {
        "leveled"
    }
}
