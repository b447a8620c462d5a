//! The harness must catch what it exists to catch: a lost acknowledged write, a phantom value and
//! a half-applied batch, both in the verifier directly and through a whole run with a fake child
//! (exit status, summary counts, the kept database copy).

use strata::{Db, Options};
use strata_stress::families::Families;
use strata_stress::history::Version;
use strata_stress::keys;
use strata_stress::oracle::{verify, Batch, Expected, Op};

fn batch(seq: u64, ops: Vec<Op>) -> Batch {
    Batch {
        thread: 0,
        seq,
        ops,
    }
}

#[test]
fn verify_finds_lost_phantom_and_partial_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut expected = Expected::new(10);
    // Acknowledged: puts of 0, 1, 2 (seq 5); 2 then deleted by a range delete (seq 6).
    expected.apply_acked(0, &batch(5, vec![Op::Put(0), Op::Put(1), Op::Put(2)]));
    expected.apply_acked(0, &batch(6, vec![Op::DeleteRange(2, 4)]));
    db.put(keys::key(0), keys::value(0, 5)).unwrap();
    db.put(keys::key(1), keys::value(1, 5)).unwrap();
    let v = verify(&db, &Families::none(), 0, &mut expected, &[]).unwrap();
    assert_eq!((v.lost, v.phantoms), (0, 0), "{:?}", v.first);

    // Key 1 loses its write; key 5 gets a value nobody wrote; key 2 comes back (a lost delete).
    db.delete(keys::key(1)).unwrap();
    db.put(keys::key(5), keys::value(5, 99)).unwrap();
    db.put(keys::key(2), keys::value(2, 5)).unwrap();
    let v = verify(&db, &Families::none(), 1, &mut expected, &[]).unwrap();
    assert_eq!((v.lost, v.phantoms), (2, 1), "{v:?}");
    assert!(v.first.unwrap().contains("k0000001"));

    // An in-flight batch seen applied in part is a phantom; seen whole it becomes expected.
    let db2dir = tempfile::tempdir().unwrap();
    let db2 = Db::open(db2dir.path(), Options::default()).unwrap();
    let mut expected = Expected::new(10);
    let in_flight = [batch(7, vec![Op::Put(3), Op::Put(4)])];
    db2.put(keys::key(3), keys::value(3, 7)).unwrap();
    let v = verify(&db2, &Families::none(), 0, &mut expected, &in_flight).unwrap();
    assert_eq!((v.lost, v.phantoms), (0, 1), "{v:?}");
    db2.put(keys::key(4), keys::value(4, 7)).unwrap();
    let v = verify(&db2, &Families::none(), 0, &mut expected, &in_flight).unwrap();
    assert_eq!(
        (v.lost, v.phantoms, v.in_flight_applied),
        (0, 0, 1),
        "{v:?}"
    );
    assert_eq!(
        expected.versions[4],
        Version {
            seq: 7,
            exists: true
        }
    );
}

/// With column families, a key is read from its own family only: a write that went to
/// another family is a phantom there and lost from its own; one in its own family verifies.
#[test]
fn verify_reads_each_key_from_its_family() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options::default();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let fams = Families::open(&db, &o, 2).unwrap();
    assert_eq!(fams.extra(), 2);
    let mut expected = Expected::new(100);
    // Keys 1 (default family), 33 (family 1) and 70 (family 2), in one batch.
    let ops = vec![Op::Put(1), Op::Put(33), Op::Put(70)];
    expected.apply_acked(0, &batch(5, ops));
    let mut b = strata::WriteBatch::new();
    for i in [1, 33, 70] {
        fams.put(&mut b, i, &keys::value(i, 5));
    }
    db.write(b).unwrap();
    let v = verify(&db, &fams, 0, &mut expected, &[]).unwrap();
    assert_eq!((v.lost, v.phantoms), (0, 0), "{:?}", v.first);
    // Read without its families, the database misses two keys.
    let v = verify(&db, &Families::none(), 0, &mut expected, &[]).unwrap();
    assert_eq!(v.lost, 2, "{v:?}");
    // Key 34 (family 1) written to the default family instead.
    expected.apply_acked(0, &batch(6, vec![Op::Put(34)]));
    db.put(keys::key(34), keys::value(34, 6)).unwrap();
    let v = verify(&db, &fams, 0, &mut expected, &[]).unwrap();
    assert!(v.lost >= 1 && v.phantoms >= 1, "{v:?}");
}

#[test]
fn a_run_whose_child_lies_fails_and_keeps_the_database() {
    let dir = tempfile::tempdir().unwrap();
    // A fake child (arguments appended: --dir DIR --round R) that claims an acknowledged put of
    // key 0 and writes nothing, then waits to be killed (or, told to close, exits at once).
    let script = "printf 'O\\nI 0 4294967297 P0\\nA 0 4294967297\\n' > \"$2/events.log\"; [ \"$5\" = --seconds ] && exit 0; exec sleep 30";
    let sum = strata_stress::run(strata_stress::RunArgs {
        dir: dir.path().to_path_buf(),
        rounds: 3,
        seconds_per_round: 0.5,
        seed: Some(11),
        progress: false,
        replica_rounds: false,
        object_store_logs: false,
        column_families: false,
        child_exe: "sh".into(),
        child_args: vec!["-c".into(), script.into(), "sh".into()],
    })
    .unwrap();
    assert!(!sum.ok());
    assert_eq!((sum.rounds, sum.lost, sum.phantoms), (1, 1, 0), "{sum:?}");
    assert!(sum.line().starts_with("1 rounds, "), "{}", sum.line());
    assert!(dir.path().join("failed-11-0/db").is_dir());
    assert!(dir.path().join("failed-11-0/events.log").is_file());
}
