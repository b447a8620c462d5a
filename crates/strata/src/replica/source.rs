//! Where a replica reads the writer's log location from: an object store ([`ObjectSource`]),
//! whose files are segments `<name>/<offset:016>` (`storage::object::log`), or a directory
//! ([`DirSource`]).
//!
//! A source only reads. It has three ways in: a full listing (at open and after the writer
//! restarted: on an object store it pages through every segment), a probe for what was
//! appended to one file past an offset (one GET per segment, and one that finds nothing: the
//! cost of an idle refresh), and a whole read of a small file rewritten in place (`CURRENT`).
//! Depends on `storage` (and `storage::object`); never on the engine above it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::stats::RequestCounts;
use crate::storage::object::CapacityTier;
use crate::storage::Storage;

/// One file of the location as a listing found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    pub name: String,
    /// Bytes readable from offset 0 on (an object store's contiguous segments).
    pub size: u64,
    /// `(offset, size)` of each part (an object store's segments; a directory's file is one).
    pub parts: Vec<(u64, u64)>,
}

/// See the module docs.
pub(crate) trait LogSource: Send + Sync {
    /// Every file of the location.
    fn list(&self) -> Result<Vec<Listed>>;
    /// The bytes of `file` from `from` (a part boundary, or any offset of a directory's file)
    /// to the end the listing saw.
    fn fetch_listed(&self, file: &Listed, from: u64) -> Result<Vec<u8>>;
    /// What `name` holds past `from` now (empty: nothing new, or no such file). `from` is
    /// where an earlier read of the file ended.
    fn fetch_new(&self, name: &str, from: u64) -> Result<Vec<u8>>;
    /// The whole of a small file rewritten in place; `None` if absent.
    fn fetch_whole(&self, name: &str) -> Result<Option<Vec<u8>>>;
    /// Requests sent so far (an object store's; a directory sends none).
    fn requests(&self) -> RequestCounts;
    /// A listing costs nothing (a directory): refreshes list every time.
    fn cheap_listing(&self) -> bool;
}

/// Requests a segment probe keeps in flight while it reads a backlog of listed segments.
const FETCH_CONCURRENCY: usize = 16;

/// An object-store log location.
pub(crate) struct ObjectSource {
    tier: Arc<CapacityTier>,
}

impl ObjectSource {
    pub fn new(tier: Arc<CapacityTier>) -> Self {
        ObjectSource { tier }
    }

    fn segment(name: &str, offset: u64) -> String {
        format!("{name}/{offset:016}")
    }
}

impl LogSource for ObjectSource {
    fn list(&self) -> Result<Vec<Listed>> {
        let mut files: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
        for (obj, size) in self.tier.list("")? {
            let Some((name, off)) = obj.rsplit_once('/') else {
                continue;
            };
            // LEASE/<generation> and anything else not a segment is not a log file.
            let Some(off) = (off.len() == 16).then(|| off.parse::<u64>().ok()).flatten() else {
                continue;
            };
            if name.contains('/') || name == "LEASE" {
                continue;
            }
            files.entry(name.to_string()).or_default().push((off, size));
        }
        Ok(files
            .into_iter()
            .map(|(name, mut parts)| {
                parts.sort_unstable();
                // Only the prefix from offset 0 without a gap is readable: a file being deleted
                // loses its segments one by one.
                let mut size = 0;
                let mut contiguous = Vec::new();
                for (off, len) in parts {
                    if off != size {
                        break;
                    }
                    size += len;
                    contiguous.push((off, len));
                }
                Listed {
                    name,
                    size,
                    parts: contiguous,
                }
            })
            .collect())
    }

    fn fetch_listed(&self, file: &Listed, from: u64) -> Result<Vec<u8>> {
        let mut ranges = Vec::new();
        for &(off, len) in &file.parts {
            if off + len <= from {
                continue;
            }
            let skip = from.saturating_sub(off);
            let path = self.tier.path(&Self::segment(&file.name, off));
            ranges.push((path, skip, (len - skip) as usize));
        }
        let total: usize = ranges.iter().map(|r| r.2).sum();
        self.tier
            .get_many_into(ranges, FETCH_CONCURRENCY, vec![0u8; total])
    }

    fn fetch_new(&self, name: &str, from: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let at = from + out.len() as u64;
            match self
                .tier
                .get_whole(&self.tier.path(&Self::segment(name, at)), None)?
            {
                Some(b) if !b.is_empty() => out.extend_from_slice(&b),
                _ => return Ok(out),
            }
        }
    }

    fn fetch_whole(&self, name: &str) -> Result<Option<Vec<u8>>> {
        // A file rewritten in place is one segment (a rename replaces it with one PUT).
        Ok(self
            .tier
            .get_whole(&self.tier.path(&Self::segment(name, 0)), None)?
            .map(|b| b.to_vec()))
    }

    fn requests(&self) -> RequestCounts {
        self.tier.stats().requests.snapshot()
    }

    fn cheap_listing(&self) -> bool {
        false
    }
}

/// A directory log location.
pub(crate) struct DirSource {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
}

impl DirSource {
    pub fn new(dir: &Path, storage: Arc<dyn Storage>) -> Self {
        DirSource {
            dir: dir.to_path_buf(),
            storage,
        }
    }

    fn read_range(&self, name: &str, from: u64, to: Option<u64>) -> Result<Vec<u8>> {
        let f = match self.storage.open(&self.dir.join(name)) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let end = to.unwrap_or(u64::MAX).min(f.size());
        if end <= from {
            return Ok(Vec::new());
        }
        Ok(f.read_at(from, (end - from) as usize)?.to_vec())
    }
}

impl LogSource for DirSource {
    fn list(&self) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        for name in self.storage.list(&self.dir)? {
            let size = match self.storage.open(&self.dir.join(&name)) {
                Ok(f) => f.size(),
                // Deleted since the listing.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            out.push(Listed {
                name,
                size,
                parts: vec![(0, size)],
            });
        }
        Ok(out)
    }

    fn fetch_listed(&self, file: &Listed, from: u64) -> Result<Vec<u8>> {
        let data = self.read_range(&file.name, from, Some(file.size))?;
        if (data.len() as u64) < file.size.saturating_sub(from) {
            return Err(Error::io(
                self.dir.join(&file.name).display(),
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "shorter than listed (deleted meanwhile?)",
                ),
            ));
        }
        Ok(data)
    }

    fn fetch_new(&self, name: &str, from: u64) -> Result<Vec<u8>> {
        self.read_range(name, from, None)
    }

    fn fetch_whole(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self.storage.read_all(&self.dir.join(name)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn requests(&self) -> RequestCounts {
        RequestCounts::default()
    }

    fn cheap_listing(&self) -> bool {
        true
    }
}
