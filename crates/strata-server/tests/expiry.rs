//! Expiry is stored with the value: expired keys are invisible at once and the engine's
//! compaction filter removes them for good.

mod common;

use std::time::Duration;

use common::{run, test_config, TestServer};
use redis::Value;
use strata_server::keyspace::data_key;

#[test]
fn compaction_removes_expired_keys() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    for i in 0..300 {
        run(c, &["SET", &format!("short:{i}"), "v", "PX", "40"]).unwrap();
        run(c, &["SET", &format!("long:{i}"), "v", "EX", "1000"]).unwrap();
        run(c, &["SET", &format!("plain:{i}"), "v"]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(run(c, &["GET", "short:7"]), Ok(Value::Nil));
    assert_eq!(run(c, &["DBSIZE"]), Ok(Value::Int(600)));

    // Still stored (invisible) until compaction runs.
    let db = s.shared().store.db().unwrap();
    assert!(db.get(data_key(b"short:7")).unwrap().is_some());
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..300 {
        assert!(
            db.get(data_key(format!("short:{i}").as_bytes()))
                .unwrap()
                .is_none(),
            "expired key short:{i} survived compaction"
        );
        assert!(db
            .get(data_key(format!("long:{i}").as_bytes()))
            .unwrap()
            .is_some());
        assert!(db
            .get(data_key(format!("plain:{i}").as_bytes()))
            .unwrap()
            .is_some());
    }
    drop(db);
    let stats: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    assert!(stats.contains("expired_keys:300\r\n"), "{stats}");
    assert_eq!(run(c, &["DBSIZE"]), Ok(Value::Int(600)));
    assert_eq!(
        run(c, &["GET", "long:1"]),
        Ok(Value::BulkString(b"v".to_vec()))
    );
}

#[test]
fn a_rewritten_key_is_not_removed_by_its_old_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    run(c, &["SET", "k", "old", "PX", "30"]).unwrap();
    let db = s.shared().store.db().unwrap();
    db.flush().unwrap();
    run(c, &["SET", "k", "new"]).unwrap();
    std::thread::sleep(Duration::from_millis(60));
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    assert_eq!(
        run(c, &["GET", "k"]),
        Ok(Value::BulkString(b"new".to_vec()))
    );
    assert_eq!(run(c, &["TTL", "k"]), Ok(Value::Int(-1)));
}
