//! SAVE, BGSAVE and LASTSAVE with a real Redis client, on a server whose data reaches a
//! `file://` capacity tier: a save is a checkpoint in `backup-dir` that a second server opens
//! (with its own capacity prefix) and serves the same data from; writes after the save are not
//! in it; `INFO persistence` tells Redis's fields; only the newest `backup-keep` saves stay.

mod common;

use std::time::{Duration, Instant};

use common::{test_config, TestServer};
use redis::Commands;

fn persistence(c: &mut redis::Connection) -> std::collections::HashMap<String, String> {
    let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
    info.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn bgsave_writes_a_checkpoint_another_server_opens() {
    let d = tempfile::tempdir().unwrap();
    let mut config = test_config(&d.path().join("data"));
    config.engine.capacity = format!("file://{}", d.path().join("cap").display());
    config.engine.fast_levels = Some(0);
    config.backup_keep = 2;
    let s = TestServer::start(config.clone());
    let mut c = s.conn();
    let started: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    for i in 0..3000 {
        let _: () = c.set(format!("key:{i}"), format!("value:{i}")).unwrap();
    }
    let p = persistence(&mut c);
    assert_eq!(p["rdb_bgsave_in_progress"], "0");
    assert_eq!(p["rdb_last_bgsave_time_sec"], "-1");
    assert!(
        p["rdb_changes_since_last_save"].parse::<u64>().unwrap() >= 3000,
        "{p:?}"
    );

    let r: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    assert_eq!(r, "Background saving started");
    let deadline = Instant::now() + Duration::from_secs(60);
    let p = loop {
        let p = persistence(&mut c);
        if p["rdb_bgsave_in_progress"] == "0" && p["rdb_saves"] == "1" {
            break p;
        }
        assert!(Instant::now() < deadline, "BGSAVE never finished: {p:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(p["rdb_last_bgsave_status"], "ok", "{p:?}");
    assert_eq!(p["rdb_changes_since_last_save"], "0", "{p:?}");
    let last: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(last >= started, "{last} < {started}");
    let saved = std::path::PathBuf::from(&p["rdb_last_save_path"]);
    assert!(saved.starts_with(config.backup_dir()), "{saved:?}");
    // Writes after the save are not in it.
    let _: () = c.set("key:0", "changed").unwrap();
    let _: () = c.set("after", "1").unwrap();

    // Two more saves (SAVE runs in the foreground): only the newest two directories stay.
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    let kept: Vec<_> = std::fs::read_dir(config.backup_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(!saved.exists(), "the oldest save was deleted");
    let listed: Vec<String> = s
        .shared()
        .store
        .db()
        .unwrap()
        .checkpoints()
        .unwrap()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(listed.len(), 2, "the oldest save was released: {listed:?}");
    let newest = kept.iter().max().unwrap().clone();
    drop(c);
    s.stop();

    // The newest save opens as a database with a capacity prefix of its own.
    let mut copy = test_config(&newest);
    copy.engine.capacity = format!("file://{}", d.path().join("copy-cap").display());
    copy.engine.fast_levels = Some(0);
    let s2 = TestServer::start(copy);
    let mut c2 = s2.conn();
    let v: String = c2.get("key:0").unwrap();
    assert_eq!(v, "changed");
    let v: String = c2.get("key:2999").unwrap();
    assert_eq!(v, "value:2999");
    let n: i64 = redis::cmd("DBSIZE").query(&mut c2).unwrap();
    assert_eq!(n, 3001);
    drop(c2);
    s2.stop();
}

#[test]
fn bgsave_refuses_a_second_one_and_rejects_bad_arguments() {
    let d = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(&d.path().join("data")));
    let mut c = s.conn();
    let e = redis::cmd("BGSAVE")
        .arg("NOW")
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(common::err_text(&e).contains("syntax error"), "{e}");
    let e = redis::cmd("LASTSAVE")
        .arg("x")
        .query::<i64>(&mut c)
        .unwrap_err();
    assert!(
        common::err_text(&e).contains("wrong number of arguments"),
        "{e}"
    );
    let dir: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("backup-dir")
        .query(&mut c)
        .unwrap();
    assert!(dir[1].ends_with("data-checkpoints"), "{dir:?}");
}

/// With `backup-url` set, BGSAVE writes an incremental backup there (an independent copy of
/// both tiers) and purges to the newest `backup-keep`; the backup restores into a database a
/// second server serves the same data from.
#[test]
fn bgsave_with_a_backup_url_writes_backups_that_restore() {
    let d = tempfile::tempdir().unwrap();
    let mut config = test_config(&d.path().join("data"));
    config.engine.capacity = format!("file://{}", d.path().join("cap").display());
    config.engine.fast_levels = Some(0);
    let backups = d.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    let url = format!("file://{}", backups.display());
    config.backup_url = Some(url.clone());
    config.backup_keep = 1;
    let s = TestServer::start(config);
    let mut c = s.conn();
    for i in 0..2000 {
        let _: () = c.set(format!("key:{i}"), format!("value:{i}")).unwrap();
    }
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    let _: () = c.set("key:0", "changed").unwrap();
    let r: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    assert_eq!(r, "Background saving started");
    let deadline = Instant::now() + Duration::from_secs(60);
    let p = loop {
        let p = persistence(&mut c);
        if p["rdb_bgsave_in_progress"] == "0" && p["rdb_saves"] == "2" {
            break p;
        }
        assert!(Instant::now() < deadline, "BGSAVE never finished: {p:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(p["rdb_last_bgsave_status"], "ok", "{p:?}");
    assert_eq!(p["rdb_last_save_path"], format!("{url}#2"), "{p:?}");
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("backup-url")
        .query(&mut c)
        .unwrap();
    assert_eq!(got[1], url);
    drop(c);
    s.stop();
    let e =
        strata::backup::BackupEngine::open(&strata::storage::object::CapacityOptions::new(&url))
            .unwrap();
    let listed = e.list().unwrap();
    assert_eq!(
        listed.iter().map(|b| b.id).collect::<Vec<_>>(),
        vec![2],
        "purged to one"
    );
    let restored = d.path().join("restored");
    let rcap = format!("file://{}", d.path().join("restored-cap").display());
    e.restore(
        None,
        &restored,
        Some(&strata::storage::object::CapacityOptions::new(&rcap)),
        &Default::default(),
    )
    .unwrap();
    let mut copy = test_config(&restored);
    copy.engine.capacity = rcap;
    copy.engine.fast_levels = Some(0);
    let s2 = TestServer::start(copy);
    let mut c2 = s2.conn();
    let v: String = c2.get("key:0").unwrap();
    assert_eq!(v, "changed");
    let n: i64 = redis::cmd("DBSIZE").query(&mut c2).unwrap();
    assert_eq!(n, 2000);
    drop(c2);
    s2.stop();
}
