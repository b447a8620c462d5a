//! What a benchmark does: db_bench's benchmarks ([`Benchmark`]), YCSB's core workloads and
//! HotRAP's mixes ([`Workload`], each an [`OpMix`] and a default distribution), and the plan of
//! phases a command line asks for ([`plan`] → [`PhaseSpec`]s).
//!
//! Invariants: a phase is fully described by its [`PhaseSpec`] (the runner adds only threads
//! and time); operation counts are totals over all threads; fill benchmarks and load phases
//! are skipped with `--use-existing-db`; a workload is always a load phase (of `--num`
//! records, indices `0..num`) followed by a run phase. Depends on `args`, `keys` and
//! `distributions`; never on engines or reports.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::args::BenchArgs;
use crate::distributions::{DistSpec, Schedule};
use crate::keys::KeyOrder;
use crate::rng::Rng;

/// The kinds of operation, each with its own latency histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    Read,
    Write,
    Update,
    Insert,
    Delete,
    Scan,
    Rmw,
}

impl OpType {
    pub const ALL: [OpType; 7] = [
        OpType::Read,
        OpType::Write,
        OpType::Update,
        OpType::Insert,
        OpType::Delete,
        OpType::Scan,
        OpType::Rmw,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            OpType::Read => "read",
            OpType::Write => "write",
            OpType::Update => "update",
            OpType::Insert => "insert",
            OpType::Delete => "delete",
            OpType::Scan => "scan",
            OpType::Rmw => "rmw",
        }
    }

    /// Whether the operation writes (for MB/s and write counts).
    pub fn writes(self) -> bool {
        matches!(
            self,
            OpType::Write | OpType::Update | OpType::Insert | OpType::Delete | OpType::Rmw
        )
    }
}

impl fmt::Display for OpType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Fractions of each operation in a mixed workload (they sum to 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpMix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub rmw: f64,
}

impl OpMix {
    const ZERO: OpMix = OpMix {
        read: 0.0,
        update: 0.0,
        insert: 0.0,
        scan: 0.0,
        rmw: 0.0,
    };

    pub fn pick(&self, rng: &mut Rng) -> OpType {
        let mut u = rng.unit();
        for (p, op) in [
            (self.read, OpType::Read),
            (self.update, OpType::Update),
            (self.insert, OpType::Insert),
            (self.scan, OpType::Scan),
            (self.rmw, OpType::Rmw),
        ] {
            if u < p {
                return op;
            }
            u -= p;
        }
        OpType::Read
    }
}

/// YCSB core workloads and HotRAP's read/write mixes (Table 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Workload {
    /// 50% read, 50% update, zipfian.
    #[value(name = "ycsb-a", alias = "a")]
    #[serde(rename = "ycsb-a")]
    YcsbA,
    /// 95% read, 5% update, zipfian.
    #[value(name = "ycsb-b", alias = "b")]
    #[serde(rename = "ycsb-b")]
    YcsbB,
    /// 100% read, zipfian.
    #[value(name = "ycsb-c", alias = "c")]
    #[serde(rename = "ycsb-c")]
    YcsbC,
    /// 95% read, 5% insert, latest.
    #[value(name = "ycsb-d", alias = "d")]
    #[serde(rename = "ycsb-d")]
    YcsbD,
    /// 95% scan (1..=100 records), 5% insert, zipfian.
    #[value(name = "ycsb-e", alias = "e")]
    #[serde(rename = "ycsb-e")]
    YcsbE,
    /// 50% read, 50% read-modify-write, zipfian.
    #[value(name = "ycsb-f", alias = "f")]
    #[serde(rename = "ycsb-f")]
    YcsbF,
    /// HotRAP RO: 100% read, hotspot-5%.
    #[value(name = "ro", alias = "read-only")]
    #[serde(rename = "ro")]
    ReadOnly,
    /// HotRAP RW: 75% read, 25% insert, hotspot-5%.
    #[value(name = "rw", alias = "read-insert-75")]
    #[serde(rename = "rw")]
    ReadInsert75,
    /// HotRAP WH: 50% read, 50% insert, hotspot-5%.
    #[value(name = "wh", alias = "read-insert-50")]
    #[serde(rename = "wh")]
    ReadInsert50,
    /// HotRAP UH: 50% read, 50% update, hotspot-5%.
    #[value(name = "uh", alias = "read-update-50")]
    #[serde(rename = "uh")]
    ReadUpdate50,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::YcsbA => "ycsb-a",
            Workload::YcsbB => "ycsb-b",
            Workload::YcsbC => "ycsb-c",
            Workload::YcsbD => "ycsb-d",
            Workload::YcsbE => "ycsb-e",
            Workload::YcsbF => "ycsb-f",
            Workload::ReadOnly => "ro",
            Workload::ReadInsert75 => "rw",
            Workload::ReadInsert50 => "wh",
            Workload::ReadUpdate50 => "uh",
        }
    }

    pub fn mix(self) -> OpMix {
        let z = OpMix::ZERO;
        match self {
            Workload::YcsbA => OpMix {
                read: 0.5,
                update: 0.5,
                ..z
            },
            Workload::YcsbB => OpMix {
                read: 0.95,
                update: 0.05,
                ..z
            },
            Workload::YcsbC | Workload::ReadOnly => OpMix { read: 1.0, ..z },
            Workload::YcsbD => OpMix {
                read: 0.95,
                insert: 0.05,
                ..z
            },
            Workload::YcsbE => OpMix {
                scan: 0.95,
                insert: 0.05,
                ..z
            },
            Workload::YcsbF => OpMix {
                read: 0.5,
                rmw: 0.5,
                ..z
            },
            Workload::ReadInsert75 => OpMix {
                read: 0.75,
                insert: 0.25,
                ..z
            },
            Workload::ReadInsert50 => OpMix {
                read: 0.5,
                insert: 0.5,
                ..z
            },
            Workload::ReadUpdate50 => OpMix {
                read: 0.5,
                update: 0.5,
                ..z
            },
        }
    }

    pub fn default_distribution(self) -> DistSpec {
        match self {
            Workload::YcsbD => DistSpec::Latest {
                theta: crate::distributions::DEFAULT_THETA,
            },
            Workload::ReadOnly
            | Workload::ReadInsert75
            | Workload::ReadInsert50
            | Workload::ReadUpdate50 => DistSpec::hotspot(0.05),
            _ => DistSpec::Zipfian {
                theta: crate::distributions::DEFAULT_THETA,
            },
        }
    }
}

/// db_bench's benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    FillSeq,
    FillRandom,
    FillUniqueRandom,
    Overwrite,
    ReadRandom,
    /// db_bench's `multireadrandom`: `--batch-size` random keys per batched lookup (MultiGet).
    MultiReadRandom,
    ReadMissing,
    ReadSeq,
    SeekRandom,
    ReadWhileWriting,
    DeleteRandom,
    /// db_bench's `updaterandom`: read a random key, then write it.
    UpdateRandom,
    /// The same read-modify-write in an optimistic transaction (`get_for_update`, `put`,
    /// `commit`; db_bench's `randomtransaction` with one key per transaction).
    RandomTransaction,
    /// db_bench's `mergerandom`: merges the 8-byte counter increment 1 into a random key
    /// (needs `--merge-operator strata.u64add`).
    MergeRandom,
}

impl Benchmark {
    pub const ALL: [Benchmark; 14] = [
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::FillUniqueRandom,
        Benchmark::Overwrite,
        Benchmark::ReadRandom,
        Benchmark::MultiReadRandom,
        Benchmark::ReadMissing,
        Benchmark::ReadSeq,
        Benchmark::SeekRandom,
        Benchmark::ReadWhileWriting,
        Benchmark::DeleteRandom,
        Benchmark::UpdateRandom,
        Benchmark::RandomTransaction,
        Benchmark::MergeRandom,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::FillUniqueRandom => "filluniquerandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::MultiReadRandom => "multireadrandom",
            Benchmark::ReadMissing => "readmissing",
            Benchmark::ReadSeq => "readseq",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::UpdateRandom => "updaterandom",
            Benchmark::RandomTransaction => "randomtransaction",
            Benchmark::MergeRandom => "mergerandom",
        }
    }

    pub fn is_fill(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::FillUniqueRandom
        )
    }
}

impl FromStr for Benchmark {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == t)
            .ok_or_else(|| {
                format!(
                    "unknown benchmark {s:?} (one of: {})",
                    Benchmark::ALL.map(|b| b.name()).join(", ")
                )
            })
    }
}

/// Which record a fill writes for its `k`-th operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FillOrder {
    /// Record `k` (fillseq, and a workload's load phase).
    Sequential,
    /// A uniformly random record, with repetition (db_bench's fillrandom).
    Random,
    /// Record `perm(k)`: every record once, in random order.
    UniqueRandom,
}

/// What the workers of a phase do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum PhaseKind {
    /// Writes records (`Write` operations).
    Fill { order: FillOrder },
    /// Reads records chosen by `schedule` (`missing`: keys that do not exist).
    Read { missing: bool, schedule: Schedule },
    /// Reads `batch_size` records chosen by `schedule` per batched lookup (each record one
    /// `Read` operation).
    MultiRead { schedule: Schedule },
    /// Rewrites records chosen by `schedule`.
    Overwrite { schedule: Schedule },
    /// Deletes records chosen by `schedule`.
    Delete { schedule: Schedule },
    /// Read-modify-write of keys chosen by `schedule`; `txn`: each in a transaction.
    Update { schedule: Schedule, txn: bool },
    /// Merges a counter increment into keys chosen by `schedule`.
    Merge { schedule: Schedule },
    /// Iterates the whole database in key order, each thread from the start; an operation is
    /// one entry.
    ReadSeq,
    /// Seeks to a record chosen by `schedule` and reads `nexts` entries (a `Scan` operation).
    Seek { nexts: usize, schedule: Schedule },
    /// `threads` readers (the measured operations) and one writer of random records.
    ReadWhileWriting { schedule: Schedule },
    /// A YCSB/HotRAP run phase.
    Mix {
        mix: OpMix,
        schedule: Schedule,
        max_scan: usize,
    },
}

/// Whether a phase is a db_bench benchmark, a workload's load phase or its run phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseRole {
    Benchmark,
    Load,
    Run,
}

impl PhaseRole {
    pub fn name(self) -> &'static str {
        match self {
            PhaseRole::Benchmark => "benchmark",
            PhaseRole::Load => "load",
            PhaseRole::Run => "run",
        }
    }
}

/// When a phase ends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    /// After this many measured operations (over all threads).
    Ops(u64),
    /// After this many seconds.
    Secs(f64),
}

/// One phase of a benchmark run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSpec {
    pub name: String,
    pub role: PhaseRole,
    pub kind: PhaseKind,
    pub limit: Limit,
    pub threads: usize,
    pub warmup_secs: f64,
    pub batch_size: usize,
}

impl PhaseSpec {
    /// Whether operations of type `op` count toward the phase's throughput (readwhilewriting
    /// counts its readers only).
    pub fn is_primary(&self, op: OpType) -> bool {
        match self.kind {
            PhaseKind::ReadWhileWriting { .. } => op == OpType::Read,
            _ => true,
        }
    }

    /// The schedule of keys, if the phase chooses keys from a distribution.
    pub fn schedule(&self) -> Option<&Schedule> {
        match &self.kind {
            PhaseKind::Read { schedule, .. }
            | PhaseKind::MultiRead { schedule }
            | PhaseKind::Overwrite { schedule }
            | PhaseKind::Delete { schedule }
            | PhaseKind::Update { schedule, .. }
            | PhaseKind::Merge { schedule }
            | PhaseKind::Seek { schedule, .. }
            | PhaseKind::ReadWhileWriting { schedule }
            | PhaseKind::Mix { schedule, .. } => Some(schedule),
            PhaseKind::Fill { .. } | PhaseKind::ReadSeq => None,
        }
    }
}

/// The key order a command line implies.
pub fn key_order(args: &BenchArgs) -> KeyOrder {
    args.key_order.unwrap_or(if args.workload.is_some() {
        KeyOrder::Hashed
    } else {
        KeyOrder::Sequential
    })
}

/// The phases a command line asks for, in order.
pub fn plan(args: &BenchArgs) -> anyhow::Result<Vec<PhaseSpec>> {
    anyhow::ensure!(args.threads >= 1, "--threads must be at least 1");
    anyhow::ensure!(args.num >= 1, "--num must be at least 1");
    anyhow::ensure!(args.batch_size >= 1, "--batch-size must be at least 1");
    let duration = (args.duration > 0.0).then_some(args.duration);
    let schedule = |default: DistSpec| -> anyhow::Result<Schedule> {
        match &args.hotspot_schedule {
            Some(s) => Schedule::parse(s, duration.map(std::time::Duration::from_secs_f64))
                .map_err(|e| anyhow::anyhow!("--hotspot-schedule: {e}")),
            None => Ok(Schedule::constant(
                args.distribution.clone().unwrap_or(default),
            )),
        }
    };
    let limit = |ops: u64| match duration {
        Some(d) => Limit::Secs(d),
        None => Limit::Ops(ops),
    };
    let phase = |name: &str, role, kind, limit, warm: bool| PhaseSpec {
        name: name.to_string(),
        role,
        kind,
        limit,
        threads: args.threads,
        warmup_secs: if warm { args.warmup } else { 0.0 },
        batch_size: args.batch_size,
    };

    if let Some(w) = args.workload {
        let mut v = Vec::new();
        if !args.use_existing_db {
            v.push(phase(
                "load",
                PhaseRole::Load,
                PhaseKind::Fill {
                    order: FillOrder::Sequential,
                },
                Limit::Ops(args.num),
                false,
            ));
        }
        v.push(phase(
            "run",
            PhaseRole::Run,
            PhaseKind::Mix {
                mix: w.mix(),
                schedule: schedule(w.default_distribution())?,
                max_scan: args.max_scan_length.max(1),
            },
            limit(args.op_count()),
            true,
        ));
        return Ok(v);
    }

    let mut v = Vec::new();
    for name in &args.benchmarks {
        let b: Benchmark = name.parse().map_err(|e: String| anyhow::anyhow!(e))?;
        if b.is_fill() && args.use_existing_db {
            eprintln!("{:<12} : skipped (--use-existing-db)", b.name());
            continue;
        }
        let uniform = || schedule(DistSpec::Uniform);
        let (kind, lim, warm) = match b {
            Benchmark::FillSeq => (
                PhaseKind::Fill {
                    order: FillOrder::Sequential,
                },
                limit(args.num),
                false,
            ),
            Benchmark::FillRandom => (
                PhaseKind::Fill {
                    order: FillOrder::Random,
                },
                limit(args.num),
                false,
            ),
            Benchmark::FillUniqueRandom => (
                PhaseKind::Fill {
                    order: FillOrder::UniqueRandom,
                },
                Limit::Ops(args.num),
                false,
            ),
            Benchmark::Overwrite => (
                PhaseKind::Overwrite {
                    schedule: uniform()?,
                },
                limit(args.ops.unwrap_or(args.num)),
                false,
            ),
            Benchmark::ReadRandom | Benchmark::ReadMissing => (
                PhaseKind::Read {
                    missing: b == Benchmark::ReadMissing,
                    schedule: uniform()?,
                },
                limit(args.read_count()),
                true,
            ),
            Benchmark::MultiReadRandom => (
                PhaseKind::MultiRead {
                    schedule: uniform()?,
                },
                limit(args.read_count()),
                true,
            ),
            Benchmark::ReadSeq => (PhaseKind::ReadSeq, limit(args.read_count()), true),
            Benchmark::SeekRandom => (
                PhaseKind::Seek {
                    nexts: args.seek_nexts,
                    schedule: uniform()?,
                },
                limit(args.read_count()),
                true,
            ),
            Benchmark::ReadWhileWriting => (
                PhaseKind::ReadWhileWriting {
                    schedule: uniform()?,
                },
                limit(args.read_count()),
                true,
            ),
            Benchmark::DeleteRandom => (
                PhaseKind::Delete {
                    schedule: uniform()?,
                },
                limit(args.ops.unwrap_or(args.num)),
                false,
            ),
            Benchmark::UpdateRandom | Benchmark::RandomTransaction => (
                PhaseKind::Update {
                    schedule: uniform()?,
                    txn: b == Benchmark::RandomTransaction,
                },
                limit(args.ops.unwrap_or(args.num)),
                false,
            ),
            Benchmark::MergeRandom => (
                PhaseKind::Merge {
                    schedule: uniform()?,
                },
                limit(args.ops.unwrap_or(args.num)),
                false,
            ),
        };
        v.push(phase(b.name(), PhaseRole::Benchmark, kind, lim, warm));
    }
    anyhow::ensure!(!v.is_empty(), "nothing to run");
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> BenchArgs {
        let mut argv = vec!["strata-bench"];
        argv.extend_from_slice(v);
        BenchArgs::parse_from(argv).unwrap()
    }

    #[test]
    fn mixes_sum_to_one_and_pick_in_proportion() {
        for w in [
            Workload::YcsbA,
            Workload::YcsbB,
            Workload::YcsbC,
            Workload::YcsbD,
            Workload::YcsbE,
            Workload::YcsbF,
            Workload::ReadOnly,
            Workload::ReadInsert75,
            Workload::ReadInsert50,
            Workload::ReadUpdate50,
        ] {
            let m = w.mix();
            let sum = m.read + m.update + m.insert + m.scan + m.rmw;
            assert!((sum - 1.0).abs() < 1e-9, "{w:?}");
        }
        let m = Workload::ReadInsert75.mix();
        let mut r = Rng::new(1);
        let n = 100_000;
        let inserts = (0..n).filter(|_| m.pick(&mut r) == OpType::Insert).count();
        assert!((inserts as f64 / n as f64 - 0.25).abs() < 0.01);
    }

    #[test]
    fn db_bench_plan() {
        let p = plan(&args(&[
            "--benchmarks",
            "fillseq,readrandom,readwhilewriting",
            "--num",
            "100",
            "--reads",
            "50",
            "--warmup",
            "1",
        ]))
        .unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].limit, Limit::Ops(100));
        assert_eq!(p[0].warmup_secs, 0.0);
        assert_eq!(p[1].limit, Limit::Ops(50));
        assert_eq!(p[1].warmup_secs, 1.0);
        assert!(p[2].is_primary(OpType::Read) && !p[2].is_primary(OpType::Write));
        // With an existing database, fills are skipped; with a duration, limits are times.
        let p = plan(&args(&[
            "--benchmarks=fillrandom,readmissing",
            "--use_existing_db=1",
            "--duration=3",
        ]))
        .unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "readmissing");
        assert_eq!(p[0].limit, Limit::Secs(3.0));
        assert!(plan(&args(&["--benchmarks", "fillbogus"])).is_err());
    }

    #[test]
    fn workload_plan() {
        let a = args(&["--workload", "c", "--num", "1000", "--ops", "10"]);
        assert_eq!(key_order(&a), KeyOrder::Hashed);
        let p = plan(&a).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].role, PhaseRole::Load);
        assert_eq!(p[0].limit, Limit::Ops(1000));
        assert_eq!(p[1].role, PhaseRole::Run);
        assert_eq!(p[1].limit, Limit::Ops(10));
        match &p[1].kind {
            PhaseKind::Mix { mix, schedule, .. } => {
                assert_eq!(mix.read, 1.0);
                assert_eq!(schedule.stages[0].dist, DistSpec::Zipfian { theta: 0.99 });
            }
            k => panic!("{k:?}"),
        }
        let p = plan(&args(&["--workload", "rw", "--distribution", "uniform"])).unwrap();
        assert_eq!(p[1].schedule().unwrap().stages[0].dist, DistSpec::Uniform);
        let p = plan(&args(&["--workload", "wh"])).unwrap();
        assert_eq!(
            p[1].schedule().unwrap().stages[0].dist,
            DistSpec::hotspot(0.05)
        );
    }
}
