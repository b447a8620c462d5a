//! CLIENT KILL against a real server: a killed connection closes wherever it waits — idle
//! between requests or blocked in a command. (Subscribers: `pubsub.rs`.)

mod common;

use std::time::Duration;

use common::{run, test_config, TestServer};
use redis::Value;

fn int(i: i64) -> Result<Value, String> {
    Ok(Value::Int(i))
}

/// CLIENT KILL closes a client wherever it waits: idle after many requests (the connection
/// keeps one kill notification across them), and blocked in BLPOP (a second waiter on the same
/// notification).
#[test]
fn client_kill_closes_idle_and_blocked_clients() {
    use common::{resp, Raw};
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let admin = &mut s.conn();
    let id_of = |raw: &mut Raw| -> String {
        raw.send(&resp(&[b"CLIENT", b"ID"])).unwrap();
        let (got, _) = raw.read_at_least(4, Duration::from_secs(5));
        String::from_utf8_lossy(&got)
            .trim_start_matches(':')
            .trim()
            .to_string()
    };
    let mut idle = s.raw();
    for _ in 0..50 {
        idle.expect(&resp(&[b"PING"]), "+PONG\r\n");
    }
    let idle_id = id_of(&mut idle);
    let mut blocked = s.raw();
    let blocked_id = id_of(&mut blocked);
    blocked
        .send(&resp(&[b"BLPOP", b"nothing-here", b"0"]))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for (id, raw) in [(&idle_id, &mut idle), (&blocked_id, &mut blocked)] {
        assert_eq!(run(admin, &["CLIENT", "KILL", "ID", id]), int(1));
        assert!(
            raw.closed_within(Duration::from_secs(5)),
            "client {id} still open after CLIENT KILL"
        );
    }
    assert_eq!(
        run(admin, &["PING"]),
        Ok(Value::SimpleString("PONG".into()))
    );
}
