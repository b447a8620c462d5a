//! `engine.wal-location` (`strata serve --wal-location`): the write-ahead log lives apart from
//! the data directory, acknowledged writes survive a restart through it, and starting without
//! it is refused instead of silently losing the log's writes.

mod common;

use common::{test_config, TestServer};
use redis::Commands;

fn files_ending(dir: &std::path::Path, suffix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(suffix))
                .collect()
        })
        .unwrap_or_default()
}

/// Why the server refuses to start with `config` (`None` if it starts).
fn start_error(config: strata_server::ServerConfig) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(strata_server::Server::bind(config, None))
        .err()
        .map(|e| e.to_string())
}

#[test]
fn the_log_lives_in_wal_location_and_restarts_read_it() {
    let data = tempfile::tempdir().unwrap();
    let wal = tempfile::tempdir().unwrap();
    let wal_dir = wal.path().join("log");
    let mut config = test_config(data.path());
    config.engine.wal_location = wal_dir.display().to_string();

    let s = TestServer::start(config.clone());
    let mut c = s.conn();
    for i in 0..200 {
        let _: () = c.set(format!("key:{i}"), format!("value:{i}")).unwrap();
    }
    let shown: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("strata-wal-location")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        shown,
        vec![
            "strata-wal-location".to_string(),
            config.engine.wal_location.clone()
        ]
    );
    drop(c);
    s.stop();

    assert!(
        !files_ending(&wal_dir, ".log").is_empty(),
        "no log in {}",
        wal_dir.display()
    );
    assert!(
        files_ending(data.path(), ".log").is_empty(),
        "a log in the data directory: {:?}",
        files_ending(data.path(), ".log")
    );

    let s = TestServer::start(config.clone());
    let mut c = s.conn();
    for i in 0..200 {
        let v: Option<String> = c.get(format!("key:{i}")).unwrap();
        assert_eq!(v.as_deref(), Some(format!("value:{i}").as_str()), "key:{i}");
    }
    drop(c);
    s.stop();

    // Without the log location, the live log is missing: refuse to start.
    let mut without = config;
    without.engine.wal_location = String::new();
    let err = start_error(without).expect("started without its log location");
    assert!(err.contains("wal_location"), "{err}");
}

#[test]
fn extended_wal_needs_a_wal_location() {
    let data = tempfile::tempdir().unwrap();
    let mut config = test_config(data.path());
    config.engine.extended_wal = true;
    let err = start_error(config).expect("extended WAL accepted without a log location");
    assert!(err.contains("wal_location"), "{err}");
}

/// A server whose object-store log location another writer took over (the next lease
/// generations are the other's, as after a failover to a promoted replica) answers every
/// write `FENCED` from then on and keeps answering reads.
#[test]
fn a_server_whose_log_location_was_taken_over_answers_writes_fenced() {
    let data = tempfile::tempdir().unwrap();
    let wal = tempfile::tempdir().unwrap();
    let mut config = test_config(data.path());
    config.engine.wal_location = format!("file://{}", wal.path().display());
    config.engine.wal_lease_ttl_secs = 0.8;
    let s = TestServer::start(config);
    let mut c = s.conn();
    let _: () = c.set("before", "taken").unwrap();

    strata_test_support::take_over_file_lease(wal.path());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
    let e = loop {
        match c.set::<_, _, ()>("after", "refused") {
            Err(e) => break e,
            Ok(()) => assert!(std::time::Instant::now() < deadline, "never fenced"),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(e.code(), Some("FENCED"), "{e}");
    let e = c.set::<_, _, ()>("again", "refused").unwrap_err();
    assert_eq!(e.code(), Some("FENCED"), "{e}");
    let v: String = c.get("before").unwrap();
    assert_eq!(v, "taken", "reads still answer");
    drop(c);
    let closed = s.stop_result().expect_err("the engine closes fenced");
    assert!(closed.to_string().contains("fenced"), "{closed}");
}
