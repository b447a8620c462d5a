//! The serializable description of a compaction: everything needed to execute it elsewhere.

use crate::sst::TableBuilderOptions;
use crate::tier::Tier;
use crate::types::SeqNo;
use crate::version::FileMeta;

/// Why a compaction runs (for statistics and scheduling priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CompactionReason {
    /// L0 reached its file-count trigger.
    L0FileCount,
    /// A level exceeded its target size.
    LevelSize,
    /// Requested through `Db::compact_range`.
    Manual,
    /// A table lies on the tier placement no longer wants for its level.
    TierChange,
    /// A split-forest merge the compaction journal shows interrupted, resumed at its cut.
    JournalResume,
    /// LogStore §V-B: a hot capacity-tier table merged up into the last fast level.
    Reverse,
    /// LogStore §V-D: hot, overlapping L0 tables merged on the fast tier alone.
    Staging,
    /// RocksMash §3.4: a fast-tier table pinning a WAL file older than the extended WAL's TTL
    /// is pushed to the next level.
    WalTtl,
}

/// HotRAP retention and promotion by compaction (§3.1): user keys in `[lo, hi]` that are in
/// `hot_keys` go, with all their versions, to fast-tier tables in `level` instead of the job's
/// output level. `[lo, hi]` is the key range of the job's inputs from `level`, so the fast
/// outputs never overlap the tables of `level` left out of the job. Shipped with the job so a
/// remote runner routes exactly as a local one.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HotRoute {
    /// The level whose fast-tier tables receive the hot keys.
    pub level: usize,
    /// The smallest user key of the range.
    pub lo: Vec<u8>,
    /// The largest user key of the range (excluded when `hi_exclusive`).
    pub hi: Vec<u8>,
    /// `hi` itself is outside the range (the inputs end with a range tombstone's exclusive
    /// end, and the next table of `level` may start at `hi`).
    #[serde(default)]
    pub hi_exclusive: bool,
    /// Sorted, deduplicated.
    pub hot_keys: Vec<Vec<u8>>,
}

impl HotRoute {
    /// Whether `user_key` goes to the fast output.
    pub fn is_hot(&self, user_key: &[u8]) -> bool {
        user_key >= self.lo.as_slice()
            && (user_key < self.hi.as_slice() || (!self.hi_exclusive && user_key == self.hi))
            && self
                .hot_keys
                .binary_search_by(|k| k.as_slice().cmp(user_key))
                .is_ok()
    }
}

/// A record taken from HotRAP's promotion cache into a compaction (promotion by compaction):
/// a copy of the newest version of `key` read from the capacity tier.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PromotedRecord {
    /// The user key.
    pub key: Vec<u8>,
    /// The sequence number of the capacity-tier version copied.
    pub seq: SeqNo,
    /// The value.
    pub value: Vec<u8>,
}

/// The input tables of one level. For L0 each table is its own sorted run (newest first);
/// for deeper levels the tables form one sorted run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionInput {
    /// The level the files are in.
    pub level: usize,
    /// The input tables (for L0: newest first).
    pub files: Vec<FileMeta>,
    /// The sorted run (split-forest tree) the files belong to; 0 for L0 and leveled runs.
    #[serde(default)]
    pub run: u64,
}

/// A split-forest merge (SifrDB §4.1–4.2): the inputs are whole trees (one
/// [`CompactionInput`] per tree, newest first); only overlapping tables are rewritten, the rest
/// move into the output tree, and every `cleaning_threshold` sealed outputs the runner hands a
/// checkpoint to the engine (the compaction journal), which deletes the consumed inputs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForestMerge {
    /// Resume a merge the journal shows interrupted: keys below this are already merged.
    pub resume_from: Option<Vec<u8>>,
    /// Sealed outputs (and moved tables) between checkpoints; 0 disables early cleaning.
    pub cleaning_threshold: usize,
}

/// A self-contained compaction job.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionJob {
    /// The job's number: the database counts jobs from 1 each time it opens.
    pub id: u64,
    /// Why the job runs.
    pub reason: CompactionReason,
    /// Newest level first.
    pub inputs: Vec<CompactionInput>,
    /// The level the outputs go to.
    pub output_level: usize,
    /// The tier of the output level's tables.
    pub output_tier: Tier,
    /// HotRAP: hot keys go to fast-tier tables of `route.level` (retention and promotion).
    #[serde(default)]
    pub route: Option<HotRoute>,
    /// HotRAP: hot promotion-cache records in the job's range, merged with the inputs.
    #[serde(default)]
    pub promoted: Vec<PromotedRecord>,
    /// A split-forest merge (inputs are whole trees), when set.
    #[serde(default)]
    pub forest: Option<ForestMerge>,
    /// Live snapshot sequence numbers, ascending.
    pub snapshots: Vec<SeqNo>,
    /// No level below the output level holds keys in the job's range.
    pub bottommost: bool,
    /// Output tables are cut, at a user-key boundary, once they reach this many bytes.
    pub target_file_size: u64,
    /// How output tables are built (block size, filter, compression, ...).
    pub table: TableBuilderOptions,
    /// The picker's score (scheduling priority of a remote job).
    #[serde(default)]
    pub score: f64,
    /// The database's compaction filter, by name and parameters, when it has a spec (a
    /// worker rebuilds it; a local run uses the filter object itself).
    #[serde(default)]
    pub filter: Option<crate::compaction::FilterSpec>,
    /// The database's merge operator, by name ([`crate::merge::from_name`] or the worker's
    /// registry rebuilds it).
    #[serde(default)]
    pub merge_operator: Option<String>,
    /// Table numbers the outputs must take (a remote job: reserved from the instance's
    /// counter, so a worker's tables never collide with the instance's); `None`: the
    /// executor's counter, unbounded.
    #[serde(default)]
    pub output_ids: Option<std::ops::Range<u64>>,
}

impl CompactionJob {
    /// Total bytes of the input tables.
    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .flat_map(|i| i.files.iter())
            .map(|f| f.size)
            .sum()
    }

    /// The ids of the input tables, newest level first.
    pub fn input_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.inputs
            .iter()
            .flat_map(|i| i.files.iter().map(|f| f.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_route_bounds() {
        let mut r = HotRoute {
            level: 5,
            lo: b"b".to_vec(),
            hi: b"m".to_vec(),
            hi_exclusive: false,
            hot_keys: vec![b"a".to_vec(), b"b".to_vec(), b"g".to_vec(), b"m".to_vec()],
        };
        // (key, routed with an inclusive end, routed with an exclusive end)
        let cases: [(&[u8], bool, bool); 5] = [
            (b"a", false, false), // hot, but before the range
            (b"b", true, true),
            (b"c", false, false), // in range, not hot
            (b"g", true, true),
            (b"m", true, false), // the next table of the level may start at an exclusive end
        ];
        for (k, inclusive, exclusive) in cases {
            r.hi_exclusive = false;
            assert_eq!(r.is_hot(k), inclusive, "{k:?} inclusive");
            r.hi_exclusive = true;
            assert_eq!(r.is_hot(k), exclusive, "{k:?} exclusive");
        }
    }
}
