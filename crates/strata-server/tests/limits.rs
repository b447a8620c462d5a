//! Limits and malformed input: oversized bulk strings, too many arguments, the per-connection
//! query-buffer bound, max clients, idle timeout, protocol errors (error reply, then close),
//! inline commands, oversized keys.

mod common;

use std::time::{Duration, Instant};

use common::{resp, run, test_config, TestServer};
use redis::Value;
use strata_server::ByteSize;

fn small_limits() -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.proto_max_bulk_len = ByteSize(4096);
    c.max_multibulk_len = 16;
    c.client_query_buffer_limit = ByteSize(4096 + 64 * 1024);
    let s = TestServer::start(c);
    (dir, s)
}

fn closes_after(s: &TestServer, req: &[u8], reply: &str) {
    let mut raw = s.raw();
    raw.send(req).unwrap();
    let (got, _) = raw.read_at_least(reply.len(), Duration::from_secs(10));
    assert_eq!(String::from_utf8_lossy(&got), reply);
    assert!(
        raw.closed_within(Duration::from_secs(10)),
        "connection not closed after {reply:?}"
    );
}

#[test]
fn oversized_bulk_and_too_many_args_are_refused() {
    let (_d, s) = small_limits();
    closes_after(
        &s,
        b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$5000\r\n",
        "-ERR Protocol error: invalid bulk length\r\n",
    );
    closes_after(
        &s,
        b"*17\r\n",
        "-ERR Protocol error: invalid multibulk length\r\n",
    );
    // At the limits, requests work.
    let mut raw = s.raw();
    let big = vec![b'x'; 4096];
    raw.expect(&resp(&[b"SET", b"big", &big]), "+OK\r\n");
    let mut args: Vec<&[u8]> = vec![b"MSET"];
    let kv: Vec<Vec<u8>> = (0..15).map(|i| format!("k{i}").into_bytes()).collect();
    for k in kv.iter().take(15) {
        args.push(k);
    }
    // 16 arguments: MSET + 15 (odd count) → arity error, connection stays open.
    raw.expect(
        &resp(&args),
        "-ERR wrong number of arguments for 'mset' command\r\n",
    );
    raw.expect(b"PING\r\n", "+PONG\r\n");
    // APPEND past proto-max-bulk-len.
    raw.expect(
        &resp(&[b"APPEND", b"big", b"y"]),
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
    );
    // CONFIG SET can raise the bulk limit at run time.
    raw.expect(
        &resp(&[b"CONFIG", b"SET", b"proto-max-bulk-len", b"8192"]),
        "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - must stay 64kb below client-query-buffer-limit\r\n",
    );
}

#[test]
fn inline_requests_and_headers_are_bounded() {
    let (_d, s) = small_limits();
    let mut raw = s.raw();
    raw.send(&vec![b'a'; 70 * 1024]).unwrap();
    let (got, _) = raw.read_at_least(44, Duration::from_secs(10));
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR Protocol error: too big inline request\r\n"
    );
    assert!(raw.closed_within(Duration::from_secs(10)));
    let mut header = b"*1\r\n$".to_vec();
    header.extend(vec![b'1'; 70 * 1024]);
    closes_after(
        &s,
        &header,
        "-ERR Protocol error: too big bulk count string\r\n",
    );
}

#[test]
fn query_buffer_limit_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.proto_max_bulk_len = ByteSize(64 * 1024);
    c.max_multibulk_len = 1000;
    c.client_query_buffer_limit = ByteSize(128 * 1024);
    let s = TestServer::start(c);
    let mut raw = s.raw();
    raw.send(b"*1000\r\n$3\r\nSET\r\n").unwrap();
    let mut part = b"$60000\r\n".to_vec();
    part.extend_from_slice(&vec![b'q'; 60000]);
    part.extend_from_slice(b"\r\n");
    for _ in 0..4 {
        if raw.send(&part).is_err() {
            break;
        }
    }
    let (got, _) = raw.read_at_least(30, Duration::from_secs(10));
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR Protocol error: client query buffer limit exceeded\r\n"
    );
    assert!(raw.closed_within(Duration::from_secs(10)));
    // The server is fine.
    assert_eq!(
        run(&mut s.conn(), &["PING"]),
        Ok(Value::SimpleString("PONG".into()))
    );
}

#[test]
fn malformed_input_gets_an_error_then_close() {
    let (_d, s) = small_limits();
    for (req, reply) in [
        (
            &b"*1\r\nPING\r\n"[..],
            "-ERR Protocol error: expected '$', got 'P'\r\n",
        ),
        (
            b"*abc\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$-3\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"SET a \"b\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"SET a 'b'c\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ] {
        closes_after(&s, req, reply);
    }
    // Replies to the requests before the bad one are sent first.
    closes_after(
        &s,
        b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\n",
        "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
    );
}

#[test]
fn inline_commands_and_oversized_keys() {
    let (_d, s) = small_limits();
    let mut raw = s.raw();
    raw.expect(b"SET greeting \"hello world\"\r\n", "+OK\r\n");
    raw.expect(b"GET greeting\n", "$11\r\nhello world\r\n");
    raw.expect(b"\r\n   \r\nEXISTS greeting nope\r\n", ":1\r\n");
    raw.expect(b"ECHO '\\'q\\''\r\n", "$3\r\n'q'\r\n");
    // Keys longer than the engine accepts are refused without closing the connection.
    let dir = tempfile::tempdir().unwrap();
    let s2 = TestServer::start(test_config(dir.path()));
    let mut raw = s2.raw();
    let key = vec![b'k'; 70 * 1024];
    raw.expect(
        &resp(&[b"SET", &key, b"v"]),
        "-ERR key is too large (the limit is 65531 bytes)\r\n",
    );
    raw.expect(&resp(&[b"GET", &key]), "$-1\r\n");
    raw.expect(b"PING\r\n", "+PONG\r\n");
}

#[test]
fn max_clients() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.maxclients = 2;
    let s = TestServer::start(c);
    let mut a = s.raw();
    a.expect(b"PING\r\n", "+PONG\r\n");
    let mut b = s.raw();
    b.expect(b"PING\r\n", "+PONG\r\n");
    let mut third = s.raw();
    let (got, _) = third.read_at_least(10, Duration::from_secs(10));
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );
    assert!(third.closed_within(Duration::from_secs(10)));
    let stats: String = {
        b.send(b"INFO stats\r\n").unwrap();
        let (got, _) = b.read_at_least(200, Duration::from_secs(10));
        String::from_utf8_lossy(&got).into_owned()
    };
    assert!(stats.contains("rejected_connections:1\r\n"), "{stats}");
    // After a client leaves, a new one is admitted (its slot is freed asynchronously).
    a.expect(b"QUIT\r\n", "+OK\r\n");
    assert!(a.closed_within(Duration::from_secs(10)));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut n = s.raw();
        n.send(b"PING\r\n").unwrap();
        let (got, _) = n.read_at_least(7, Duration::from_secs(5));
        if got == b"+PONG\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "slot never freed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn idle_clients_are_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.timeout = 1;
    let s = TestServer::start(c);
    let mut raw = s.raw();
    raw.expect(b"PING\r\n", "+PONG\r\n");
    let t = Instant::now();
    assert!(raw.closed_within(Duration::from_secs(10)));
    let idle = t.elapsed();
    assert!(idle >= Duration::from_millis(900), "closed after {idle:?}");
    // CONFIG SET timeout 0 turns it off for later reads.
    let mut raw = s.raw();
    raw.expect(b"CONFIG SET timeout 0\r\n", "+OK\r\n");
    assert!(!raw.closed_within(Duration::from_millis(2500)));
}

#[test]
fn large_replies_are_produced_in_bounded_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    let value = vec![b'v'; 1 << 20];
    redis::cmd("SET")
        .arg("big")
        .arg(&value)
        .query::<()>(c)
        .unwrap();
    // 40 MiB of replies for one pipeline: executed in several rounds, in order.
    let mut p = redis::pipe();
    for i in 0..40 {
        p.cmd("GET").arg("big");
        p.cmd("INCR").arg("n");
        if i == 20 {
            p.cmd("SET").arg("mid").arg("x");
        }
    }
    let r: Vec<Value> = p.query(c).unwrap();
    assert_eq!(r.len(), 81);
    let mut expect_n = 0;
    for v in &r {
        match v {
            Value::BulkString(b) => assert_eq!(b.len(), 1 << 20),
            Value::Int(n) => {
                expect_n += 1;
                assert_eq!(*n, expect_n);
            }
            Value::Okay => {}
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn requests_after_quit_are_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut raw = s.raw();
    raw.send(b"SET q 1\r\nQUIT\r\nSET q 2\r\n").unwrap();
    let (got, closed) = raw.read_at_least(100, Duration::from_secs(10));
    assert_eq!(String::from_utf8_lossy(&got), "+OK\r\n+OK\r\n");
    assert!(closed);
    assert_eq!(
        run(&mut s.conn(), &["GET", "q"]),
        Ok(Value::BulkString(b"1".to_vec()))
    );
}
