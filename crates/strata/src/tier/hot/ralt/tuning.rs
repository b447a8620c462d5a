//! The pure limit decisions of RALT: when to evict, how much to keep, and Algorithm 1's
//! auto-tuned limits (HotRAP §3.7).
//!
//! After an eviction: `hot_set_limit = clamp(stable_bytes + max_unstable, min, max)` and
//! `physical_limit = R * hot_set_limit` with `R = physical_bytes / hotrap_bytes` of what RALT
//! holds (the paper's average physical-to-HotRAP size ratio), floored at `min_physical` so a
//! tiny hot set does not make every flush evict. Depends on nothing.

/// Share of records an eviction drops (§3.2: 10%, a trade-off between I/O and hit-rate
/// stability).
pub const EVICT_FRACTION: f64 = 0.1;

/// The two limits RALT enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// On the HotRAP size of hot records (and, with auto-tune, their unstable candidates).
    pub hot_set: u64,
    /// On RALT's own bytes on disk.
    pub physical: u64,
}

/// Algorithm 1's constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuningParams {
    pub min_hot_set: u64,
    pub max_hot_set: u64,
    /// D: the HotRAP bytes of unstable records allowed beside the stable ones.
    pub max_unstable: u64,
    pub min_physical: u64,
}

/// The size to evict down to when `size` exceeds `limit`: `(1 - EVICT_FRACTION) * min(size,
/// limit)`, so a slightly-over RALT drops about 10%. `None` when within the limit.
pub fn eviction_target(size: u64, limit: u64) -> Option<u64> {
    if size <= limit {
        return None;
    }
    Some((limit as f64 * (1.0 - EVICT_FRACTION)) as u64)
}

/// Algorithm 1, lines 18–21: the limits after an eviction that left `stable_bytes` of stable
/// records, `hotrap_bytes` of records in total and `physical_bytes` on disk.
pub fn tune(
    stable_bytes: u64,
    hotrap_bytes: u64,
    physical_bytes: u64,
    prev: Limits,
    p: &TuningParams,
) -> Limits {
    let hot_set = stable_bytes
        .saturating_add(p.max_unstable)
        .clamp(p.min_hot_set, p.max_hot_set.max(p.min_hot_set));
    let physical = if hotrap_bytes == 0 {
        // Nothing to measure R on: keep the previous ratio.
        let r = prev.physical as f64 / prev.hot_set.max(1) as f64;
        (hot_set as f64 * r) as u64
    } else {
        (hot_set as f64 * physical_bytes as f64 / hotrap_bytes as f64).ceil() as u64
    };
    Limits {
        hot_set,
        physical: physical.max(p.min_physical),
    }
}

/// `limits` moved into new bounds `p`: the hot-set limit clamped into `[min_hot_set,
/// max_hot_set]`, the physical limit scaled with it (keeping their ratio, floored at
/// `min_physical`). Unchanged when the hot-set limit is already within the bounds.
pub fn rescale(limits: Limits, p: &TuningParams) -> Limits {
    let hot_set = limits
        .hot_set
        .clamp(p.min_hot_set, p.max_hot_set.max(p.min_hot_set));
    if hot_set == limits.hot_set {
        return limits;
    }
    let r = limits.physical as f64 / limits.hot_set.max(1) as f64;
    Limits {
        hot_set,
        physical: ((hot_set as f64 * r).ceil() as u64).max(p.min_physical),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: TuningParams = TuningParams {
        min_hot_set: 100,
        max_hot_set: 1000,
        max_unstable: 50,
        min_physical: 20,
    };
    const PREV: Limits = Limits {
        hot_set: 500,
        physical: 150,
    };

    #[test]
    fn eviction_target_table() {
        for (size, limit, want) in [
            (100, 100, None),
            (50, 100, None),
            (101, 100, Some(90)),
            (1000, 100, Some(90)),
            (1, 0, Some(0)),
        ] {
            assert_eq!(eviction_target(size, limit), want, "{size}/{limit}");
        }
    }

    #[test]
    fn tune_table() {
        // (stable, hotrap, physical, want hot, want physical)
        let cases = [
            (0, 0, 0, 100, 30),        // uniform: nothing stable → minimum, previous R (0.3)
            (0, 1000, 100, 100, 20),   // R = 0.1 → 10, floored at 20
            (400, 1000, 200, 450, 90), // stable + D, R = 0.2
            (2000, 4000, 400, 1000, 100), // capped at the maximum
            (60, 120, 120, 110, 110),  // R = 1
        ];
        for (stable, hotrap, phys, hot, physical) in cases {
            let got = tune(stable, hotrap, phys, PREV, &P);
            assert_eq!(
                got,
                Limits {
                    hot_set: hot,
                    physical
                },
                "stable {stable} hotrap {hotrap} physical {phys}"
            );
        }
    }

    #[test]
    fn rescale_table() {
        // (hot, physical) before → after, bounds P ([100, 1000], min physical 20)
        for ((h, ph), (wh, wph)) in [
            ((500, 150), (500, 150)),    // within bounds: unchanged
            ((50, 15), (100, 30)),       // below: raised, ratio 0.3 kept
            ((4000, 1200), (1000, 300)), // above: lowered, ratio kept
            ((4000, 40), (1000, 20)),    // ratio 0.01 → 10, floored at 20
            ((0, 0), (100, 20)),         // no limit yet: the minimum, the physical floor
        ] {
            let got = rescale(
                Limits {
                    hot_set: h,
                    physical: ph,
                },
                &P,
            );
            assert_eq!((got.hot_set, got.physical), (wh, wph), "{h}/{ph}");
        }
    }
}
