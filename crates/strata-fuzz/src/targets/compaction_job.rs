//! Target `compaction_job`: the JSON decoding of the messages a remote compaction runner
//! exchanges (`CompactionJob` in, `CompactionResult` out), and the job's accessors a runner
//! calls before executing it.
//!
//! Flag byte: bit 0 = decode a `CompactionResult` (else a `CompactionJob`). Properties: a
//! decoded message serializes to JSON that decodes to the same message.

use strata::compaction::{
    CompactionInput, CompactionJob, CompactionReason, CompactionResult, HotRoute, PromotedRecord,
};
use strata::sst::TableBuilderOptions;
use strata::tier::Tier;
use strata::version::FileMeta;
use strata::Compression;

use crate::util::split_flag;

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    if flag & 1 != 0 {
        if let Ok(r) = serde_json::from_slice::<CompactionResult>(rest) {
            let json = serde_json::to_vec(&r).expect("serializes");
            let back: CompactionResult = serde_json::from_slice(&json).expect("decodes");
            assert_eq!(serde_json::to_vec(&back).expect("serializes"), json);
        }
        return;
    }
    let Ok(job) = serde_json::from_slice::<CompactionJob>(rest) else {
        return;
    };
    let _ = job.input_bytes();
    let _ = job.input_ids().count();
    if let Some(r) = &job.route {
        for k in r.hot_keys.iter().take(8) {
            let _ = r.is_hot(k);
        }
    }
    let json = serde_json::to_vec(&job).expect("serializes");
    let back: CompactionJob = serde_json::from_slice(&json).expect("decodes");
    assert_eq!(back, job, "job round trip");
}

fn meta(id: u64) -> FileMeta {
    FileMeta {
        id,
        size: 1 << 20,
        smallest: b"a".to_vec(),
        largest: b"z".to_vec(),
        largest_exclusive: false,
        smallest_seq: 1,
        largest_seq: 99,
        num_entries: 1000,
        num_deletions: 3,
        num_range_deletions: 1,
        tier: Tier::Fast,
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let job = CompactionJob {
        id: 42,
        reason: CompactionReason::LevelSize,
        inputs: vec![
            CompactionInput {
                level: 0,
                files: vec![meta(7), meta(8)],
                run: 0,
            },
            CompactionInput {
                level: 1,
                files: vec![meta(3)],
                run: 12,
            },
        ],
        output_level: 1,
        output_tier: Tier::Capacity,
        route: Some(HotRoute {
            level: 0,
            lo: b"a".to_vec(),
            hi: b"m".to_vec(),
            hi_exclusive: true,
            hot_keys: vec![b"b".to_vec(), b"c".to_vec()],
        }),
        promoted: vec![PromotedRecord {
            key: b"b".to_vec(),
            seq: 5,
            value: b"v".to_vec(),
        }],
        forest: Some(strata::compaction::ForestMerge {
            resume_from: Some(b"c".to_vec()),
            cleaning_threshold: 10,
        }),
        snapshots: vec![10, 20],
        bottommost: true,
        target_file_size: 64 << 20,
        table: TableBuilderOptions {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: Compression::Zstd(3),
            capacity_index: strata::sst::index::IndexKind::MashMeta,
        },
    };
    let result = CompactionResult {
        outputs: vec![meta(11)],
        fast_outputs: vec![meta(12)],
        routed_bytes: 100,
        routed_records: 2,
        read_bytes: 1 << 21,
        write_bytes: 1 << 20,
        records_in: 2000,
        records_dropped: 5,
        moved_tables: 3,
        moved_bytes: 3 << 20,
        checkpoints: 2,
        peak_extra_bytes: 1 << 20,
    };
    vec![
        [&[0u8][..], &serde_json::to_vec(&job).expect("json")].concat(),
        [&[1u8][..], &serde_json::to_vec(&result).expect("json")].concat(),
    ]
}
