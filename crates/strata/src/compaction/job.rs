//! The serializable description of a compaction: everything needed to execute it elsewhere.

use crate::sst::TableBuilderOptions;
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
}

/// The input tables of one level. For L0 each table is its own sorted run (newest first);
/// for deeper levels the tables form one sorted run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionInput {
    pub level: usize,
    pub files: Vec<FileMeta>,
}

/// A self-contained compaction job.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionJob {
    pub id: u64,
    pub reason: CompactionReason,
    /// Newest level first.
    pub inputs: Vec<CompactionInput>,
    pub output_level: usize,
    /// Live snapshot sequence numbers, ascending.
    pub snapshots: Vec<SeqNo>,
    /// No level below the output level holds keys in the job's range.
    pub bottommost: bool,
    pub target_file_size: u64,
    pub table: TableBuilderOptions,
}

impl CompactionJob {
    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .flat_map(|i| i.files.iter())
            .map(|f| f.size)
            .sum()
    }

    pub fn input_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.inputs
            .iter()
            .flat_map(|i| i.files.iter().map(|f| f.id))
    }
}
