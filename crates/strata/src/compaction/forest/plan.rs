//! The merge plan of a split-forest compaction (SifrDB §4.1): the input trees' tables in key
//! order, grouped into segments. A table that overlaps no table of another input tree is
//! *moved* into the output tree by metadata alone; tables whose ranges chain into each other
//! are *merged* and rewritten together. Segments are disjoint and ascending, so the output
//! tree (moved tables and the merged segments' outputs, each cut at its segment's end) is a
//! sorted run.
//!
//! Pure: tested with tables of key ranges. Depends only on `version::FileMeta`.

use crate::tier::Tier;
use crate::version::FileMeta;

/// One input table and the input tree (index into the job's trees, newest first) it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedTable {
    /// Index of the table's input tree in the job's trees (0: the newest).
    pub tree: usize,
    /// The table's metadata.
    pub meta: FileMeta,
}

/// A step of the merge, in key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    /// Moved into the output tree unchanged.
    Move(PlannedTable),
    /// Merged and rewritten; `tables` are in key order.
    Merge(Vec<PlannedTable>),
}

impl Segment {
    /// The segment's tables: the moved table, or the merged ones in key order.
    pub fn tables(&self) -> &[PlannedTable] {
        match self {
            Segment::Move(t) => std::slice::from_ref(t),
            Segment::Merge(ts) => ts,
        }
    }

    /// The smallest user key of the segment.
    pub fn smallest(&self) -> &[u8] {
        self.tables()
            .iter()
            .map(|t| t.meta.smallest.as_slice())
            .min()
            .unwrap_or_default()
    }
}

/// Plans the merge of `trees` (each a sorted run of disjoint tables, newest tree first).
///
/// - `resume_from`: the merge resumes after a crash at this key (the compaction journal's cut):
///   tables entirely below it are gone, and a table that starts below it is merged (never
///   moved: its keys below the cut are already in the output tree).
/// - `output_tier`: a table on another tier is rewritten, not moved (a table changes tiers
///   only by being rewritten).
pub fn plan(
    trees: &[Vec<FileMeta>],
    resume_from: Option<&[u8]>,
    output_tier: Tier,
) -> Vec<Segment> {
    let mut all: Vec<PlannedTable> = trees
        .iter()
        .enumerate()
        .flat_map(|(tree, files)| {
            files.iter().map(move |m| PlannedTable {
                tree,
                meta: m.clone(),
            })
        })
        .filter(|t| resume_from.is_none_or(|c| !t.meta.ends_before(c)))
        .collect();
    all.sort_by(|a, b| {
        a.meta
            .smallest
            .cmp(&b.meta.smallest)
            .then(a.tree.cmp(&b.tree))
    });
    let mut out = Vec::new();
    let mut group: Vec<PlannedTable> = Vec::new();
    // The table of the group that reaches furthest right.
    let mut reach: Option<FileMeta> = None;
    for t in all {
        let joins = reach
            .as_ref()
            .is_some_and(|r| !r.ends_before(&t.meta.smallest));
        if !joins && !group.is_empty() {
            out.push(close(std::mem::take(&mut group), resume_from, output_tier));
            reach = None;
        }
        let further = reach.as_ref().is_none_or(|r| extends_past(&t.meta, r));
        if further {
            reach = Some(t.meta.clone());
        }
        group.push(t);
    }
    if !group.is_empty() {
        out.push(close(group, resume_from, output_tier));
    }
    out
}

/// Whether `a` ends after `b` (comparing largest keys, an inclusive end beyond an exclusive
/// one at the same key).
fn extends_past(a: &FileMeta, b: &FileMeta) -> bool {
    match a.largest.cmp(&b.largest) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => b.largest_exclusive && !a.largest_exclusive,
    }
}

fn close(group: Vec<PlannedTable>, resume_from: Option<&[u8]>, output_tier: Tier) -> Segment {
    let movable = group.len() == 1
        && group[0].meta.tier == output_tier
        && resume_from.is_none_or(|c| group[0].meta.smallest.as_slice() >= c);
    if movable {
        Segment::Move(group.into_iter().next().expect("one table"))
    } else {
        Segment::Merge(group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: u64, lo: &str, hi: &str) -> FileMeta {
        FileMeta {
            id,
            size: 100,
            smallest: lo.into(),
            largest: hi.into(),
            largest_exclusive: false,
            smallest_seq: 1,
            largest_seq: 1,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            tier: Tier::Fast,
        }
    }

    /// Renders a plan as `M(ids)` / `m(id)` for merged and moved segments.
    fn show(p: &[Segment]) -> String {
        p.iter()
            .map(|s| match s {
                Segment::Move(t) => format!("m{}", t.meta.id),
                Segment::Merge(ts) => format!(
                    "M{}",
                    ts.iter()
                        .map(|t| t.meta.id.to_string())
                        .collect::<Vec<_>>()
                        .join("+")
                ),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn plans() {
        let excl = |mut m: FileMeta| {
            m.largest_exclusive = true;
            m
        };
        let mut cap = t(9, "x", "y");
        cap.tier = Tier::Capacity;
        // (trees, resume_from, expected plan)
        type Case<'a> = (Vec<Vec<FileMeta>>, Option<&'a str>, &'a str);
        let cases: Vec<Case> = vec![
            // SifrDB Figure 4: only the overlapping tables are rewritten.
            (
                vec![
                    vec![t(1, "01", "03"), t(2, "05", "08"), t(3, "09", "11")],
                    vec![t(4, "05", "06"), t(5, "10", "13"), t(6, "14", "17")],
                ],
                None,
                "m1 M2+4 M3+5 m6",
            ),
            // Sequential writes: nothing overlaps, everything moves.
            (
                vec![
                    vec![t(1, "a", "b")],
                    vec![t(2, "c", "d")],
                    vec![t(3, "e", "f")],
                ],
                None,
                "m1 m2 m3",
            ),
            // A chain: 1 overlaps 2, 2 overlaps 3, so all three merge.
            (
                vec![
                    vec![t(1, "a", "c")],
                    vec![t(2, "c", "e")],
                    vec![t(3, "e", "g")],
                ],
                None,
                "M1+2+3",
            ),
            // A wide table swallows later ones.
            (
                vec![vec![t(1, "a", "z")], vec![t(2, "b", "c"), t(3, "m", "n")]],
                None,
                "M1+2+3",
            ),
            // An exclusive end touching the next table's start does not overlap it.
            (
                vec![vec![excl(t(1, "a", "c"))], vec![t(2, "c", "d")]],
                None,
                "m1 m2",
            ),
            // A table on another tier than the output is rewritten.
            (vec![vec![t(1, "a", "b")], vec![cap]], None, "m1 M9"),
            // Resuming at "c": table 1 is gone, table 2 spans the cut and is merged alone.
            (
                vec![vec![t(1, "a", "b"), t(2, "b", "d"), t(3, "e", "f")]],
                Some("c"),
                "M2 m3",
            ),
        ];
        for (i, (trees, resume, want)) in cases.into_iter().enumerate() {
            let got = plan(&trees, resume.map(str::as_bytes), Tier::Fast);
            assert_eq!(show(&got), want, "case {i}");
        }
    }
}
