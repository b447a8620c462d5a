//! Golden copies of a loaded database (`--golden DIR`): after a load phase the engine's
//! directories are copied to DIR with a description of the load ([`LoadSpec`]); a later run
//! with the same description copies them back instead of loading, so every run phase starts
//! from the same state.
//!
//! Invariants: a golden copy is used only if its [`LoadSpec`] equals the run's (same engine,
//! records, record shape, seed and on-disk settings); it is written to a temporary directory
//! and renamed into place, so a crash never leaves a half copy that looks complete; the engine
//! is closed while its files are copied. Depends on `args`, `keys` and `engine` for value types.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::args::BenchArgs;
use crate::engine::{CompressionKind, EngineKind};
use crate::keys::{KeyOrder, ValueSize};

/// Everything that decides what a load leaves on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    pub engine: EngineKind,
    pub num: u64,
    pub key_size: usize,
    pub value_size: ValueSize,
    pub compression_ratio: f64,
    pub key_order: KeyOrder,
    pub seed: u64,
    pub batch_size: usize,
    pub capacity: Option<String>,
    pub capacity_levels: usize,
    pub fast_levels: Option<usize>,
    pub hotrap: bool,
    /// LogStore defers and places differently during the load.
    #[serde(default)]
    pub placement_policy: crate::engine::PlacementArg,
    /// The capacity index changes the tables the load leaves behind.
    #[serde(default)]
    pub capacity_index: crate::engine::CapacityIndexArg,
    pub fast_tier_budget: Option<u64>,
    pub block_size: u64,
    pub bloom_bits: f64,
    /// Loads from before the option existed wrote no hash indexes.
    #[serde(default)]
    pub data_block_hash_ratio: f64,
    pub compression: CompressionKind,
    pub min_level_to_compress: usize,
    pub write_buffer_size: u64,
    pub max_bytes_for_level_base: Option<u64>,
    pub target_file_size_base: Option<u64>,
}

impl LoadSpec {
    pub fn of(args: &BenchArgs, key_order: KeyOrder) -> Self {
        LoadSpec {
            engine: args.engine,
            num: args.num,
            key_size: args.key_size,
            value_size: args.value_size,
            compression_ratio: args.compression_ratio,
            key_order,
            seed: args.seed,
            batch_size: args.batch_size,
            capacity: args.capacity.clone(),
            capacity_levels: args.capacity_levels,
            fast_levels: args.fast_levels,
            hotrap: args.hotrap,
            placement_policy: args.placement_policy,
            capacity_index: args.capacity_index,
            fast_tier_budget: args.fast_tier_budget,
            block_size: args.block_size,
            bloom_bits: args.bloom_bits,
            data_block_hash_ratio: args.data_block_hash_ratio,
            compression: args.compression_type,
            min_level_to_compress: args.min_level_to_compress,
            write_buffer_size: args.write_buffer_size,
            max_bytes_for_level_base: args.max_bytes_for_level_base,
            target_file_size_base: args.target_file_size_base,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    spec: LoadSpec,
    /// The directories copied, in order (`DIR/0`, `DIR/1`, ...).
    dirs: Vec<PathBuf>,
}

const MANIFEST: &str = "golden.json";

/// A golden copy location.
pub struct Golden {
    dir: PathBuf,
}

impl Golden {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Golden { dir: dir.into() }
    }

    /// Whether DIR holds a copy of a load described by `spec`.
    pub fn matches(&self, spec: &LoadSpec) -> bool {
        std::fs::read(self.dir.join(MANIFEST))
            .ok()
            .and_then(|b| serde_json::from_slice::<Manifest>(&b).ok())
            .is_some_and(|m| &m.spec == spec)
    }

    /// Copies the golden state into `dirs` (each wiped first). `false` if DIR holds no copy
    /// for `spec`.
    pub fn restore(&self, spec: &LoadSpec, dirs: &[PathBuf]) -> anyhow::Result<bool> {
        if !self.matches(spec) {
            return Ok(false);
        }
        for (i, d) in dirs.iter().enumerate() {
            remove_dir(d)?;
            let src = self.dir.join(i.to_string());
            if src.exists() {
                copy_dir(&src, d)?;
            }
        }
        Ok(true)
    }

    /// Saves `dirs` as the golden state of `spec` (replacing any older copy).
    pub fn save(&self, spec: &LoadSpec, dirs: &[PathBuf]) -> anyhow::Result<()> {
        let tmp = self.dir.with_extension("tmp");
        remove_dir(&tmp)?;
        std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        for (i, d) in dirs.iter().enumerate() {
            if d.exists() {
                copy_dir(d, &tmp.join(i.to_string()))?;
            }
        }
        let m = Manifest {
            spec: spec.clone(),
            dirs: dirs.to_vec(),
        };
        std::fs::write(tmp.join(MANIFEST), serde_json::to_vec_pretty(&m)?)?;
        remove_dir(&self.dir)?;
        std::fs::rename(&tmp, &self.dir)
            .with_context(|| format!("renaming {} to {}", tmp.display(), self.dir.display()))?;
        Ok(())
    }
}

/// Removes a directory tree if it exists.
pub fn remove_dir(d: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(d) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", d.display()))
        }
        _ => Ok(()),
    }
}

/// Copies a directory tree (regular files and directories).
pub fn copy_dir(src: &Path, dst: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dst).with_context(|| format!("creating {}", dst.display()))?;
    for e in std::fs::read_dir(src).with_context(|| format!("reading {}", src.display()))? {
        let e = e?;
        let to = dst.join(e.file_name());
        let ty = e.file_type()?;
        if ty.is_dir() {
            copy_dir(&e.path(), &to)?;
        } else if ty.is_file() {
            std::fs::copy(e.path(), &to)
                .with_context(|| format!("copying {}", e.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_and_restore() {
        let t = tempfile::tempdir().unwrap();
        let a = BenchArgs::parse_from(["x", "--workload", "c", "--num", "10"]).unwrap();
        let spec = LoadSpec::of(&a, KeyOrder::Hashed);
        let db = t.path().join("db");
        std::fs::create_dir_all(db.join("sub")).unwrap();
        std::fs::write(db.join("CURRENT"), "x").unwrap();
        std::fs::write(db.join("sub/f"), "y").unwrap();
        let g = Golden::new(t.path().join("golden"));
        assert!(!g.restore(&spec, std::slice::from_ref(&db)).unwrap());
        g.save(&spec, &[db.clone(), t.path().join("absent")])
            .unwrap();
        std::fs::write(db.join("CURRENT"), "changed").unwrap();
        std::fs::write(db.join("extra"), "z").unwrap();
        assert!(g
            .restore(&spec, &[db.clone(), t.path().join("absent")])
            .unwrap());
        assert_eq!(std::fs::read_to_string(db.join("CURRENT")).unwrap(), "x");
        assert_eq!(std::fs::read_to_string(db.join("sub/f")).unwrap(), "y");
        assert!(!db.join("extra").exists());
        // Another load (more records) does not match.
        let mut other = spec.clone();
        other.num = 11;
        assert!(!g.restore(&other, std::slice::from_ref(&db)).unwrap());
    }
}
