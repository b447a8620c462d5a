//! Tests of `VersionSet` with column families: v3 manifests written, recovered and refused.

use super::*;
use crate::storage::LocalFs;
use crate::tier::Tier;
use crate::version::{FileMeta, TableFile};
use crate::wal::LogWriter;

fn meta(id: u64, size: u64, key: &[u8]) -> FileMeta {
    FileMeta::for_test(id, size, key, Tier::Fast)
}

/// The first table of family `id`'s tree.
fn first_table(vs: &VersionSet, id: u32) -> Arc<TableFile> {
    let tree = vs.families().get(id).expect("the family is live");
    let first = tree.version.all_files().next();
    first.expect("the family holds a table").clone()
}

fn first_format(dir: &Path) -> String {
    let dump = crate::inspect::read_manifest(dir).unwrap();
    dump.edits[0].format.clone().unwrap()
}

#[test]
fn families_live_in_the_manifest_and_survive_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let st: Arc<dyn Storage> = Arc::new(LocalFs);
    let mut vs = VersionSet::create(
        dir.path(),
        st.clone(),
        7,
        64 << 20,
        CompactionStyle::Leveled,
    )
    .unwrap();
    let d = vs.new_file_number();
    vs.log_and_apply(VersionEdit {
        log_number: Some(5),
        added: vec![(1, meta(d, 10, b"a"))],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        first_format(dir.path()),
        MANIFEST_FORMAT,
        "no family: v1 as before"
    );

    let a = vs
        .create_family("a", b"{}".to_vec(), 4, CompactionStyle::SplitForest, 4)
        .unwrap();
    assert_eq!(
        first_format(dir.path()),
        MANIFEST_FORMAT_V3,
        "the first family starts a v3 manifest"
    );
    assert_eq!(
        vs.wal_bound(),
        4,
        "family a needs WAL 4 though the default family flushed to 5"
    );
    let t = vs.new_file_number();
    vs.log_and_apply(VersionEdit {
        family_edits: vec![(
            a,
            VersionEdit {
                log_number: Some(6),
                added: vec![(2, meta(t, 10, b"k"))],
                ..Default::default()
            },
        )],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(vs.wal_bound(), 5);
    // A table of one id in two families is refused, and nothing changes.
    let dup = VersionEdit {
        family_edits: vec![(
            a,
            VersionEdit {
                added: vec![(3, meta(d, 10, b"z"))],
                ..Default::default()
            },
        )],
        ..Default::default()
    };
    assert!(vs.log_and_apply(dup).err().unwrap().is_corruption());
    drop(vs);

    // Recovery replays the appended records; a rewrite keeps the same state.
    for round in 0..2 {
        let mut vs = VersionSet::recover(dir.path(), st.clone(), 7, 64 << 20).unwrap();
        let f = vs.families().get(a).expect("family a recovered");
        assert_eq!(
            (f.name.as_str(), f.log_number, f.style),
            ("a", 6, CompactionStyle::SplitForest),
            "round {round}"
        );
        assert_eq!(f.version.num_levels(), 4);
        assert_eq!(
            f.version.levels[2]
                .files()
                .map(|f| f.id)
                .collect::<Vec<_>>(),
            vec![t]
        );
        assert_eq!(vs.current().all_files().count(), 1);
        assert!(vs.new_file_number() > t);
        assert!(vs
            .refuse_families("this test")
            .unwrap_err()
            .to_string()
            .contains("\"a\""));
        vs.log_and_apply(VersionEdit::default()).unwrap(); // a new manifest from the snapshot
    }

    // Dropping releases the family's tables; the manifest stays v3 and the id is not reused.
    let mut vs = VersionSet::recover(dir.path(), st.clone(), 7, 64 << 20).unwrap();
    let held = first_table(&vs, a);
    vs.drop_family("a").unwrap();
    assert!(held.is_obsolete());
    assert!(vs.drop_family("default").is_err());
    drop((vs, held));
    let mut vs = VersionSet::recover(dir.path(), st, 7, 64 << 20).unwrap();
    assert!(vs.families().get(a).is_none() && vs.families().in_use());
    assert_eq!(
        vs.create_family("a", Vec::new(), 3, CompactionStyle::Leveled, 9)
            .unwrap(),
        a + 1
    );
    assert_eq!(first_format(dir.path()), MANIFEST_FORMAT_V3);
}

/// Family fields in a v1 manifest are corruption: a release that writes them writes v3.
#[test]
fn family_fields_in_a_v1_manifest_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = LogWriter::new(
        LocalFs.create(&dir.path().join("MANIFEST-000001")).unwrap(),
        1,
    );
    let first = VersionEdit {
        format: Some(MANIFEST_FORMAT.into()),
        num_levels: Some(7),
        ..Default::default()
    };
    let (_, add) = Families::default()
        .create_edit("a", Vec::new(), 3, CompactionStyle::Leveled, 1)
        .unwrap();
    for e in [first, add] {
        w.add_record(&e.encode()).unwrap();
    }
    w.sync().unwrap();
    std::fs::write(current_path(dir.path()), "MANIFEST-000001\n").unwrap();
    let err = VersionSet::recover(dir.path(), Arc::new(LocalFs), 7, 64 << 20)
        .err()
        .unwrap();
    assert!(
        err.is_corruption() && err.to_string().contains("older than v3"),
        "{err}"
    );
}

/// `Db::open` serves the families the manifest records, with the shape the manifest gives
/// them (empty options bytes: every other option at its default); the extended WAL, which
/// does not support families yet, refuses the database naming them.
#[test]
fn db_open_serves_the_families_of_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let opts = crate::Options {
        create_if_missing: true,
        ..Default::default()
    };
    let db = crate::Db::open(dir.path(), opts.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let mut vs =
        VersionSet::recover(dir.path(), Arc::new(LocalFs), opts.num_levels, 64 << 20).unwrap();
    // Its writes would start in the database's live log.
    let log = vs.log_number;
    vs.create_family("meta", Vec::new(), 3, CompactionStyle::Leveled, log)
        .unwrap();
    drop(vs);
    let db = crate::Db::open(dir.path(), opts.clone()).unwrap();
    let meta = db.cf("meta").unwrap();
    assert_eq!(meta.options().num_levels, 3);
    db.put_cf(&meta, b"m", b"1").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    let ext = crate::Options {
        extended_wal: true,
        wal_location: Some(dir.path().join("wal")),
        ..opts
    };
    let err = crate::Db::open(dir.path(), ext).err().unwrap();
    assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
    assert!(
        err.to_string().contains("column families") && err.to_string().contains("meta"),
        "{err}"
    );
}

/// Found in review: a table one tree releases and another takes in the same edit (a move
/// between families) must stay live, though the releasing tree's handle is dropped.
#[test]
fn a_table_moved_between_families_is_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let st: Arc<dyn Storage> = Arc::new(LocalFs);
    let mut vs = VersionSet::create(dir.path(), st, 7, 64 << 20, CompactionStyle::Leveled).unwrap();
    let a = vs
        .create_family("a", Vec::new(), 3, CompactionStyle::Leveled, 1)
        .unwrap();
    let t = vs.new_file_number();
    let section = |e: VersionEdit| VersionEdit {
        family_edits: vec![(a, e)],
        ..Default::default()
    };
    vs.log_and_apply(section(VersionEdit {
        added: vec![(1, meta(t, 10, b"k"))],
        ..Default::default()
    }))
    .unwrap();
    let held = first_table(&vs, a);
    vs.log_and_apply(VersionEdit {
        added: vec![(1, meta(t, 10, b"k"))],
        ..section(VersionEdit {
            deleted: vec![(1, t)],
            ..Default::default()
        })
    })
    .unwrap();
    assert!(
        !held.is_obsolete(),
        "the table lives on in the default family"
    );
    assert_eq!(vs.current().all_files().next().unwrap().id, t);
    // Sections the API must not log are refused before anything changes.
    for bad in [
        (0, VersionEdit::default()),
        (
            a,
            VersionEdit {
                last_sequence: Some(9),
                ..Default::default()
            },
        ),
    ] {
        let e = VersionEdit {
            family_edits: vec![bad],
            ..Default::default()
        };
        assert_eq!(
            vs.log_and_apply(e).err().unwrap().kind(),
            crate::ErrorKind::InvalidArgument
        );
    }
}
