//! One column family at run time (RocksDB's `ColumnFamilyData`): what a family owns apart
//! from the others — its super-version (memtables and version pinned together for reads), its
//! compaction policy, HotRAP's promotion machinery and LogStore's temperatures, and the
//! counters the write path's stall check reads — and, under the database lock, its memtables
//! ([`FamilyState`]).
//!
//! Shared by every family and not here: the WAL and the commit pipeline's ordering state,
//! `last_seq`, snapshots, the caches, the manifest (`VersionSet`, one record for all families),
//! the background threads, the rate limiter, and the capacity tier's garbage collection. Table
//! ids are unique across families, so the running jobs' busy set stays database-wide too. The
//! fast-tier budget is applied to each family's own tables (a family's placement reads its own
//! version).
//!
//! Invariants: a `Family`'s `id` is its manifest id (`version::family`), never reused; its
//! `FamilyState` lives in `DbState::families` exactly as long as the family does; the active
//! memtable in `active` is the one in its state (changed together, by the front of the writer
//! queue). Depends on `memtable`, `version`, `compaction` and `tier`; never on the write or read
//! paths, which depend on it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::SuperVersion;
use crate::memtable::MemTable;
use crate::version::Version;

/// A token unique to one open database in this process (its families carry it).
pub(crate) fn new_db_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A column family's run-time handle: see the module docs.
pub(crate) struct Family {
    /// The manifest's id (`version::DEFAULT_FAMILY` for the default family).
    pub id: u32,
    /// Its name (`version::DEFAULT_FAMILY_NAME` for the default family).
    pub name: String,
    /// The family's options: the database's, with the family's own (`CfOptions`) applied.
    pub opts: crate::Options,
    /// Set when the family is dropped: writes naming it fail, reads through a handle fail.
    pub dropped: AtomicBool,
    /// The open database the family belongs to ([`new_db_token`]): a handle of another
    /// database is refused.
    pub owner: u64,
    /// The current super-version. `ArcSwap`: a read pins it without a lock and, in the common
    /// case, without touching a shared reference count (thread-local debt slots).
    pub sv: ArcSwap<SuperVersion>,
    /// The active memtable, for write-group leaders (readers use the super-version): changed
    /// only by the front of the writer queue in `room::switch_memtable`, read without touching
    /// what readers share.
    pub active: ArcSwap<MemTable>,
    /// L0 table count of the current version, kept by [`Family::publish_l0`].
    pub l0_files: AtomicUsize,
    /// Of those, the ones running compactions take (LogStore only; see `write::stalling_l0`).
    pub l0_busy: AtomicUsize,
    /// Fast-tier table bytes of the current version, kept beside `l0_files` (LogStore's
    /// deferral limit).
    pub fast_bytes: AtomicU64,
    /// Picks compactions: leveled, split forest or LogStore.
    pub policy: Box<dyn crate::compaction::CompactionPolicy>,
    /// HotRAP, when on and a capacity tier is configured.
    pub hot: Option<Arc<crate::tier::hot::HotRap>>,
    /// LogStore's temperatures and deferral state (`placement_policy = logstore`).
    pub logstore: Option<Arc<super::temperature::LogStore>>,
}

/// A family's part of the state under the database lock.
pub(crate) struct FamilyState {
    /// The family's run-time handle (for the background threads, which find work here).
    pub handle: Arc<Family>,
    pub mem: Arc<MemTable>,
    /// Sealed memtables waiting for their flush, oldest first.
    pub imms: Vec<Arc<MemTable>>,
    /// Running flushes and compactions of the family (a drop waits for them to finish).
    pub jobs: usize,
}

impl FamilyState {
    /// Whether the family holds nothing unflushed.
    pub fn is_empty(&self) -> bool {
        self.imms.is_empty() && self.mem.is_empty()
    }
}

impl Family {
    /// A family whose reads see `mem`, `imms` (oldest first) and `version`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        owner: u64,
        id: u32,
        name: String,
        opts: crate::Options,
        mem: &Arc<MemTable>,
        imms: &[Arc<MemTable>],
        version: Arc<Version>,
        hot: Option<Arc<crate::tier::hot::HotRap>>,
        logstore: Option<Arc<super::temperature::LogStore>>,
    ) -> Family {
        let policy = policy_for(&opts, logstore.is_some());
        let f = Family {
            id,
            name,
            opts,
            dropped: AtomicBool::new(false),
            owner,
            sv: ArcSwap::from_pointee(SuperVersion {
                mem: mem.clone(),
                imms: imms.iter().rev().cloned().collect(),
                version: version.clone(),
            }),
            active: ArcSwap::new(mem.clone()),
            l0_files: AtomicUsize::new(0),
            l0_busy: AtomicUsize::new(0),
            fast_bytes: AtomicU64::new(0),
            policy,
            hot,
            logstore,
        };
        f.l0_files
            .store(version.levels[0].num_files(), Ordering::Release);
        f.fast_bytes.store(version.fast_bytes(), Ordering::Release);
        f
    }

    pub fn super_version(&self) -> Arc<SuperVersion> {
        self.sv.load_full()
    }

    /// The current super-version for a short read (a point lookup): cheaper than
    /// [`Family::super_version`], but a thread should not hold many of these at once.
    pub fn super_version_guard(&self) -> arc_swap::Guard<Arc<SuperVersion>> {
        self.sv.load()
    }

    /// Publishes a new super-version of `state` over `version`, and the stall counters.
    /// Under the database lock, whenever the version, the memtables or the busy set changes.
    pub fn install(&self, state: &FamilyState, version: Arc<Version>, busy: &impl Fn(u64) -> bool) {
        self.publish_l0(&version, busy);
        self.sv.store(Arc::new(SuperVersion {
            mem: state.mem.clone(),
            // Newest first, as reads probe them.
            imms: state.imms.iter().rev().cloned().collect(),
            version,
        }));
    }

    /// Publishes what the write path's stall check reads (`write::stalling_l0`): L0's table
    /// count, how many of them running compactions take (counted for LogStore only), and the
    /// fast tier's table bytes, so the fast and slow paths see one state.
    pub fn publish_l0(&self, v: &Version, busy: &impl Fn(u64) -> bool) {
        let taken = if self.logstore.is_some() {
            v.levels[0].files().filter(|f| busy(f.id)).count()
        } else {
            0
        };
        self.fast_bytes.store(v.fast_bytes(), Ordering::Release);
        self.l0_busy.store(taken, Ordering::Release);
        self.l0_files
            .store(v.levels[0].num_files(), Ordering::Release);
    }
}

/// The compaction policy of a family with options `o` (LogStore's when it places by
/// temperature).
fn policy_for(o: &crate::Options, logstore: bool) -> Box<dyn crate::compaction::CompactionPolicy> {
    match o.compaction_style {
        crate::version::CompactionStyle::Leveled if logstore => {
            Box::new(crate::compaction::LogStorePolicy)
        }
        crate::version::CompactionStyle::Leveled => Box::new(crate::compaction::LeveledPolicy),
        crate::version::CompactionStyle::SplitForest => {
            Box::new(crate::compaction::SplitForestPolicy {
                trees_per_level: o.forest.trees_per_level,
            })
        }
    }
}
