//! Target `compaction_job`: the JSON decoding of the messages a remote compaction runner
//! exchanges (`CompactionJob` in, `CompactionResult` out), and the job's accessors a runner
//! calls before executing it.
//!
//! Flag byte: bit 1 = decode a `RemoteJob` with the worker's validating decoder; else bit 0 =
//! decode a `CompactionResult`, else a `CompactionJob`. Properties: a decoded message
//! serializes to JSON that decodes to the same message; a validated remote job's attempts take
//! disjoint table numbers inside its reserved range, none of them an input's.

use strata::compaction::remote::{ControlMetadata, JobStorage, RemoteJob, MAX_ATTEMPTS};
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
    if flag & 2 != 0 {
        let Ok(job) = RemoteJob::decode(rest) else {
            return;
        };
        let back = RemoteJob::decode(&job.encode()).expect("a valid job re-decodes");
        assert_eq!(back, job, "remote job round trip");
        let all = job.job.output_ids.clone().expect("validated");
        let mut prev_end = all.start;
        for a in 0..MAX_ATTEMPTS {
            let ids = job.attempt_ids(a).expect("every attempt has numbers");
            assert!(ids.start >= prev_end && ids.end <= all.end, "attempt {a}: {ids:?} in {all:?}");
            assert!(job.job.input_ids().all(|i| !ids.contains(&i)));
            prev_end = ids.end;
        }
        assert!(job.attempt_ids(MAX_ATTEMPTS).is_err());
        return;
    }
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
            data_block_hash_ratio: 0.75,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: Compression::Zstd(3),
            capacity_index: strata::sst::index::IndexKind::MashMeta,
            bytes_per_sync: 0,
        },
        score: 1.5,
        filter: Some(strata::compaction::FilterSpec {
            name: "strata.ttl".into(),
            params: [("ttl_secs".to_string(), "60".to_string())].into(),
        }),
        merge_operator: Some("strata.u64add".into()),
        output_ids: Some(100..200),
    };
    let mut plain = job.clone();
    plain.forest = None;
    plain.output_ids = None;
    let remote = RemoteJob::new(
        ControlMetadata::of("db-1", &plain),
        JobStorage {
            fast_dir: "/data/db-1".into(),
            capacity_url: Some("s3://bucket/db-1".into()),
        },
        plain,
        1000,
    );
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
        [&[2u8][..], &remote.encode()].concat(),
    ]
}
