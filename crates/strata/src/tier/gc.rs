//! The garbage-collection rule for capacity-tier tables, as pure decisions (the mechanism is
//! `db::background::reap` and open's orphan sweep). The rule (`docs/operating/checkpoints.md`):
//!
//! A capacity-tier table object is deleted only when
//! 1. no live version refers to it (its last handle dropped, or open found it in no version),
//! 2. no checkpoint or clone record in the registry protects it (unexpired records only),
//! 3. no job is still writing it (jobs' outputs are not candidates until a version held them;
//!    open sweeps before any job starts), and
//! 4. it left the last version at least the minimum age ago (`Options::capacity_gc_min_age`),
//!    so a process that read an older manifest (the CLI taking a checkpoint of a database a
//!    server has open) has that long to register what it refers to.
//!
//! The registry is read afresh for every batch of deletions that (4) lets through, so a record
//! written before that moment is honoured. An unreadable registry deletes nothing.
//! Depends on nothing but `std`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

/// A capacity-tier table that left the last version and waits to be deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deferred {
    /// The table's number.
    pub id: u64,
    /// Not deleted before this instant.
    pub due: Instant,
    /// Past its minimum age, but a checkpoint record (or an unreadable registry) kept it: a
    /// release may look at it again at once.
    pub kept: bool,
}

/// What to do with the deferred deletions now.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReapPlan {
    /// Delete these tables now.
    pub delete: Vec<u64>,
    /// Keep waiting on these.
    pub keep: Vec<Deferred>,
}

/// Whether any deferred deletion is due at `now` (only then is the registry read).
pub fn any_due(deferred: &[Deferred], now: Instant) -> bool {
    deferred.iter().any(|d| d.due <= now)
}

/// Splits `deferred` into deletions due now and not protected, and the rest. `protected` is
/// the registry's answer, `None` when it could not be read (nothing is deleted then). A
/// protected or unanswered entry is looked at again `recheck` later.
pub fn plan_deferred(
    deferred: Vec<Deferred>,
    now: Instant,
    protected: Option<&HashSet<u64>>,
    recheck: Duration,
) -> ReapPlan {
    let mut plan = ReapPlan::default();
    for d in deferred {
        if d.due > now {
            plan.keep.push(d);
        } else if protected.is_some_and(|p| !p.contains(&d.id)) {
            plan.delete.push(d.id);
        } else {
            plan.keep.push(Deferred {
                id: d.id,
                due: now + recheck,
                kept: true,
            });
        }
    }
    plan
}

/// The objects open's sweep deletes: every listed `(id, name)` that is not the complete object
/// of a table a live version or a checkpoint record refers to (partial-upload leftovers and
/// tables a crash left unreferenced). `complete_name(id)` is a complete table's object name.
pub fn plan_orphans(
    objects: &[(u64, String)],
    live: &HashSet<u64>,
    protected: &HashSet<u64>,
    complete_name: impl Fn(u64) -> String,
) -> Vec<String> {
    objects
        .iter()
        .filter(|(id, name)| {
            let complete = *name == complete_name(*id);
            !(complete && (live.contains(id) || protected.contains(id)))
        })
        .map(|(_, name)| name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_deletions_wait_for_their_age_and_the_registry() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let recheck = Duration::from_secs(10);
        let d = |id, due| Deferred {
            id,
            due,
            kept: false,
        };
        let k = |id, due| Deferred {
            id,
            due,
            kept: true,
        };
        let set = |ids: &[u64]| ids.iter().copied().collect::<HashSet<u64>>();
        // (deferred, now, protected, deleted, kept)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            Vec<Deferred>,
            Instant,
            Option<HashSet<u64>>,
            Vec<u64>,
            Vec<Deferred>,
        )> = vec![
            // Not due yet: kept as is, whatever the registry says.
            (
                vec![d(1, t0 + s)],
                t0,
                Some(set(&[])),
                vec![],
                vec![d(1, t0 + s)],
            ),
            // Due and unprotected: deleted.
            (vec![d(1, t0)], t0, Some(set(&[])), vec![1], vec![]),
            // Due but protected: looked at again after `recheck`.
            (
                vec![d(1, t0), d(2, t0)],
                t0 + s,
                Some(set(&[2])),
                vec![1],
                vec![k(2, t0 + s + recheck)],
            ),
            // Registry unreadable: nothing deleted.
            (vec![d(1, t0)], t0, None, vec![], vec![k(1, t0 + recheck)]),
        ];
        for (i, (def, now, prot, del, keep)) in cases.into_iter().enumerate() {
            let plan = plan_deferred(def, now, prot.as_ref(), recheck);
            assert_eq!(plan.delete, del, "case {i}");
            assert_eq!(plan.keep, keep, "case {i}");
        }
        assert!(!any_due(&[d(1, t0 + s)], t0));
        assert!(any_due(&[d(1, t0 + s), d(2, t0)], t0));
    }

    #[test]
    fn the_sweep_keeps_live_and_protected_complete_tables_only() {
        let name = |id: u64| format!("tables/{id:06}.sst");
        let objects: Vec<(u64, String)> = vec![
            (1, name(1)),                      // live
            (2, name(2)),                      // protected by a checkpoint
            (3, name(3)),                      // neither: a crash's leftover
            (1, "tables/000001.sst#2".into()), // a live table's partial upload
            (2, "tables/000002.sst#1".into()), // a protected table's partial upload
        ];
        let live: HashSet<u64> = [1].into();
        let protected: HashSet<u64> = [2].into();
        assert_eq!(
            plan_orphans(&objects, &live, &protected, name),
            vec![
                name(3),
                "tables/000001.sst#2".into(),
                "tables/000002.sst#1".into()
            ]
        );
    }
}
