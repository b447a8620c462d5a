//! The garbage-collection rule for capacity-tier tables, as pure decisions (the mechanism is
//! `db::gc` and open's orphan sweep). The rule (`docs/operating/checkpoints.md`):
//!
//! A capacity-tier table object is deleted only when
//! 1. no live version refers to it (its last handle dropped, or open found it in no version),
//! 2. no checkpoint or clone record in the registry protects it (unexpired records only),
//! 3. no job is still writing it (jobs' outputs are not candidates until a version held them;
//!    open sweeps before any job starts), and
//! 4. nothing has referred to it for at least the minimum age (`Options::capacity_gc_min_age`):
//!    since it left the last version, since open found it unreferenced, or since the first
//!    check that found the record that kept it gone. A process that read a manifest naming it
//!    (the CLI taking a checkpoint beside a server, a clone of a checkpoint being released)
//!    has that long to record what it refers to.
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
    /// Not looked at before this instant.
    pub due: Instant,
    /// Since when nothing is known to refer to it: it left the version then (or open found it
    /// unreferenced), or a check found no record keeping it. `None` while a record keeps it
    /// (or the registry could not be read): its minimum age starts again at the next check
    /// that finds it unprotected.
    pub unreferenced_since: Option<Instant>,
}

impl Deferred {
    /// A table that stopped being referenced at `now`: looked at once `min_age` has passed.
    pub fn new(id: u64, now: Instant, min_age: Duration) -> Self {
        Deferred {
            id,
            due: now + min_age,
            unreferenced_since: Some(now),
        }
    }
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

/// Splits `deferred` into deletions to make now and the rest. A table is deleted when it is
/// due, no record keeps it (`protected` is the registry's answer, `None` when it could not be
/// read: nothing is deleted then), and it has been unreferenced for `min_age` without
/// interruption: one a record kept — released, expired or shrunk since — waits a full
/// `min_age` from the first check that finds it free, so a process that read a manifest naming
/// it before the release has that long to record it too. A kept or unanswered table is looked
/// at again `recheck` later.
pub fn plan_deferred(
    deferred: Vec<Deferred>,
    now: Instant,
    protected: Option<&HashSet<u64>>,
    min_age: Duration,
    recheck: Duration,
) -> ReapPlan {
    let mut plan = ReapPlan::default();
    for d in deferred {
        if d.due > now {
            plan.keep.push(d);
            continue;
        }
        match protected {
            Some(p) if !p.contains(&d.id) => {
                let since = d.unreferenced_since.unwrap_or(now);
                if now >= since + min_age {
                    plan.delete.push(d.id);
                } else {
                    plan.keep.push(Deferred {
                        id: d.id,
                        due: since + min_age,
                        unreferenced_since: Some(since),
                    });
                }
            }
            _ => plan.keep.push(Deferred {
                id: d.id,
                due: now + recheck,
                unreferenced_since: None,
            }),
        }
    }
    plan
}

/// What open's sweep found: objects no version and no record refers to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Orphans {
    /// Partial-upload leftovers (not a complete table's name): nobody can refer to these,
    /// deleted at once.
    pub partial: Vec<String>,
    /// Complete tables no live version and no record names (a crash's leftovers, tables
    /// released while the database was closed): deferred like any table that left the tree,
    /// since another process may have read a manifest naming them.
    pub unreferenced: Vec<u64>,
}

/// Sorts the listed `(id, name)` objects that are not the complete object of a table a live
/// version or a checkpoint record refers to. `complete_name(id)` is a complete table's name.
pub fn plan_orphans(
    objects: &[(u64, String)],
    live: &HashSet<u64>,
    protected: &HashSet<u64>,
    complete_name: impl Fn(u64) -> String,
) -> Orphans {
    let mut o = Orphans::default();
    for (id, name) in objects {
        if *name != complete_name(*id) {
            o.partial.push(name.clone());
        } else if !live.contains(id) && !protected.contains(id) {
            o.unreferenced.push(*id);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_deletions_wait_for_their_age_and_the_registry() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let age = Duration::from_secs(5);
        let recheck = Duration::from_secs(10);
        let fresh = |id, at| Deferred::new(id, at, age);
        let kept = |id, due| Deferred {
            id,
            due,
            unreferenced_since: None,
        };
        let free = |id, due, since| Deferred {
            id,
            due,
            unreferenced_since: Some(since),
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
            // Younger than the minimum age: kept as is, whatever the registry says.
            (
                vec![fresh(1, t0)],
                t0 + s,
                Some(set(&[])),
                vec![],
                vec![fresh(1, t0)],
            ),
            // Of age and unprotected: deleted.
            (
                vec![fresh(1, t0)],
                t0 + age,
                Some(set(&[])),
                vec![1],
                vec![],
            ),
            // Of age but protected: looked at again after `recheck`, its age forgotten.
            (
                vec![fresh(1, t0), fresh(2, t0)],
                t0 + age,
                Some(set(&[2])),
                vec![1],
                vec![kept(2, t0 + age + recheck)],
            ),
            // Registry unreadable: nothing deleted.
            (
                vec![fresh(1, t0)],
                t0 + age,
                None,
                vec![],
                vec![kept(1, t0 + age + recheck)],
            ),
            // Released since the last check: a full minimum age from now.
            (
                vec![kept(1, t0)],
                t0,
                Some(set(&[])),
                vec![],
                vec![free(1, t0 + age, t0)],
            ),
            // ... and deleted once it has passed without a record keeping it.
            (
                vec![free(1, t0 + age, t0)],
                t0 + age,
                Some(set(&[])),
                vec![1],
                vec![],
            ),
        ];
        for (i, (def, now, prot, del, keep)) in cases.into_iter().enumerate() {
            let plan = plan_deferred(def, now, prot.as_ref(), age, recheck);
            assert_eq!(plan.delete, del, "case {i}");
            assert_eq!(plan.keep, keep, "case {i}");
        }
        // Without a minimum age a released table goes at the first check.
        let plan = plan_deferred(
            vec![kept(1, t0)],
            t0,
            Some(&set(&[])),
            Duration::ZERO,
            recheck,
        );
        assert_eq!(plan.delete, vec![1]);
        assert!(!any_due(&[fresh(1, t0)], t0));
        assert!(any_due(&[fresh(1, t0), kept(2, t0)], t0));
    }

    #[test]
    fn the_sweep_defers_unreferenced_tables_and_deletes_partial_uploads() {
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
            Orphans {
                partial: vec!["tables/000001.sst#2".into(), "tables/000002.sst#1".into()],
                unreferenced: vec![3],
            }
        );
    }
}
