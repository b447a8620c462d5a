//! Column families in the stress workload. With `families = F > 0` (a database field) the key
//! space is cut into blocks of [`BLOCK`] keys dealt round-robin to the default family and F
//! families of its own: key `i` lives in family `(i / BLOCK) % (F + 1)`. A write batch mixes
//! keys of several families (one atomic WAL record, checked all-or-nothing after a kill like
//! any batch), a range delete stays inside one block (so inside one family), and a scan reads
//! one block through its family. Each family has its own options: family 1 keeps all its
//! levels on the fast tier, family 2 runs the other compaction style on the capacity tier —
//! a split forest with HotRAP, or a leveled tree placed by LogStore (see [`cf_options`]).
//!
//! Everything that touches a key through the database goes through [`Families`], so the rest
//! of the harness keeps reasoning in key indices. Depends on `keys` and the `strata` API only.

use bytes::Bytes;
use strata::{CfOptions, ColumnFamily, CompactionStyle, Db, DbIterator, ReadOptions, WriteBatch};

/// Keys per block of one family.
pub const BLOCK: u64 = 32;

/// The family (0: the default) key `i` lives in, with `families` families besides the default.
pub fn family_of(i: u64, families: u64) -> usize {
    if families == 0 {
        0
    } else {
        ((i / BLOCK) % (families + 1)) as usize
    }
}

/// The end (exclusive) of the block of key `i`: range deletes and scans stop there when the
/// database has families.
pub fn block_end(i: u64, families: u64) -> u64 {
    if families == 0 {
        u64::MAX
    } else {
        (i / BLOCK + 1) * BLOCK
    }
}

/// The name of family `f` (> 0).
fn name(f: usize) -> String {
    format!("stress-{f}")
}

/// Options of family `f` (> 0) of a database whose default family is `o`.
pub fn cf_options(o: &strata::Options, f: usize) -> CfOptions {
    let mut c = CfOptions::from_options(o);
    if f % 2 == 1 {
        // All on the fast tier.
        c.fast_levels = Some(c.num_levels - 1);
        c.hotrap = false;
        c.logstore = false;
    } else {
        // The other compaction style, on the capacity tier: a split forest with HotRAP, or a
        // leveled tree placed by LogStore.
        c.compaction_style = match o.compaction_style {
            CompactionStyle::SplitForest => CompactionStyle::Leveled,
            _ => CompactionStyle::SplitForest,
        };
        c.fast_levels = None;
        c.capacity_levels = 1;
        c.logstore = c.compaction_style == CompactionStyle::Leveled;
        c.hotrap = !c.logstore;
    }
    c
}

/// Handles of a database's families, by family index (`None`: the default family).
pub struct Families {
    handles: Vec<Option<ColumnFamily>>,
}

impl Families {
    /// The families of `db` (opened with options `o`), creating those missing.
    pub fn open(db: &Db, o: &strata::Options, families: u64) -> strata::Result<Families> {
        let mut handles = vec![None];
        for f in 1..=families as usize {
            let h = match db.cf(&name(f)) {
                Some(h) => h,
                None => db.create_cf(&name(f), cf_options(o, f))?,
            };
            handles.push(Some(h));
        }
        Ok(Families { handles })
    }

    /// The families of `db`, which must all exist already (a copy of a database with them).
    pub fn existing(db: &Db, families: u64) -> anyhow::Result<Families> {
        let mut handles = vec![None];
        for f in 1..=families as usize {
            let h = db
                .cf(&name(f))
                .ok_or_else(|| anyhow::anyhow!("column family {:?} is missing", name(f)))?;
            handles.push(Some(h));
        }
        Ok(Families { handles })
    }

    /// The default family alone (a database without families).
    pub fn none() -> Families {
        Families {
            handles: vec![None],
        }
    }

    /// Families besides the default.
    pub fn extra(&self) -> u64 {
        self.handles.len() as u64 - 1
    }

    fn handle(&self, i: u64) -> Option<&ColumnFamily> {
        self.handles[family_of(i, self.extra())].as_ref()
    }

    pub fn get(&self, db: &Db, ropts: &ReadOptions, i: u64) -> strata::Result<Option<Bytes>> {
        match self.handle(i) {
            Some(cf) => db.get_cf_opt(cf, ropts, crate::keys::key(i)),
            None => db.get_opt(ropts, crate::keys::key(i)),
        }
    }

    /// An iterator over the family of key `i`.
    pub fn iter(&self, db: &Db, ropts: ReadOptions, i: u64) -> strata::Result<DbIterator> {
        match self.handle(i) {
            Some(cf) => db.iter_cf(cf, ropts),
            None => db.iter(ropts),
        }
    }

    /// An iterator over each family, by family index.
    pub fn iter_all(&self, db: &Db) -> strata::Result<Vec<DbIterator>> {
        self.handles
            .iter()
            .map(|h| match h {
                Some(cf) => db.iter_cf(cf, ReadOptions::default()),
                None => db.iter(ReadOptions::default()),
            })
            .collect()
    }

    pub fn put(&self, b: &mut WriteBatch, i: u64, value: &[u8]) {
        match self.handle(i) {
            Some(cf) => b.put_cf(cf, crate::keys::key(i), value),
            None => b.put(crate::keys::key(i), value),
        }
    }

    pub fn delete(&self, b: &mut WriteBatch, i: u64) {
        match self.handle(i) {
            Some(cf) => b.delete_cf(cf, crate::keys::key(i)),
            None => b.delete(crate::keys::key(i)),
        }
    }

    pub fn merge(&self, b: &mut WriteBatch, i: u64, operand: &[u8]) {
        match self.handle(i) {
            Some(cf) => b.merge_cf(cf, crate::keys::key(i), operand),
            None => b.merge(crate::keys::key(i), operand),
        }
    }

    /// Deletes keys `a..end` (inside the block of `a`).
    pub fn delete_range(&self, b: &mut WriteBatch, a: u64, end: u64) {
        let (s, e) = (crate::keys::key(a), crate::keys::key(end));
        match self.handle(a) {
            Some(cf) => b.delete_range_cf(cf, s, e),
            None => b.delete_range(s, e),
        }
    }

    /// Compacts every family whole.
    pub fn compact_all(&self, db: &Db) -> strata::Result<()> {
        for h in &self.handles {
            match h {
                Some(cf) => db.compact_range_cf(cf, None, None)?,
                None => db.compact_range(None, None)?,
            }
        }
        Ok(())
    }

    /// Compacts keys `a..end` of the family of `a`.
    pub fn compact_range(&self, db: &Db, a: u64, end: u64) -> strata::Result<()> {
        let (s, e) = (crate::keys::key(a), crate::keys::key(end));
        match self.handle(a) {
            Some(cf) => db.compact_range_cf(cf, Some(&s), Some(&e)),
            None => db.compact_range(Some(&s), Some(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_dealt_to_families_by_block() {
        assert_eq!(family_of(5, 0), 0);
        assert_eq!(block_end(5, 0), u64::MAX);
        let fams: Vec<usize> = [0, 31, 32, 63, 64, 95, 96]
            .map(|i| family_of(i, 2))
            .to_vec();
        assert_eq!(fams, [0, 0, 1, 1, 2, 2, 0]);
        assert_eq!(block_end(0, 2), 32);
        assert_eq!(block_end(31, 2), 32);
        assert_eq!(block_end(32, 1), 64);
    }
}
