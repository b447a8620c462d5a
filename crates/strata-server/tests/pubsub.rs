//! Pub/Sub against a real server: delivery in publish order to channel and pattern
//! subscribers (PUBLISH counts them), RESP2 subscribed mode (only the allowed commands, PING's
//! pushed pong), RESP3 pushes interleaved with ordinary replies, PUBLISH from MULTI/EXEC and
//! from a script, the introspection commands and INFO, CLIENT KILL and RESET, and the bound on
//! a subscriber that does not read: `client-output-buffer-limit pubsub` disconnects it while
//! a subscriber that reads keeps every message. (redis-py's own test_pubsub.py runs beside
//! these in scripts/redis-py-tests.sh.)

mod common;

use std::time::{Duration, Instant};

use common::{resp, run, test_config, Raw, TestServer};
use redis::Value;

fn int(v: Result<Value, String>) -> i64 {
    match v {
        Ok(Value::Int(n)) => n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn info_field(c: &mut redis::Connection, section: &str, field: &str) -> String {
    let text: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        .trim()
        .to_string()
}

/// Waits until `f` holds (the server registers a subscription before it replies, but a test
/// that subscribes on another thread needs to know when).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// PUBSUB NUMSUB of one channel.
fn numsub(c: &mut redis::Connection, channel: &str) -> i64 {
    match run(c, &["PUBSUB", "NUMSUB", channel]) {
        Ok(Value::Array(v)) if v.len() == 2 => match v[1] {
            Value::Int(n) => n,
            _ => panic!("NUMSUB count: {v:?}"),
        },
        other => panic!("PUBSUB NUMSUB: {other:?}"),
    }
}

/// A server with `client-output-buffer-limit pubsub <limit>`, a connection to it, and a raw
/// client subscribed to `feed` that never reads.
fn stalled_subscriber(dir: &std::path::Path, limit: &str) -> (TestServer, redis::Connection, Raw) {
    let s = TestServer::start(test_config(dir));
    let mut p = s.conn();
    let value = format!("pubsub {limit}");
    run(
        &mut p,
        &["CONFIG", "SET", "client-output-buffer-limit", &value],
    )
    .unwrap();
    let mut stalled = Raw::connect(s.addr);
    stalled.expect(
        &resp(&[b"SUBSCRIBE", b"feed"]),
        "*3\r\n$9\r\nsubscribe\r\n$4\r\nfeed\r\n:1\r\n",
    );
    (s, p, stalled)
}

#[test]
fn messages_arrive_in_publish_order_to_channel_and_pattern_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut sub_con = s.conn();
    let mut sub = sub_con.as_pubsub();
    sub.subscribe("news").unwrap();
    sub.psubscribe("n*").unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut p = s.conn();
    const N: usize = 500;
    for i in 0..N {
        assert_eq!(int(run(&mut p, &["PUBLISH", "news", &i.to_string()])), 2);
    }
    assert_eq!(
        int(run(&mut p, &["PUBLISH", "nothing-here", "x"])),
        1,
        "pattern only"
    );
    assert_eq!(int(run(&mut p, &["PUBLISH", "other", "x"])), 0);
    let (mut direct, mut by_pattern) = (Vec::new(), Vec::new());
    while direct.len() < N || by_pattern.len() < N + 1 {
        let m = sub.get_message().unwrap();
        let payload: String = m.get_payload().unwrap();
        if m.from_pattern() {
            assert_eq!(m.get_pattern::<String>().unwrap(), "n*");
            by_pattern.push(payload);
        } else {
            assert_eq!(m.get_channel_name(), "news");
            direct.push(payload);
        }
    }
    let want: Vec<String> = (0..N).map(|i| i.to_string()).collect();
    assert_eq!(direct, want, "channel messages in publish order");
    assert_eq!(
        &by_pattern[..N],
        &want[..],
        "pattern messages in publish order"
    );
    assert_eq!(by_pattern[N], "x");

    // Introspection, and INFO.
    assert_eq!(
        run(&mut p, &["PUBSUB", "NUMSUB", "news", "none"]),
        Ok(Value::Array(vec![
            Value::BulkString(b"news".to_vec()),
            Value::Int(1),
            Value::BulkString(b"none".to_vec()),
            Value::Int(0),
        ]))
    );
    assert_eq!(int(run(&mut p, &["PUBSUB", "NUMPAT"])), 1);
    assert_eq!(
        run(&mut p, &["PUBSUB", "CHANNELS", "n*"]),
        Ok(Value::Array(vec![Value::BulkString(b"news".to_vec())]))
    );
    assert_eq!(info_field(&mut p, "stats", "pubsub_channels"), "1");
    assert_eq!(info_field(&mut p, "clients", "pubsub_clients"), "1");
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("pubsub")
        .query(&mut p)
        .unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains("flags=P") && list.contains("sub=1 psub=1"),
        "{list}"
    );

    // Unsubscribing from everything leaves nothing behind.
    sub.unsubscribe("news").unwrap();
    sub.punsubscribe("n*").unwrap();
    drop(sub);
    eventually("the registry to empty", || {
        int(run(&mut p, &["PUBSUB", "NUMPAT"])) == 0
            && run(&mut p, &["PUBSUB", "CHANNELS"]) == Ok(Value::Array(vec![]))
    });
}

#[test]
fn resp2_subscribed_mode_allows_only_the_subscription_commands() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut r = Raw::connect(s.addr);
    r.expect(
        &resp(&[b"SUBSCRIBE", b"a", b"b"]),
        "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n",
    );
    r.expect(
        &resp(&[b"GET", b"k"]),
        "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
         RESET are allowed in this context\r\n",
    );
    r.expect(&resp(&[b"PING"]), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    r.expect(
        &resp(&[b"SSUBSCRIBE", b"s"]),
        "*3\r\n$10\r\nssubscribe\r\n$1\r\ns\r\n:1\r\n",
    );
    r.expect(
        &resp(&[b"UNSUBSCRIBE"]),
        "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n",
    );
    // Still on a shard channel: still in subscribed mode.
    r.expect(
        &resp(&[b"SET", b"k", b"v"]),
        "-ERR Can't execute 'set': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
         RESET are allowed in this context\r\n",
    );
    r.expect(&resp(&[b"RESET"]), "+RESET\r\n");
    r.expect(&resp(&[b"PING"]), "+PONG\r\n");
    r.expect(
        &resp(&[b"UNSUBSCRIBE"]),
        "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n",
    );
    // SUBSCRIBE cannot be queued in a transaction (its replies would not fit EXEC's array).
    r.expect(&resp(&[b"MULTI"]), "+OK\r\n");
    r.expect(
        &resp(&[b"SUBSCRIBE", b"x"]),
        "-ERR Command not allowed inside a transaction\r\n",
    );
    r.expect(&resp(&[b"DISCARD"]), "+OK\r\n");
}

#[test]
fn resp3_clients_get_pushes_between_ordinary_replies() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut r = Raw::connect(s.addr);
    r.send(&resp(&[b"HELLO", b"3"])).unwrap();
    let (hello, _) = r.read_at_least(1, Duration::from_secs(5));
    assert!(
        hello.starts_with(b"%"),
        "{}",
        String::from_utf8_lossy(&hello)
    );
    std::thread::sleep(Duration::from_millis(50));
    let _ = r.read_at_least(usize::MAX, Duration::from_millis(100));
    r.expect(
        &resp(&[b"SUBSCRIBE", b"c"]),
        ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n",
    );
    // A RESP3 client runs any command while subscribed.
    r.expect(&resp(&[b"SET", b"k", b"v"]), "+OK\r\n");
    let mut p = s.conn();
    assert_eq!(int(run(&mut p, &["PUBLISH", "c", "hello"])), 1);
    let want = ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$5\r\nhello\r\n";
    let (got, _) = r.read_at_least(want.len(), Duration::from_secs(10));
    assert_eq!(String::from_utf8_lossy(&got), want);
    r.expect(&resp(&[b"GET", b"k"]), "$1\r\nv\r\n");
}

#[test]
fn transactions_and_scripts_publish() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut sub_con = s.conn();
    let mut sub = sub_con.as_pubsub();
    sub.subscribe("events").unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["MULTI"]), Ok(Value::Okay));
    run(&mut c, &["SET", "k", "1"]).unwrap();
    run(&mut c, &["PUBLISH", "events", "from-exec"]).unwrap();
    assert_eq!(
        run(&mut c, &["EXEC"]),
        Ok(Value::Array(vec![Value::Okay, Value::Int(1)]))
    );
    let n = int(run(
        &mut c,
        &[
            "EVAL",
            "return redis.call('PUBLISH', KEYS[1], ARGV[1])",
            "1",
            "events",
            "from-script",
        ],
    ));
    assert_eq!(n, 1);
    let got: Vec<String> = (0..2)
        .map(|_| sub.get_message().unwrap().get_payload().unwrap())
        .collect();
    assert_eq!(got, ["from-exec", "from-script"]);
    // Scripts cannot subscribe.
    let e = run(
        &mut c,
        &["EVAL", "return redis.call('SUBSCRIBE', 'x')", "0"],
    )
    .unwrap_err();
    assert!(e.contains("not allowed from script"), "{e}");
}

#[test]
fn client_kill_closes_the_connection_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut victim = s.conn();
    let id = int(run(&mut victim, &["CLIENT", "ID"]));
    let mut c = s.conn();
    assert_eq!(
        int(run(&mut c, &["CLIENT", "KILL", "ID", &id.to_string()])),
        1
    );
    eventually("the victim to be gone", || {
        run(&mut victim, &["PING"]).is_err()
    });
    assert_eq!(
        int(run(&mut c, &["CLIENT", "KILL", "ID", &id.to_string()])),
        0,
        "already gone"
    );
    // SKIPME defaults to yes: killing every normal client spares the caller.
    assert_eq!(int(run(&mut c, &["CLIENT", "KILL", "TYPE", "normal"])), 0);
    assert_eq!(
        run(&mut c, &["PING"]),
        Ok(Value::SimpleString("PONG".into()))
    );
    let e = run(&mut c, &["CLIENT", "KILL", "127.0.0.1:1"]).unwrap_err();
    assert!(e.contains("No such client"), "{e}");
}

#[test]
fn a_subscriber_that_does_not_read_is_disconnected_at_the_output_limit() {
    let dir = tempfile::tempdir().unwrap();
    // The stalled subscriber subscribes and then never reads.
    let (s, mut p, mut stalled) = stalled_subscriber(dir.path(), "4mb 1mb 60");
    assert_eq!(
        run(&mut p, &["CONFIG", "GET", "client-output-buffer-limit"]),
        Ok(Value::Array(vec![
            Value::BulkString(b"client-output-buffer-limit".to_vec()),
            Value::BulkString(b"normal 0 0 0 slave 0 0 0 pubsub 4194304 1048576 60".to_vec()),
        ]))
    );
    // A reader on another thread keeps up and must see every message (the publisher waits
    // for it to be within 16 messages, 1 MB, so only a reader that stops falls behind).
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen_by_reader = seen.clone();
    let mut reader_con = s.conn();
    let reader = std::thread::spawn(move || {
        let mut sub = reader_con.as_pubsub();
        sub.subscribe("feed").unwrap();
        sub.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut n = 0usize;
        loop {
            let m: Vec<u8> = sub.get_message().unwrap().get_payload().unwrap();
            if m == b"end" {
                return n;
            }
            assert_eq!(&m[..8], format!("{n:08}").as_bytes(), "in order");
            n += 1;
            seen_by_reader.store(n, std::sync::atomic::Ordering::Relaxed);
        }
    });
    eventually("both subscribers", || numsub(&mut p, "feed") == 2);
    // 64 MB published: far past what the kernel's socket buffers absorb for the stalled one.
    let mut payload = vec![b'x'; 64 * 1024];
    const COUNT: usize = 1024;
    for i in 0..COUNT {
        eventually("the reader to keep up", || {
            seen.load(std::sync::atomic::Ordering::Relaxed) + 16 >= i
        });
        payload[..8].copy_from_slice(format!("{i:08}").as_bytes());
        redis::cmd("PUBLISH")
            .arg("feed")
            .arg(&payload[..])
            .query::<i64>(&mut p)
            .unwrap();
    }
    run(&mut p, &["PUBLISH", "feed", "end"]).unwrap();
    assert_eq!(
        reader.join().unwrap(),
        COUNT,
        "the reader got every message"
    );
    assert!(
        stalled.closed_within(Duration::from_secs(30)),
        "the stalled subscriber was disconnected"
    );
    assert_eq!(
        info_field(&mut p, "stats", "client_output_buffer_limit_disconnections"),
        "1"
    );
    eventually("the stalled subscriber to leave the registry", || {
        numsub(&mut p, "feed") == 0
    });
}

#[test]
fn client_kill_closes_a_subscriber_stuck_writing_to_a_client_that_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    // No output limit: only CLIENT KILL can end this subscriber.
    let (_s, mut p, stalled) = stalled_subscriber(dir.path(), "0 0 0");
    let id = {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .arg("TYPE")
            .arg("pubsub")
            .query(&mut p)
            .unwrap();
        list.split(' ')
            .next()
            .unwrap()
            .strip_prefix("id=")
            .unwrap()
            .to_string()
    };
    // 32 MB for a client that reads nothing: its connection blocks writing them.
    let payload = vec![b'x'; 64 * 1024];
    for _ in 0..512 {
        redis::cmd("PUBLISH")
            .arg("feed")
            .arg(&payload[..])
            .query::<i64>(&mut p)
            .unwrap();
    }
    assert_eq!(int(run(&mut p, &["CLIENT", "KILL", "ID", &id])), 1);
    eventually("the killed subscriber to leave the registry", || {
        numsub(&mut p, "feed") == 0
    });
    drop(stalled);
}
