//! Databases written by earlier releases open and read back exactly: one fixture per on-disk
//! format this release reads (DESIGN.md: "a fixture of every released format version stays in
//! `tests/` and must open"; docs/format.md §12 lists the versions).
//!
//! Each fixture, `tests/fixtures/<name>/`, holds a database as a release left it after a clean
//! close — tables on several levels, a WAL with writes never flushed, and, where the format has
//! them, capacity-tier tables (`cap/`, a `file://` directory) and extended-WAL key lists — and
//! `expected.txt`: its whole contents, one `hex(key) hex(value)` line per key, in key order.
//! The test copies the fixture (opening writes to it), opens it with the options it was written
//! with, and compares a full scan and a point read of every key with `expected.txt`; then it
//! writes, reopens, and reads again, so the release can also carry the old database forward.
//!
//! Fixtures are written once, by the release whose format they keep, and never rewritten: a
//! new format gets a new fixture beside the old ones. To write one (after adding its case to
//! `FIXTURES`): `STRATA_WRITE_FIXTURES=1 cargo test -p strata --test format_compat -- --ignored`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::Rng;
use strata::compaction::ForestOptions;
use strata::merge::U64Add;
use strata::storage::object::CapacityOptions;
use strata::{CompactionStyle, Compression, Db, Options, ReadOptions, WriteBatch, WriteOptions};

/// A fixture: its directory name, the format it keeps, and the options it is opened with.
struct Fixture {
    name: &'static str,
    /// What it covers (written to the fixture's README).
    covers: &'static str,
    options: fn(&Path) -> Options,
}

const FIXTURES: &[Fixture] = &[
    Fixture {
        name: "manifest-v1-leveled",
        covers: "manifest format strata.manifest.v1, table format 1, leveled compaction, one \
                 tier: puts, deletes, a range delete and u64-add merge operands in tables on \
                 several levels and in an unflushed WAL",
        options: leveled,
    },
    Fixture {
        name: "manifest-v2-capacity",
        covers: "manifest format strata.manifest.v2 (extended WAL in log/: key-list and \
                 log-link records, tag 11 pins), a capacity tier holding the last level \
                 (tag-6 tier byte 1, objects under cap/), and an unflushed WAL",
        options: capacity,
    },
    Fixture {
        name: "manifest-v3-families",
        covers: "manifest format strata.manifest.v3 (column families: tags 12-15, a dropped \
                 family, a leveled and a split-forest family with their CfOptions JSON), \
                 write-batch operations of families (kind | 0x80, varint32 family) in tables \
                 and in an unflushed WAL, batches across families; expected-<family>.txt \
                 holds each family's contents",
        options: leveled,
    },
    Fixture {
        name: "manifest-v1-forest",
        covers: "manifest format strata.manifest.v1 with compaction style split forest (tag 8) \
                 and its trees (tree ids on tag-6 entries), and an unflushed WAL",
        options: forest,
    },
];

fn base() -> Options {
    Options {
        write_buffer_size: 16 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 8 * 1024,
        block_size: 512,
        bloom_bits_per_key: 10.0,
        num_levels: 5,
        compression_per_level: vec![Compression::None, Compression::Lz4, Compression::Zstd(1)],
        merge_operator: Some(Arc::new(U64Add)),
        ..Options::default()
    }
}

fn leveled(_: &Path) -> Options {
    base()
}

fn capacity(dir: &Path) -> Options {
    let mut o = base();
    o.extended_wal = true;
    o.extended_wal_ttl = None;
    o.wal_location = Some(dir.join("log"));
    o.capacity = Some(CapacityOptions::new(format!(
        "file://{}",
        dir.join("cap").display()
    )));
    o.capacity_levels = 1;
    o
}

fn forest(_: &Path) -> Options {
    Options {
        compaction_style: CompactionStyle::SplitForest,
        forest: ForestOptions {
            trees_per_level: 2,
            cleaning_threshold: 1,
            search_threads: 0,
        },
        ..base()
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn read_expected(path: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').expect("`hex(key) hex(value)`");
            (unhex(k), unhex(v))
        })
        .collect()
}

fn check(db: &Db, expected: &BTreeMap<Vec<u8>, Vec<u8>>, ctx: &str) {
    let got = common::contents(db);
    assert_eq!(got.len(), expected.len(), "{ctx}: number of keys");
    for ((gk, gv), (ek, ev)) in got.iter().zip(expected) {
        assert_eq!(gk, ek, "{ctx}: keys differ");
        assert_eq!(gv, ev, "{ctx}: value of {}", String::from_utf8_lossy(ek));
    }
    for (k, v) in expected {
        let got = db.get_opt(&ReadOptions::default(), k).unwrap();
        assert_eq!(got.as_deref(), Some(v.as_slice()), "{ctx}: get");
    }
    assert_eq!(db.get(b"never written").unwrap(), None, "{ctx}");
}

#[test]
fn every_fixture_opens_and_reads_back_exactly() {
    for f in FIXTURES {
        let src = fixtures_dir().join(f.name);
        assert!(
            src.join("expected.txt").exists(),
            "fixture {} is missing (see the module docs)",
            f.name
        );
        let tmp = tempfile::tempdir().unwrap();
        copy_image(&src, tmp.path());
        let mut expected = read_expected(&tmp.path().join("expected.txt"));
        let dir = tmp.path().join("db");
        let ctx = format!("fixture {}", f.name);

        let db = Db::open(&dir, (f.options)(tmp.path())).unwrap_or_else(|e| {
            panic!("{ctx}: the release cannot open it: {e}");
        });
        check(&db, &expected, &ctx);
        let families = family_expectations(tmp.path());
        check_families(&db, &families, &ctx);
        // Carried forward: written to by this release, flushed, compacted and reopened.
        let mut b = WriteBatch::new();
        b.put(b"written-after-upgrade", b"yes");
        b.merge(b"counter-0", U64Add::encode(5));
        db.write(b).unwrap();
        let c0 = expected
            .entry(b"counter-0".to_vec())
            .or_insert_with(|| 0u64.to_le_bytes().to_vec());
        *c0 = (U64Add::decode(c0).unwrap() + 5).to_le_bytes().to_vec();
        expected.insert(b"written-after-upgrade".to_vec(), b"yes".to_vec());
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        check(
            &db,
            &expected,
            &format!("{ctx}, after a write and a full compaction"),
        );
        db.close().unwrap();

        let db = Db::open(&dir, (f.options)(tmp.path())).unwrap();
        check(&db, &expected, &format!("{ctx}, reopened"));
        check_families(&db, &families, &format!("{ctx}, reopened"));
        db.close().unwrap();
    }
}

/// The column families a fixture holds besides the default one: `expected-<name>.txt` each.
fn family_expectations(dir: &Path) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let family = name
                .strip_prefix("expected-")?
                .strip_suffix(".txt")?
                .to_string();
            Some((family, read_expected(&dir.join(&name))))
        })
        .collect()
}

fn check_families(db: &Db, families: &BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>, ctx: &str) {
    let mut names: Vec<String> = families.keys().cloned().collect();
    names.insert(0, "default".to_string());
    let mut live = db.column_families();
    live[1..].sort();
    assert_eq!(live, names, "{ctx}: column families");
    for (name, expected) in families {
        let cf = db.cf(name).unwrap();
        assert_eq!(
            &common::contents_cf(db, &cf),
            expected,
            "{ctx}: family {name}"
        );
        for (k, v) in expected {
            assert_eq!(
                db.get_cf(&cf, k).unwrap().as_deref(),
                Some(v.as_slice()),
                "{ctx}: {name}"
            );
        }
    }
}

/// Writes the fixtures that do not exist yet (never overwrites one). Run by hand; see the
/// module docs.
///
/// A fixture is the image of an open database, copied while it is quiescent (compactions
/// done, nothing being written): the last writes are in the WAL only, as after a crash or a
/// power loss, so that opening it replays a WAL (a clean close would flush it first).
#[test]
#[ignore]
fn write_fixtures() {
    if std::env::var("STRATA_WRITE_FIXTURES").is_err() {
        eprintln!("set STRATA_WRITE_FIXTURES=1 to write missing fixtures");
        return;
    }
    for f in FIXTURES {
        let out = fixtures_dir().join(f.name);
        if out.exists() {
            eprintln!("{} exists: kept", f.name);
            continue;
        }
        let live = tempfile::tempdir().unwrap();
        let db = Db::open(live.path().join("db"), (f.options)(live.path())).unwrap();
        let model = workload(&db);
        // After the default family's workload, which leaves its last writes in the WAL: the
        // families' own flushes leave those alone.
        let families = if f.name == "manifest-v3-families" {
            family_workload(&db)
        } else {
            BTreeMap::new()
        };
        assert_eq!(
            common::contents(&db),
            model,
            "{}: the workload's own check",
            f.name
        );
        copy_image(live.path(), &out);
        drop(db);

        let mut text = String::new();
        for (k, v) in &model {
            text.push_str(&format!("{} {}\n", hex(k), hex(v)));
        }
        std::fs::write(out.join("expected.txt"), text).unwrap();
        for (family, contents) in &families {
            let text: String = contents
                .iter()
                .map(|(k, v)| format!("{} {}\n", hex(k), hex(v)))
                .collect();
            std::fs::write(out.join(format!("expected-{family}.txt")), text).unwrap();
        }
        let commit = std::process::Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        std::fs::write(
            out.join("README.md"),
            format!(
                "# {}\n\nWritten by `write_fixtures` in `tests/format_compat.rs` at commit \
                 `{commit}`; never rewrite it. Covers: {}.\n",
                f.name, f.covers
            ),
        )
        .unwrap();
        eprintln!("{} written", f.name);
    }
}

/// Copies the database image under `from` to `to`, without the lock files.
fn copy_image(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_image(&entry.path(), &target);
        } else if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The column families of the v3 fixture: one created, written and dropped; a leveled and a
/// split-forest family written in batches across both, flushed and
/// compacted, with a last synced batch in the WAL only (the default family's workload, which
/// runs after this, leaves more). Returns each live family's contents.
fn family_workload(db: &Db) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    let small = strata::CfOptions {
        write_buffer_size: 16 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 * 1024,
        target_file_size_base: 8 * 1024,
        block_size: 512,
        ..strata::CfOptions::from_options(&base())
    };
    let gone = db.create_cf("dropped", small.clone()).unwrap();
    for i in 0..300 {
        db.put_cf(&gone, common::key(i), b"never read").unwrap();
    }
    db.flush_cf(&gone).unwrap();
    db.drop_cf("dropped").unwrap();
    let a = db.create_cf("leveled", small.clone()).unwrap();
    let b = db
        .create_cf(
            "forest",
            strata::CfOptions {
                compaction_style: CompactionStyle::SplitForest,
                num_levels: 4,
                ..small
            },
        )
        .unwrap();
    let mut rng = Rng::new(0x4641_4d49_4c59);
    let mut ma = BTreeMap::new();
    let mut mb = BTreeMap::new();
    for round in 0..3u64 {
        for _ in 0..40 {
            let mut batch = WriteBatch::new();
            for _ in 0..10 {
                let i = rng.below(800);
                let k = common::key(i);
                let v = format!("{round}-{i}-{}", rng.below(1 << 20)).into_bytes();
                if rng.below(8) == 0 {
                    batch.delete_cf(&a, &k);
                    ma.remove(&k);
                } else {
                    batch.put_cf(&a, &k, &v);
                    ma.insert(k.clone(), v.clone());
                }
                batch.put_cf(&b, &k, &v);
                mb.insert(k, v);
            }
            db.write_opt(
                batch,
                &WriteOptions {
                    sync: round == 2,
                    ..Default::default()
                },
            )
            .unwrap();
        }
        if round == 0 {
            db.compact_range_cf(&a, None, None).unwrap();
            db.compact_range_cf(&b, None, None).unwrap();
        } else if round == 1 {
            db.flush_cf(&a).unwrap();
            db.flush_cf(&b).unwrap();
        }
        db.wait_for_compactions().unwrap();
    }
    [("leveled".to_string(), ma), ("forest".to_string(), mb)].into()
}

/// A fixed workload: flushes and a full compaction (tables on the last level and above it),
/// then writes left in the WAL. Returns the contents it leaves.
fn workload(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = Rng::new(0x5747_4154_4146_4958);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let value = |rng: &mut Rng, i: u64, round: u64| {
        let len = 20 + rng.below(80) as usize;
        let mut v = format!("value-{i}-{round}-").into_bytes();
        v.resize(len.max(v.len()), b'a' + (i % 26) as u8);
        v
    };
    for round in 0..4u64 {
        for chunk in 0..20u64 {
            let mut b = WriteBatch::new();
            for _ in 0..25 {
                let i = rng.below(1200);
                let k = common::key(i);
                match rng.below(10) {
                    0 => {
                        b.delete(&k);
                        model.remove(&k);
                    }
                    1 => {
                        let c = format!("counter-{}", rng.below(8)).into_bytes();
                        let n = 1 + rng.below(100);
                        b.merge(&c, U64Add::encode(n));
                        let e = model
                            .entry(c)
                            .or_insert_with(|| 0u64.to_le_bytes().to_vec());
                        *e = (U64Add::decode(e).unwrap() + n).to_le_bytes().to_vec();
                    }
                    _ => {
                        let v = value(&mut rng, i, round);
                        b.put(&k, &v);
                        model.insert(k, v);
                    }
                }
            }
            if round == 2 && chunk == 10 {
                let (from, to) = (common::key(300), common::key(340));
                b.delete_range(&from, &to);
                let doomed: Vec<_> = model.range(from..to).map(|(k, _)| k.clone()).collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
            // The last round stays in the WAL only; synced so the image holds it.
            let sync = WriteOptions {
                sync: round == 3,
                ..Default::default()
            };
            db.write_opt(b, &sync).unwrap();
        }
        match round {
            // Everything to the last level (the capacity tier, where there is one).
            1 => db.compact_range(None, None).unwrap(),
            2 => db.flush().unwrap(),
            _ => {}
        }
        db.wait_for_compactions().unwrap();
    }
    model
}
