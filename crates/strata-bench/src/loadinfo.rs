//! The load record (`strata-bench-load.json` in the database directory): how the keys now in
//! the database were made — key order, key size, value size, record count, seed. A fill or load
//! phase writes it; a later run with `--use-existing-db` reads it and refuses to run when its
//! own keys would not match (a `fillrandom` database, with sequential keys, read by
//! `--workload`, with hashed keys, finds almost nothing and reports a huge, bogus ops/s).
//!
//! Invariants: the record is replaced atomically (written beside, then renamed); a database
//! without one (made before this record existed, or by another tool) only gets a warning.
//! Depends on `keys` for the value types; the engines never read this file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::keys::{KeyOrder, ValueSize};

pub const FILE: &str = "strata-bench-load.json";

/// What decides the keys (and value sizes) a run expects to find.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadRecord {
    pub key_order: KeyOrder,
    pub key_size: usize,
    pub value_size: ValueSize,
    pub num: u64,
    pub seed: u64,
}

fn path(db_dir: &Path) -> PathBuf {
    db_dir.join(FILE)
}

/// Writes the record of a load into the database directory.
pub fn write(db_dir: &Path, r: &LoadRecord) -> anyhow::Result<()> {
    let p = path(db_dir);
    let tmp = db_dir.join(format!("{FILE}.tmp"));
    let text = serde_json::to_string_pretty(r)?;
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &p).with_context(|| format!("renaming to {}", p.display()))?;
    Ok(())
}

/// Reads the record, if there is one.
pub fn read(db_dir: &Path) -> anyhow::Result<Option<LoadRecord>> {
    let p = path(db_dir);
    match std::fs::read_to_string(&p) {
        Ok(text) => Ok(Some(
            serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
    }
}

/// Checks that a run expecting `want` can use a database loaded as `have`: the same key order,
/// key size and seed, and no more records than were loaded. Value sizes only warn (the keys
/// are still found). Returns the warnings, or an error naming every mismatch and the flags
/// that would match.
pub fn check(have: &LoadRecord, want: &LoadRecord) -> anyhow::Result<Vec<String>> {
    let mut bad = Vec::new();
    if have.key_order != want.key_order {
        bad.push(format!(
            "key order: the database was loaded with {} keys, this run uses {} (--key-order {})",
            have.key_order, want.key_order, have.key_order
        ));
    }
    if have.key_size != want.key_size {
        bad.push(format!(
            "key size: loaded {}, this run {} (--key-size {})",
            have.key_size, want.key_size, have.key_size
        ));
    }
    if have.seed != want.seed && have.key_order == KeyOrder::Hashed {
        bad.push(format!(
            "seed: loaded with {}, this run {} (--seed {})",
            have.seed, want.seed, have.seed
        ));
    }
    if want.num > have.num {
        bad.push(format!(
            "records: {} were loaded, this run reads up to {} (--num {})",
            have.num, want.num, have.num
        ));
    }
    if !bad.is_empty() {
        anyhow::bail!(
            "--use-existing-db: this run would not find the keys the database holds ({FILE}):\n  {}",
            bad.join("\n  ")
        );
    }
    let mut warnings = Vec::new();
    if have.value_size != want.value_size {
        warnings.push(format!(
            "value sizes differ from the load ({:?} loaded, {:?} now): reads still find their keys",
            have.value_size, want.value_size
        ));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(order: KeyOrder) -> LoadRecord {
        LoadRecord {
            key_order: order,
            key_size: 16,
            value_size: ValueSize::fixed(100),
            num: 1000,
            seed: 7,
        }
    }

    #[test]
    fn mismatched_order_is_refused_and_roundtrips() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
        write(dir.path(), &rec(KeyOrder::Sequential)).unwrap();
        let have = read(dir.path()).unwrap().unwrap();
        assert_eq!(have, rec(KeyOrder::Sequential));
        let e = check(&have, &rec(KeyOrder::Hashed))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--key-order sequential"), "{e}");
        assert!(check(&have, &rec(KeyOrder::Sequential)).unwrap().is_empty());
        let mut more = rec(KeyOrder::Sequential);
        more.num = 2000;
        assert!(check(&have, &more).is_err());
        let mut bigger = rec(KeyOrder::Sequential);
        bigger.value_size = ValueSize::fixed(200);
        assert_eq!(check(&have, &bigger).unwrap().len(), 1);
    }
}
