//! What a replica's reads see: one consistent state of the writer (a [`View`]) — memtables
//! rebuilt from the WAL, the writer's version with its fast-tier tables rebuilt locally — and
//! the point lookups and iterators over it, through the engine's own read path.
//!
//! A view pins everything it reads: its memtables and version, and the local files of the
//! fast-tier tables it names ([`LocalTable`], deleted when the last view naming it goes).
//! Capacity-tier tables are the writer's and can be deleted by its garbage collection once no
//! version of the writer names them and the minimum age has passed; a read that finds one
//! gone reports `NotFound`, which the replica answers by refreshing (`replica::Replica`).
//! Depends on `db::read` (sources, probes), `db::merge_lookup`, `iter`; never on the server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::TableCache;
use crate::db::merge_lookup::{merge_lookup_with, MergeWith, Sources};
use crate::db::read::{candidates, from_memtables, iter_sources, Probe};
use crate::db::search::{probe, Local};
use crate::db::SuperVersion;
use crate::error::Result;
use crate::iter::{DbIterator, MergingIterator};
use crate::memtable::MemTable;
use crate::options::ReadOptions;
use crate::range_del::Fragments;
use crate::stats::EngineStats;
use crate::storage::Storage;
use crate::types::{self, SeqNo};

/// A fast-tier table the replica rebuilt: its file goes when the last view naming it does.
pub(crate) struct LocalTable {
    pub size: u64,
    path: PathBuf,
    storage: Arc<dyn Storage>,
}

impl LocalTable {
    pub fn new(id: u64, size: u64, dir: &Path, storage: Arc<dyn Storage>) -> Self {
        LocalTable {
            size,
            path: crate::tier::local_path(dir, id),
            storage,
        }
    }
}

impl Drop for LocalTable {
    fn drop(&mut self) {
        if let Err(e) = self.storage.remove(&self.path) {
            if !e.is_not_found() {
                tracing::warn!(file = %self.path.display(), error = %e, "replica: could not remove a table the writer dropped");
            }
        }
    }
}

/// One state of the writer, as of sequence number `seq`.
pub(crate) struct View {
    pub sv: Arc<SuperVersion>,
    pub seq: SeqNo,
    /// The rebuilt tables `sv.version` names: their files stay while the view lives.
    pub _pinned: Vec<Arc<LocalTable>>,
    /// The WAL file the view was read up to.
    pub log: u64,
}

/// What reads go through.
pub(crate) struct Readers<'a> {
    pub tables: &'a Arc<TableCache>,
    pub stats: &'a EngineStats,
    pub operator: Option<&'a dyn crate::merge::MergeOperator>,
}

impl Readers<'_> {
    fn merge(&self) -> MergeWith<'_> {
        MergeWith {
            tables: self.tables,
            stats: self.stats,
            operator: self.operator,
        }
    }
}

impl View {
    /// The newest value of `key` at `snapshot` (≤ the view's sequence number).
    pub fn get(
        &self,
        r: &Readers<'_>,
        key: &[u8],
        snapshot: SeqNo,
        cache_only: bool,
    ) -> Result<Option<Bytes>> {
        let sv = &self.sv;
        match from_memtables(sv, key, snapshot) {
            Probe::Found(v) => return Ok(v),
            Probe::Merge => {
                let mems: Vec<&Arc<MemTable>> = std::iter::once(&sv.mem).chain(&sv.imms).collect();
                let tables = candidates(&sv.version, key, (0, 0));
                let sources = Sources {
                    mems: &mems,
                    tables: &tables,
                };
                return merge_lookup_with(&r.merge(), &sources, key, snapshot, cache_only);
            }
            Probe::Continue => {}
        }
        let lookup = types::lookup_key(key, snapshot);
        let tables = candidates(&sv.version, key, (0, 0));
        for (i, f) in tables.iter().enumerate() {
            match probe(r.tables, r.stats, f, key, &lookup, snapshot, cache_only)? {
                Local::Found(v, _) => return Ok(v),
                Local::Merge => {
                    let sources = Sources {
                        mems: &[],
                        tables: &tables[i..],
                    };
                    return merge_lookup_with(&r.merge(), &sources, key, snapshot, cache_only);
                }
                Local::Continue => {}
            }
        }
        Ok(None)
    }

    /// An iterator at `snapshot` within `opts`' bounds, pinning this view.
    pub fn iter(
        self: &Arc<Self>,
        r: &Readers<'_>,
        opts: &ReadOptions,
        snapshot: SeqNo,
        merge_operator: Option<Arc<dyn crate::merge::MergeOperator>>,
    ) -> Result<DbIterator> {
        let (children, tombstones) = iter_sources(r.tables, &self.sv, opts)?;
        Ok(DbIterator::new(
            MergingIterator::new(children),
            snapshot,
            Fragments::new(&tombstones),
            opts.lower_bound.clone(),
            opts.upper_bound.clone(),
            self.clone(),
        )
        .with_merge_operator(merge_operator))
    }
}
