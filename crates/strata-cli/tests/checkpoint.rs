//! `strata checkpoint`, `strata clone` and `strata backup` as processes, beside a database this
//! test keeps open and writes to (so the tools work without the lock, on a moving source): the
//! JSON results, copies opened as databases with their own capacity prefixes, listing, release,
//! restore, purge; and SIGKILL at random moments of a checkpoint, clone, backup or restore:
//! afterwards the source is intact, whatever is at a target opens whole, every checkpoint or
//! backup listed exists and verifies, and the next backup finishes.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata::storage::object::CapacityOptions;
use strata::{Db, Options, ReadOptions};
use strata_test_support::Rng;

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", text(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

fn options(url: String) -> Options {
    Options {
        capacity: Some(CapacityOptions::new(url)),
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

/// A source at `root/src` with tables on both tiers (`file://root/cap`), open.
fn source(root: &Path) -> (Db, String, BTreeMap<Vec<u8>, Vec<u8>>) {
    let url = format!("file://{}", root.join("cap").display());
    let db = Db::open(root.join("src"), options(url.clone())).unwrap();
    for i in 0..20_000u32 {
        db.put(format!("key:{i:05}"), format!("v1-{i}-{}", "x".repeat(40)))
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..20_000u32).step_by(3) {
        db.put(format!("key:{i:05}"), format!("v2-{i}")).unwrap();
    }
    db.flush().unwrap();
    db.sync_wal().unwrap();
    let want = contents(&db);
    (db, url, want)
}

#[test]
fn checkpoint_and_clone_a_database_another_process_has_open() {
    let d = tempfile::tempdir().unwrap();
    let (db, url, want) = source(d.path());
    let src = d.path().join("src");
    let ck = d.path().join("ck");
    let o = strata(&[
        "checkpoint",
        "--db",
        src.to_str().unwrap(),
        "--capacity",
        &url,
        "--to",
        ck.to_str().unwrap(),
        "--json",
    ]);
    let info = json(&o);
    assert!(info["capacity_tables"].as_u64().unwrap() > 0, "{info}");
    assert!(
        info["sequence"].as_u64().unwrap() >= 20_000 + 6_667,
        "{info}"
    );
    let id = info["id"].as_u64().unwrap();
    // The human form names what was shared.
    let o = strata(&[
        "checkpoint",
        "--db",
        src.to_str().unwrap(),
        "--capacity",
        &url,
        "--to",
        d.path().join("ck-h").to_str().unwrap(),
    ]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("shared with the source"),
        "{}",
        text(&o)
    );

    // The source moves on and compacts away what the checkpoint shares.
    for i in 0..20_000u32 {
        db.put(format!("key:{i:05}"), "v3").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();

    // A clone of the checkpoint, opened with its own prefix, holds the checkpoint's data.
    let clone = d.path().join("clone");
    let clone_url = format!("file://{}", d.path().join("clone-cap").display());
    let o = strata(&[
        "clone",
        "--from",
        ck.to_str().unwrap(),
        "--db",
        clone.to_str().unwrap(),
        "--capacity",
        &clone_url,
        "--json",
    ]);
    let cinfo = json(&o);
    assert_eq!(cinfo["capacity_tables"], info["capacity_tables"], "{cinfo}");
    // The clone's prefix must not be the source's.
    let o = strata(&[
        "clone",
        "--from",
        ck.to_str().unwrap(),
        "--db",
        d.path().join("bad").to_str().unwrap(),
        "--capacity",
        &url,
    ]);
    assert!(
        !o.status.success() && text(&o).contains("prefix of its own"),
        "{}",
        text(&o)
    );

    let listed = json(&strata(&[
        "checkpoint",
        "--db",
        src.to_str().unwrap(),
        "--capacity",
        &url,
        "--list",
        "--json",
    ]));
    let ids: Vec<u64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{listed}");
    assert!(ids.contains(&id) && ids.contains(&cinfo["id"].as_u64().unwrap()));
    assert_eq!(db.checkpoints().unwrap().len(), 3);

    // Released at the source by the CLI: the clone keeps its own record.
    let o = strata(&[
        "checkpoint",
        "--db",
        src.to_str().unwrap(),
        "--capacity",
        &url,
        "--release",
        &id.to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = strata(&[
        "checkpoint",
        "--db",
        src.to_str().unwrap(),
        "--capacity",
        &url,
        "--release",
        &id.to_string(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("no checkpoint"),
        "{}",
        text(&o)
    );
    let cdb = Db::open(&clone, options(clone_url.clone())).unwrap();
    assert_eq!(contents(&cdb), want);
    cdb.put("only-in-clone", "1").unwrap();
    assert_eq!(db.get("only-in-clone").unwrap(), None);
    cdb.close().unwrap();
    db.close().unwrap();
}

#[test]
fn sigkill_during_checkpoints_and_clones_leaves_nothing_listed_that_is_not_whole() {
    let d = tempfile::tempdir().unwrap();
    let (db, url, want) = source(d.path());
    let db = Arc::new(db);
    let src = d.path().join("src");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("moving:{:04}", i % 1000), i.to_string())
                    .unwrap();
                i += 1;
            }
        })
    };
    let seed = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64);
    eprintln!("seed {seed} (STRATA_SEED replays it)");
    let mut rng = Rng::new(seed);
    let mut finished = 0;
    for round in 0..8 {
        let to = d.path().join(format!("ck{round}"));
        let copy_url = format!(
            "file://{}",
            d.path().join(format!("ck{round}-cap")).display()
        );
        // Even rounds take checkpoints, odd ones clones.
        let args: Vec<&str> = if round % 2 == 0 {
            vec![
                "checkpoint",
                "--db",
                src.to_str().unwrap(),
                "--capacity",
                &url,
                "--to",
                to.to_str().unwrap(),
            ]
        } else {
            vec![
                "clone",
                "--from",
                src.to_str().unwrap(),
                "--source-capacity",
                &url,
                "--db",
                to.to_str().unwrap(),
                "--capacity",
                &copy_url,
            ]
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(400)));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        }
        if to.exists() {
            // Whatever is at the target is a whole checkpoint or clone.
            let copy = Db::open(&to, options(copy_url))
                .unwrap_or_else(|e| panic!("seed {seed} round {round}: {e}"));
            let got = contents(&copy);
            for (k, v) in &want {
                assert_eq!(got.get(k), Some(v), "seed {seed} round {round}: {k:?}");
            }
            copy.close().unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    // Every listed (complete) checkpoint exists; nothing interrupted is listed.
    for r in db.checkpoints().unwrap() {
        assert!(
            Path::new(&r.path).join("CURRENT").exists(),
            "seed {seed}: listed but missing: {}",
            r.path
        );
    }
    // The source is intact, and still compacts and collects.
    db.compact_range(None, None).unwrap();
    let now = contents(&db);
    for (k, v) in &want {
        assert_eq!(now.get(k), Some(v), "seed {seed}: the source lost {k:?}");
    }
    eprintln!("{finished} of 8 checkpoints finished before the kill");
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
}

/// `strata backup` as processes beside a database this test keeps open and writes to:
/// create (to a directory), list, verify, restore into a new directory and capacity prefix,
/// an incremental second backup, purge and delete, each with `--json`.
#[test]
fn backup_create_list_verify_restore_purge_beside_a_running_database() {
    let d = tempfile::tempdir().unwrap();
    let (db, url, want) = source(d.path());
    let src = d.path().join("src");
    let to = d.path().join("backups");
    let to = to.to_str().unwrap();
    let create = || {
        json(&strata(&[
            "backup",
            "create",
            "--db",
            src.to_str().unwrap(),
            "--capacity",
            &url,
            "--to",
            to,
            "--app-metadata",
            "cli",
            "--json",
        ]))
    };
    let first = create();
    assert_eq!(first["id"], 1, "{first}");
    assert_eq!(first["new_bytes"], first["bytes"], "{first}");
    db.put("after-the-first", "1").unwrap();
    db.flush().unwrap();
    let second = create();
    assert_eq!(second["id"], 2, "{second}");
    assert!(
        second["new_bytes"].as_u64().unwrap() < second["bytes"].as_u64().unwrap() / 2,
        "incremental: {second}"
    );
    let list = json(&strata(&["backup", "list", "--from", to, "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    assert_eq!(list[0]["app_metadata"], "cli");
    let v = json(&strata(&[
        "backup", "verify", "--from", to, "--id", "1", "--json",
    ]));
    assert_eq!(v[0]["damaged"].as_array().unwrap().len(), 0, "{v}");
    let restored = d.path().join("restored");
    let rcap = format!("file://{}", d.path().join("restored-cap").display());
    let r = json(&strata(&[
        "backup",
        "restore",
        "--from",
        to,
        "--id",
        "1",
        "--db",
        restored.to_str().unwrap(),
        "--capacity",
        &rcap,
        "--json",
    ]));
    assert!(r["capacity_tables"].as_u64().unwrap() > 0, "{r}");
    let rdb = Db::open(&restored, options(rcap.clone())).unwrap();
    assert_eq!(contents(&rdb), want);
    rdb.close().unwrap();
    // Restoring over an existing directory or without a capacity tier is refused.
    let o = strata(&[
        "backup",
        "restore",
        "--from",
        to,
        "--db",
        restored.to_str().unwrap(),
        "--capacity",
        &rcap,
    ]);
    assert!(
        !o.status.success() && text(&o).contains("new directory"),
        "{}",
        text(&o)
    );
    let o = strata(&[
        "backup",
        "restore",
        "--from",
        to,
        "--db",
        d.path().join("x").to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--capacity"),
        "{}",
        text(&o)
    );
    let p = json(&strata(&[
        "backup", "purge", "--from", to, "--keep", "1", "--json",
    ]));
    assert_eq!(p["deleted_backups"], serde_json::json!([1]), "{p}");
    let p = json(&strata(&[
        "backup", "delete", "--from", to, "--id", "2", "--json",
    ]));
    assert_eq!(p["deleted_backups"], serde_json::json!([2]), "{p}");
    let list = json(&strata(&["backup", "list", "--from", to, "--json"]));
    assert!(list.as_array().unwrap().is_empty(), "{list}");
    db.close().unwrap();
}

/// SIGKILL at random moments of `strata backup create` and `strata backup restore`: the
/// source stays intact, an interrupted backup is never listed (every listed one verifies), the
/// next backup finishes, and an interrupted restore leaves nothing at its target.
#[test]
fn sigkill_during_backup_and_restore_leaves_nothing_listed_that_is_not_whole() {
    let d = tempfile::tempdir().unwrap();
    let (db, url, want) = source(d.path());
    let src = d.path().join("src");
    let to = d.path().join("backups");
    let to = to.to_str().unwrap();
    let seed = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64);
    eprintln!("seed {seed} (STRATA_SEED replays it)");
    let mut rng = Rng::new(seed);
    let run_killed = |args: &[&str], after_ms: u64| -> bool {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        let _ = child.kill();
        child.wait().unwrap().success()
    };
    let mut finished = 0;
    for attempt in 1..=5 {
        let ms = rng.below(600);
        if run_killed(
            &[
                "backup",
                "create",
                "--db",
                src.to_str().unwrap(),
                "--capacity",
                &url,
                "--to",
                to,
            ],
            ms,
        ) {
            finished += 1;
        }
        // Every finished backup is listed; a killed one is listed only if its document was
        // written before the kill (then it verifies below like the rest).
        let list = json(&strata(&["backup", "list", "--from", to, "--json"]));
        let listed = list.as_array().unwrap().len();
        assert!(
            (finished..=attempt).contains(&listed),
            "seed {seed}: {listed} listed after {finished} of {attempt} finished: {list}"
        );
    }
    let last = json(&strata(&[
        "backup",
        "create",
        "--db",
        src.to_str().unwrap(),
        "--capacity",
        &url,
        "--to",
        to,
        "--json",
    ]));
    let v = json(&strata(&["backup", "verify", "--from", to, "--json"]));
    for r in v.as_array().unwrap() {
        assert_eq!(
            r["damaged"].as_array().unwrap().len(),
            0,
            "seed {seed}: {v}"
        );
    }
    let id = last["id"].to_string();
    for round in 0..4 {
        let target = d.path().join(format!("r{round}"));
        let rcap = format!(
            "file://{}",
            d.path().join(format!("r{round}-cap")).display()
        );
        let ms = rng.below(400);
        run_killed(
            &[
                "backup",
                "restore",
                "--from",
                to,
                "--id",
                &id,
                "--db",
                target.to_str().unwrap(),
                "--capacity",
                &rcap,
            ],
            ms,
        );
        if target.exists() {
            let r = Db::open(&target, options(rcap)).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(contents(&r), want, "seed {seed} round {round}");
            r.close().unwrap();
        }
    }
    // The source is intact, its backup checkpoints released or lapsing, and it compacts.
    db.compact_range(None, None).unwrap();
    assert_eq!(contents(&db), want, "seed {seed}: the source changed");
    // What the killed backups uploaded is removed by the next purge.
    let p = json(&strata(&[
        "backup", "purge", "--from", to, "--keep", "1", "--json",
    ]));
    let left = json(&strata(&["backup", "verify", "--from", to, "--json"]));
    assert_eq!(left.as_array().unwrap().len(), 1, "seed {seed}: {p} {left}");
    eprintln!("{finished} of 5 killed backups had finished");
    db.close().unwrap();
}
