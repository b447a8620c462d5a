//! [`JobSlot`]: what a running compaction holds in the database state — its input tables
//! (busy, so no other job picks them), the fast-tier bytes it reserved against the budget, and
//! the key ranges it writes into each level (no other job may write there: their outputs would
//! overlap). Taken and released under the database lock. Depends on `compaction`'s pick types.

use super::family::Family;
use super::{DbInner, DbState};
use crate::compaction::{self, Pick};
use crate::tier::Tier;

/// The inclusive key range of `files`.
pub(crate) fn range_of<'a>(
    files: impl Iterator<Item = &'a std::sync::Arc<crate::version::TableFile>>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut r: Option<(Vec<u8>, Vec<u8>)> = None;
    for f in files {
        r = Some(match r {
            None => (f.smallest.clone(), f.largest.clone()),
            Some((lo, hi)) => (lo.min(f.smallest.clone()), hi.max(f.largest.clone())),
        });
    }
    r
}

/// What a running compaction holds in the database state: its input tables (busy, so no other
/// job picks them) and the fast-tier bytes it reserved against the budget.
pub(crate) struct JobSlot {
    /// The family whose tables the job takes.
    family: u32,
    ids: Vec<u64>,
    fast_reserved: u64,
    token: u64,
}

impl JobSlot {
    /// Takes the slot for `pick` (under the database lock).
    pub(crate) fn take(inner: &DbInner, fam: &Family, st: &mut DbState, pick: &Pick) -> JobSlot {
        let ids: Vec<u64> = pick
            .inputs
            .iter()
            .flat_map(|(_, fs)| fs.iter().map(|f| f.id))
            .collect();
        st.busy.extend(ids.iter().copied());
        st.running_compactions += 1;
        st.fam_mut(fam.id).jobs += 1;
        let in_bytes: u64 = pick
            .inputs
            .iter()
            .flat_map(|(_, fs)| fs.iter())
            .map(|f| f.size)
            .sum();
        let fast_reserved = if pick.output_tier == Tier::Fast {
            in_bytes
        } else {
            0
        };
        st.running_fast_bytes += fast_reserved;
        st.next_slot += 1;
        let token = st.next_slot;
        let slot = JobSlot {
            family: fam.id,
            ids,
            fast_reserved,
            token,
        };
        let files = pick.inputs.iter().flat_map(|(_, fs)| fs.iter());
        if let Some((lo, hi)) = range_of(files) {
            slot.also_writing(st, pick.output_level, lo, hi);
        }
        inner.publish_l0(fam, st);
        slot
    }

    /// Records that the job writes keys of `[lo, hi]` into `level` (no other job may).
    pub(crate) fn also_writing(&self, st: &mut DbState, level: usize, lo: Vec<u8>, hi: Vec<u8>) {
        st.writing.push((
            self.token,
            self.family,
            compaction::picker::Writing { level, lo, hi },
        ));
    }

    /// Gives the slot back (with `also`, tables the job made busy itself) and wakes waiters.
    pub(crate) fn release(self, inner: &DbInner, fam: &Family, st: &mut DbState, also: &[u64]) {
        for id in self.ids.iter().chain(also) {
            st.busy.remove(id);
        }
        st.running_compactions -= 1;
        st.fam_mut(self.family).jobs -= 1;
        st.running_fast_bytes -= self.fast_reserved;
        st.writing.retain(|(t, _, _)| *t != self.token);
        inner.publish_l0(fam, st);
        inner.bg_cv.notify_all();
    }
}
