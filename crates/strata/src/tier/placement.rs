//! Level placement (RocksMash §3.1, RocksDB's `last_level_temperature`): which tier the
//! tables written into a level go to. Pure functions over the level shape.
//!
//! The default is **relative to the bottom**: the last `capacity_levels` levels in use live on
//! the capacity tier and every level above them on the fast tier, so with a size ratio of 10
//! the fast tier holds about a tenth of the bytes whatever the data size. "In use" means: with
//! dynamic level sizing data always settles in the last configured level, so the bottom is the
//! last level; with static sizing the bottom is the deepest non-empty level (or the level being
//! written, if deeper). When the bottom moves down, tables of a level that became fast stay
//! where they are until compaction rewrites them: tables change tiers only by compaction, never
//! by copying outside the manifest.
//!
//! `fast_levels: Some(k)` keeps the older absolute rule (levels `0..=k` fast). Either way a
//! fast-tier byte budget, when set and exceeded, sends the deepest fast level's new tables to
//! the capacity tier, and L0 always stays local (flushes must be fast).
//!
//! Invariant: a level deeper than a capacity level is never fast. Depends only on [`Tier`].

use super::Tier;

/// The inputs of a placement decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Whether a capacity tier is configured at all.
    pub has_capacity: bool,
    /// Absolute placement: levels `0..=k` are fast. `None`: relative to the bottom.
    pub fast_levels: Option<usize>,
    /// Relative placement: how many levels, counted from the bottom, are on the capacity tier.
    pub capacity_levels: usize,
    /// Levels configured (`Options::num_levels`).
    pub num_levels: usize,
    /// Whether level sizing is dynamic (data settles in the last level).
    pub dynamic: bool,
    /// Bytes the fast tier may hold in tables (`None`: unbounded).
    pub fast_budget: Option<u64>,
}

impl Placement {
    /// The deepest level whose new tables go to the fast tier, for a tree whose deepest
    /// non-empty level is `deepest` (0 when only L0 holds data) and which is about to write
    /// into `writing`. `None` when only L0 is fast.
    pub fn last_fast_level(&self, deepest: usize, writing: usize) -> usize {
        if !self.has_capacity {
            return self.num_levels.saturating_sub(1);
        }
        if let Some(k) = self.fast_levels {
            return k;
        }
        let bottom = if self.dynamic {
            self.num_levels.saturating_sub(1)
        } else {
            deepest.max(writing).max(1)
        };
        bottom.saturating_sub(self.capacity_levels)
    }

    /// The deepest level L0 may compact into and still land on the fast tier: with relative
    /// placement and dynamic sizing, L0's data first settles in the last fast level, so a small
    /// tree's fast tier is not empty while it grows (RocksDB reaches the same with per-key
    /// placement into the penultimate level).
    pub fn max_base_level(&self) -> usize {
        let last = self.num_levels.saturating_sub(1);
        if !self.has_capacity || self.fast_levels.is_some() || !self.dynamic {
            return last;
        }
        last.saturating_sub(self.capacity_levels).max(1)
    }
}

/// The tier for tables written into `level`, given the deepest non-empty level of the tree and
/// the bytes of tables now on the fast tier.
pub fn tier_for_level(p: &Placement, level: usize, deepest: usize, fast_bytes: u64) -> Tier {
    if !p.has_capacity || level == 0 {
        return Tier::Fast;
    }
    let last_fast = p.last_fast_level(deepest, level);
    if level > last_fast {
        return Tier::Capacity;
    }
    match p.fast_budget {
        // The deepest fast level spills over when the budget is spent.
        Some(b) if level == last_fast && fast_bytes >= b => Tier::Capacity,
        _ => Tier::Fast,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abs(has: bool, k: usize, budget: Option<u64>) -> Placement {
        Placement {
            has_capacity: has,
            fast_levels: Some(k),
            capacity_levels: 1,
            num_levels: 7,
            dynamic: true,
            fast_budget: budget,
        }
    }

    fn rel(cap_levels: usize, dynamic: bool, budget: Option<u64>) -> Placement {
        Placement {
            has_capacity: true,
            fast_levels: None,
            capacity_levels: cap_levels,
            num_levels: 7,
            dynamic,
            fast_budget: budget,
        }
    }

    #[test]
    fn placement_table() {
        // (placement, level, deepest non-empty level, fast bytes, expected)
        let cases = [
            // Absolute placement, as before.
            (abs(false, 1, None), 6, 6, 0, Tier::Fast),
            (abs(true, 1, None), 0, 6, 0, Tier::Fast),
            (abs(true, 1, None), 1, 6, 0, Tier::Fast),
            (abs(true, 1, None), 2, 6, 0, Tier::Capacity),
            (abs(true, 0, None), 1, 6, 0, Tier::Capacity),
            (abs(true, 2, Some(100)), 2, 6, 99, Tier::Fast),
            (abs(true, 2, Some(100)), 2, 6, 100, Tier::Capacity),
            (abs(true, 2, Some(100)), 1, 6, 500, Tier::Fast),
            (abs(true, 0, Some(1)), 0, 6, 500, Tier::Fast),
            // Relative, dynamic sizing: only the last level is on the capacity tier.
            (rel(1, true, None), 6, 0, 0, Tier::Capacity),
            (rel(1, true, None), 5, 6, 0, Tier::Fast),
            (rel(1, true, None), 1, 6, 0, Tier::Fast),
            (rel(2, true, None), 5, 6, 0, Tier::Capacity),
            (rel(2, true, None), 4, 6, 0, Tier::Fast),
            (rel(1, true, Some(100)), 5, 6, 100, Tier::Capacity),
            (rel(1, true, Some(100)), 4, 6, 100, Tier::Fast),
            (rel(1, true, None), 0, 6, 0, Tier::Fast),
            // Relative, static sizing: the bottom is the deepest level in use.
            (rel(1, false, None), 1, 0, 0, Tier::Capacity),
            (rel(1, false, None), 1, 2, 0, Tier::Fast),
            (rel(1, false, None), 2, 2, 0, Tier::Capacity),
            (rel(1, false, None), 3, 2, 0, Tier::Capacity),
            (rel(1, false, None), 2, 3, 0, Tier::Fast),
            (rel(2, false, None), 2, 3, 0, Tier::Capacity),
        ];
        for (i, (pl, level, deepest, bytes, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                tier_for_level(&pl, level, deepest, bytes),
                want,
                "case {i}: {pl:?} level {level} deepest {deepest}"
            );
        }
    }

    #[test]
    fn base_level_stays_on_the_fast_tier() {
        assert_eq!(rel(1, true, None).max_base_level(), 5);
        assert_eq!(rel(2, true, None).max_base_level(), 4);
        assert_eq!(rel(9, true, None).max_base_level(), 1);
        assert_eq!(abs(true, 1, None).max_base_level(), 6);
        assert_eq!(rel(1, false, None).max_base_level(), 6);
        let none = Placement {
            has_capacity: false,
            ..rel(1, true, None)
        };
        assert_eq!(none.max_base_level(), 6);
    }
}
