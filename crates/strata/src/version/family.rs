//! [`Families`]: the column families a manifest records besides the default one, and each
//! one's tree.
//!
//! Family 0 (`default`) always exists; its tree is the [`VersionSet`](super::VersionSet)'s
//! current version and its fields sit before a record's first family section. Every other
//! family is created by a record (tag 13, with a section in the same record giving its number of
//! levels), changes by the sections of later records (tag 12), and is dropped by a record
//! (tag 14), which releases all of its tables.
//!
//! Invariants, checked on every edit (a record breaking one is corruption):
//! - ids are never reused: `next_id` is above every id ever created, so a WAL record of a
//!   dropped family can never be applied to a later one;
//! - names are unique among live families, and none is `default`;
//! - a section names a live family (created by this record or an earlier one).
//!
//! Applying an edit is a pure function from the old state to the new one, so a failed
//! manifest write keeps the old state. Depends on `version` only; never on `db`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::edit::{CompactionStyle, FamilyDescriptor, VersionEdit};
use super::file_meta::{Reaper, TableFile};
use super::version::Version;
use crate::error::{Error, Result};

/// The id of the default family, which every database has and none can drop.
pub const DEFAULT_FAMILY: u32 = 0;
/// The name of the default family.
pub const DEFAULT_FAMILY_NAME: &str = "default";

/// A column family other than the default one, as the manifest records it.
#[derive(Clone)]
pub struct FamilyTree {
    /// The family's name.
    pub name: String,
    /// The family's options as the engine serialised them (not read here).
    pub options: Vec<u8>,
    /// The family's tree.
    pub version: Arc<Version>,
    /// WAL files numbered below this hold nothing of this family that is not in its tables.
    pub log_number: u64,
    /// The compaction style the family was created with.
    pub style: CompactionStyle,
}

/// The families of a database besides the default one.
#[derive(Clone, Default)]
pub struct Families {
    trees: BTreeMap<u32, FamilyTree>,
    /// Ids below this were handed out (0 when no family was ever created).
    next_id: u32,
}

impl Families {
    /// Whether the database ever had a family besides the default one (its manifest is then
    /// format v3 for good, so that ids stay unique).
    pub fn in_use(&self) -> bool {
        self.next_id > 0
    }

    /// The live families, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &FamilyTree)> {
        self.trees.iter().map(|(id, t)| (*id, t))
    }

    /// Family `id`, if live.
    pub fn get(&self, id: u32) -> Option<&FamilyTree> {
        self.trees.get(&id)
    }

    /// The id of the live family named `name` (the default family is 0).
    pub fn id_of(&self, name: &str) -> Option<u32> {
        if name == DEFAULT_FAMILY_NAME {
            return Some(DEFAULT_FAMILY);
        }
        self.trees
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(id, _)| *id)
    }

    /// The id the next created family gets.
    pub fn next_id(&self) -> u32 {
        self.next_id.max(1)
    }

    /// The smallest log number of the live families (`None` without any).
    pub fn min_log_number(&self) -> Option<u64> {
        self.trees.values().map(|t| t.log_number).min()
    }

    /// Every table of every live family.
    pub fn all_files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.trees.values().flat_map(|t| t.version.all_files())
    }

    /// The state after `edit`, and the tables it released (of dropped families, and those the
    /// sections deleted). Creations apply first, then sections in order, then drops.
    pub fn apply(
        &self,
        edit: &VersionEdit,
        reaper: &Arc<Reaper>,
    ) -> Result<(Families, Vec<Arc<TableFile>>)> {
        if !edit.has_family_fields() {
            return Ok((self.clone(), Vec::new()));
        }
        let mut next = self.clone();
        let mut removed = Vec::new();
        if !edit.families_added.is_empty() {
            // Indexed once per record: a hostile record of many creations stays linear.
            let mut names: HashSet<&str> = self.trees.values().map(|t| t.name.as_str()).collect();
            names.insert(DEFAULT_FAMILY_NAME);
            let mut shapes: HashMap<u32, &VersionEdit> = HashMap::new();
            for (id, s) in &edit.family_edits {
                shapes.entry(*id).or_insert(s);
            }
            for f in &edit.families_added {
                if !names.insert(f.name.as_str()) {
                    return Err(Error::corruption(format!(
                        "manifest: a second family named {:?}",
                        f.name
                    )));
                }
                next.add(f, shapes.get(&f.id).copied())?;
            }
        }
        if let Some(n) = edit.next_family_id {
            if n < next.next_id {
                return Err(Error::corruption(format!(
                    "manifest: next family id {n} is below {}, an id handed out already",
                    next.next_id
                )));
            }
            next.next_id = n;
        }
        for (id, section) in &edit.family_edits {
            let tree = next.trees.get_mut(id).ok_or_else(|| {
                Error::corruption(format!(
                    "manifest: a section names family {id}, which is not live"
                ))
            })?;
            let (v, gone) = tree.version.apply(section, reaper)?;
            tree.version = Arc::new(v);
            if let Some(l) = section.log_number {
                tree.log_number = l;
            }
            removed.extend(gone);
        }
        for id in &edit.families_dropped {
            let tree = next.trees.remove(id).ok_or_else(|| {
                Error::corruption(format!("manifest: drops family {id}, which is not live"))
            })?;
            removed.extend(tree.version.all_files().cloned());
        }
        Ok((next, removed))
    }

    /// Creates family `f` (its name already checked) with the shape its section gives.
    fn add(&mut self, f: &FamilyDescriptor, shape: Option<&VersionEdit>) -> Result<()> {
        // u32::MAX is never handed out, so that the next id above every id always exists.
        if f.id < self.next_id || f.id == u32::MAX || self.trees.contains_key(&f.id) {
            return Err(Error::corruption(format!(
                "manifest: family {} reuses an id or is out of range (next is {})",
                f.id, self.next_id
            )));
        }
        let levels = shape
            .and_then(|s| s.num_levels)
            .filter(|n| (1..=crate::stats::MAX_LEVELS as u64).contains(n))
            .ok_or_else(|| {
                Error::corruption(format!(
                    "manifest: family {} is created without a valid number of levels",
                    f.id
                ))
            })?;
        self.trees.insert(
            f.id,
            FamilyTree {
                name: f.name.clone(),
                options: f.options.clone(),
                version: Arc::new(Version::new(levels as usize)),
                log_number: 0,
                style: shape.and_then(|s| s.style).unwrap_or_default(),
            },
        );
        self.next_id = f.id + 1;
        Ok(())
    }

    /// Adds to snapshot record `e` what rebuilds these families on their own: each live family's
    /// creation and a section with its log number, shape and tables, and the next id.
    pub fn snapshot_into(&self, e: &mut VersionEdit) {
        if !self.in_use() {
            return;
        }
        e.next_family_id = Some(self.next_id);
        for (id, t) in &self.trees {
            e.families_added.push(FamilyDescriptor {
                id: *id,
                name: t.name.clone(),
                options: t.options.clone(),
            });
            let mut s = super::set::tree_snapshot(&t.version);
            s.log_number = Some(t.log_number);
            s.num_levels = Some(t.version.num_levels() as u64);
            s.style = Some(t.style);
            e.family_edits.push((*id, s));
        }
    }

    /// The edit that creates a family named `name` (pure: nothing is logged). Its log number is
    /// `log_number`, the WAL its first writes will go to.
    pub fn create_edit(
        &self,
        name: &str,
        options: Vec<u8>,
        num_levels: usize,
        style: CompactionStyle,
        log_number: u64,
    ) -> Result<(u32, VersionEdit)> {
        if name.is_empty() || self.id_of(name).is_some() {
            return Err(Error::invalid(format!(
                "column family {name:?} exists already or is not a valid name"
            )));
        }
        if !(1..=crate::stats::MAX_LEVELS).contains(&num_levels) {
            return Err(Error::invalid(format!(
                "a column family needs 1 to {} levels, not {num_levels}",
                crate::stats::MAX_LEVELS
            )));
        }
        let id = self.next_id();
        let edit = VersionEdit {
            families_added: vec![FamilyDescriptor {
                id,
                name: name.to_string(),
                options,
            }],
            next_family_id: Some(
                id.checked_add(1)
                    .ok_or_else(|| Error::invalid("every column family id has been used"))?,
            ),
            family_edits: vec![(
                id,
                VersionEdit {
                    log_number: Some(log_number),
                    num_levels: Some(num_levels as u64),
                    style: Some(style),
                    ..Default::default()
                },
            )],
            ..Default::default()
        };
        Ok((id, edit))
    }

    /// The edit that drops the family named `name` (pure).
    pub fn drop_edit(&self, name: &str) -> Result<VersionEdit> {
        match self.id_of(name) {
            Some(DEFAULT_FAMILY) => Err(Error::invalid(
                "the default column family cannot be dropped",
            )),
            Some(id) => Ok(VersionEdit {
                families_dropped: vec![id],
                ..Default::default()
            }),
            None => Err(Error::invalid(format!("no column family named {name:?}"))),
        }
    }

    /// The ids of the tables of the live families (for checks that span every tree).
    pub fn live_ids(&self) -> HashSet<u64> {
        self.all_files().map(|f| f.id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tier::Tier;
    use crate::version::FileMeta;

    fn table(id: u64, key: &[u8]) -> FileMeta {
        FileMeta::for_test(id, 10, key, Tier::Fast)
    }

    fn section(id: u32, e: VersionEdit) -> VersionEdit {
        VersionEdit {
            family_edits: vec![(id, e)],
            ..Default::default()
        }
    }

    fn create(f: &Families, name: &str) -> (u32, Families) {
        let (id, e) = f
            .create_edit(name, b"{}".to_vec(), 4, CompactionStyle::Leveled, 7)
            .unwrap();
        (id, f.apply(&e, &Arc::default()).unwrap().0)
    }

    #[test]
    fn families_are_created_changed_and_dropped_and_ids_never_come_back() {
        let reaper: Arc<Reaper> = Arc::default();
        let empty = Families::default();
        assert!(!empty.in_use());
        let (a, f) = create(&empty, "a");
        let (b, f) = create(&f, "b");
        assert_eq!((a, b), (1, 2));
        assert_eq!(f.id_of("b"), Some(2));
        assert_eq!(f.id_of(DEFAULT_FAMILY_NAME), Some(DEFAULT_FAMILY));
        assert_eq!(f.get(1).unwrap().version.num_levels(), 4);
        assert_eq!(f.min_log_number(), Some(7));

        // A section adds a table to family a and moves its log number.
        let add = section(
            a,
            VersionEdit {
                log_number: Some(9),
                added: vec![(1, table(30, b"k"))],
                ..Default::default()
            },
        );
        let (f, gone) = f.apply(&add, &reaper).unwrap();
        assert!(gone.is_empty());
        assert_eq!(f.get(a).unwrap().version.all_files().count(), 1);
        assert_eq!(f.min_log_number(), Some(7), "b still needs WAL 7");

        // Dropping a releases its table; the id is not handed out again.
        let (f, gone) = f.apply(&f.drop_edit("a").unwrap(), &reaper).unwrap();
        assert_eq!(gone.iter().map(|t| t.id).collect::<Vec<_>>(), vec![30]);
        assert!(f.get(a).is_none() && f.in_use());
        let (c, f) = create(&f, "a");
        assert_eq!(c, 3);

        // A snapshot rebuilds the same families on its own.
        let mut snap = VersionEdit::default();
        f.snapshot_into(&mut snap);
        let (back, _) = Families::default().apply(&snap, &reaper).unwrap();
        let names = |f: &Families| {
            f.iter()
                .map(|(id, t)| (id, t.name.clone(), t.log_number))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&back), names(&f));
        assert_eq!(back.next_id(), 4);
    }

    #[test]
    fn edits_that_break_an_invariant_are_refused() {
        let reaper: Arc<Reaper> = Arc::default();
        let (_, f) = create(&Families::default(), "a");
        let desc = |id: u32, name: &str| VersionEdit {
            families_added: vec![FamilyDescriptor {
                id,
                name: name.into(),
                options: Vec::new(),
            }],
            family_edits: vec![(
                id,
                VersionEdit {
                    num_levels: Some(3),
                    ..Default::default()
                },
            )],
            ..Default::default()
        };
        // (edit, what it breaks)
        let cases: Vec<(VersionEdit, &str)> = vec![
            (desc(2, "a"), "a second family of one name"),
            (desc(2, "default"), "a family named default"),
            (desc(1, "z"), "an id in use"),
            (desc(u32::MAX, "z"), "the id no next id can follow"),
            (
                VersionEdit {
                    next_family_id: Some(1),
                    ..Default::default()
                },
                "a next id below one handed out",
            ),
            (
                VersionEdit {
                    families_added: vec![
                        desc(2, "z").families_added[0].clone(),
                        FamilyDescriptor {
                            id: 3,
                            name: "z".into(),
                            options: Vec::new(),
                        },
                    ],
                    family_edits: vec![
                        desc(2, "z").family_edits[0].clone(),
                        desc(3, "z").family_edits[0].clone(),
                    ],
                    ..Default::default()
                },
                "two creations of one name in one record",
            ),
            (
                VersionEdit {
                    family_edits: Vec::new(),
                    ..desc(2, "z")
                },
                "a creation without its number of levels",
            ),
            (
                section(5, VersionEdit::default()),
                "a section of a family that does not exist",
            ),
            (
                VersionEdit {
                    families_dropped: vec![4],
                    ..Default::default()
                },
                "dropping a family that does not exist",
            ),
            (
                section(
                    1,
                    VersionEdit {
                        deleted: vec![(1, 99)],
                        ..Default::default()
                    },
                ),
                "deleting a table the family does not hold",
            ),
        ];
        for (e, what) in cases {
            let err = f.apply(&e, &reaper).err().expect(what);
            assert!(err.is_corruption(), "{what}: {err}");
        }
        // The API refuses what it must not log.
        assert!(f.drop_edit(DEFAULT_FAMILY_NAME).is_err());
        assert!(f.drop_edit("nope").is_err());
        assert!(f
            .create_edit("a", Vec::new(), 3, CompactionStyle::Leveled, 1)
            .is_err());
        assert!(f
            .create_edit("", Vec::new(), 3, CompactionStyle::Leveled, 1)
            .is_err());
        assert!(f
            .create_edit("z", Vec::new(), 0, CompactionStyle::Leveled, 1)
            .is_err());
    }
}
