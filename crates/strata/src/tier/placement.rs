//! Level placement (RocksMash §3.1): levels `0..=fast_levels` live on the fast tier, deeper
//! levels on the capacity tier. A fast-tier byte budget, when set and exceeded, moves the
//! deepest fast level's new tables to the capacity tier, so local disk use stays bounded even
//! when the fast levels grow past their targets. Pure functions.

use super::Tier;

/// The inputs of a placement decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Whether a capacity tier is configured at all.
    pub has_capacity: bool,
    /// Levels `0..=fast_levels` are fast.
    pub fast_levels: usize,
    /// Bytes the fast tier may hold in tables (`None`: unbounded).
    pub fast_budget: Option<u64>,
}

/// The tier for tables written into `level`, given the bytes of tables now on the fast tier.
pub fn tier_for_level(p: &Placement, level: usize, fast_bytes: u64) -> Tier {
    if !p.has_capacity {
        return Tier::Fast;
    }
    if level > p.fast_levels {
        return Tier::Capacity;
    }
    match p.fast_budget {
        // L0 always stays local (flushes must be fast); a deeper fast level spills over.
        Some(b) if level > 0 && level == p.fast_levels && fast_bytes >= b => Tier::Capacity,
        _ => Tier::Fast,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_table() {
        let p = |has, k, budget| Placement {
            has_capacity: has,
            fast_levels: k,
            fast_budget: budget,
        };
        // (placement, level, fast bytes, expected)
        let cases = [
            (p(false, 1, None), 6, 0, Tier::Fast),
            (p(true, 1, None), 0, 0, Tier::Fast),
            (p(true, 1, None), 1, 0, Tier::Fast),
            (p(true, 1, None), 2, 0, Tier::Capacity),
            (p(true, 0, None), 1, 0, Tier::Capacity),
            (p(true, 2, Some(100)), 2, 99, Tier::Fast),
            (p(true, 2, Some(100)), 2, 100, Tier::Capacity),
            (p(true, 2, Some(100)), 1, 500, Tier::Fast),
            (p(true, 0, Some(1)), 0, 500, Tier::Fast),
        ];
        for (i, (pl, level, bytes, want)) in cases.into_iter().enumerate() {
            assert_eq!(tier_for_level(&pl, level, bytes), want, "case {i}");
        }
    }
}
