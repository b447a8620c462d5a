//! Blocking commands against a real server, and the same scenario against redis-server with
//! every observation compared: clients blocked on one key are served in the order they
//! blocked; timeouts (and 0 = forever); BLMOVE's push serving a client blocked on its
//! destination; BZPOPMIN over several keys; wakes by MULTI/EXEC, by a script and by RENAME
//! onto the key; blocking commands inside MULTI/EXEC answering at once; CLIENT UNBLOCK; a
//! disconnect while blocked; requests pipelined behind a blocked one. And what only strata
//! reports: nothing left registered after any of it.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::blocked::{cmd, spawn, until_blocked};
use common::redis_server::redis_server_or_skip;
use common::{connect, test_config, Raw, TestServer};
use redis::Value;

/// The scenario; returns what every step observed, in order.
fn scenario(addr: SocketAddr) -> Vec<String> {
    let url = format!("redis://{addr}/");
    let mut c = connect(&url);
    let mut seen = Vec::new();
    cmd(&mut c, &["FLUSHALL"]);

    // 1. Three clients block on one key, in a known order; one push of three serves them in
    //    that order.
    let mut waiting = Vec::new();
    for i in 0..3u64 {
        waiting.push(spawn(&url, &["BLPOP", "q", "0"]));
        until_blocked(&mut c, i + 1);
    }
    cmd(&mut c, &["RPUSH", "q", "a", "b", "c"]);
    for w in waiting {
        seen.push(w.join().unwrap());
    }

    // 2. A timeout answers nil after (about) the time given.
    let t = Instant::now();
    seen.push(format!("{:?}", cmd(&mut c, &["BLPOP", "none", "0.2"])));
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(190), "{waited:?}");
    seen.push(format!("{:?}", cmd(&mut c, &["BZPOPMAX", "none", "0.05"])));

    // 3. BLMOVE's push to its destination serves a client blocked there.
    let mover = spawn(&url, &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]);
    until_blocked(&mut c, 1);
    let popper = spawn(&url, &["BLPOP", "dst", "0"]);
    until_blocked(&mut c, 2);
    cmd(&mut c, &["RPUSH", "src", "x"]);
    seen.push(mover.join().unwrap());
    seen.push(popper.join().unwrap());
    seen.push(format!("{:?}", cmd(&mut c, &["LLEN", "dst"])));

    // 4. BZPOPMIN over two keys, served from the one that gets an element.
    let z = spawn(&url, &["BZPOPMIN", "z1", "z2", "0"]);
    until_blocked(&mut c, 1);
    cmd(&mut c, &["ZADD", "z2", "5", "m"]);
    seen.push(z.join().unwrap());

    // 5. Wakes by a transaction, a script and RENAME onto the key.
    let w = spawn(&url, &["BRPOP", "t", "0"]);
    until_blocked(&mut c, 1);
    cmd(&mut c, &["MULTI"]);
    cmd(&mut c, &["SET", "unrelated", "1"]);
    cmd(&mut c, &["LPUSH", "t", "from-exec"]);
    seen.push(format!("{:?}", cmd(&mut c, &["EXEC"])));
    seen.push(w.join().unwrap());
    let w = spawn(&url, &["BLPOP", "s", "0"]);
    until_blocked(&mut c, 1);
    cmd(
        &mut c,
        &[
            "EVAL",
            "return redis.call('RPUSH', KEYS[1], 'from-script')",
            "1",
            "s",
        ],
    );
    seen.push(w.join().unwrap());
    let w = spawn(&url, &["BLPOP", "renamed", "0"]);
    until_blocked(&mut c, 1);
    cmd(&mut c, &["RPUSH", "tmp", "moved"]);
    cmd(&mut c, &["RENAME", "tmp", "renamed"]);
    seen.push(w.join().unwrap());

    // 6. Inside MULTI/EXEC a blocking command on empty keys answers its timeout reply at once.
    cmd(&mut c, &["MULTI"]);
    cmd(&mut c, &["BLPOP", "empty", "0"]);
    cmd(&mut c, &["BZPOPMIN", "empty", "0"]);
    cmd(&mut c, &["BLMOVE", "empty", "d", "LEFT", "LEFT", "0"]);
    seen.push(format!("{:?}", cmd(&mut c, &["EXEC"])));

    // 7. CLIENT UNBLOCK: as a timeout, and as an error.
    for how in ["TIMEOUT", "ERROR"] {
        let url2 = url.clone();
        let w = std::thread::spawn(move || {
            let mut b = connect(&url2);
            let id = cmd(&mut b, &["CLIENT", "ID"]);
            let r = redis::cmd("BLPOP")
                .arg("u")
                .arg(0)
                .query::<Value>(&mut b)
                .map(|v| format!("{v:?}"))
                .unwrap_or_else(|e| format!("error: {e}"));
            (id, r)
        });
        until_blocked(&mut c, 1);
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
        let id = list
            .lines()
            .find(|l| l.contains("cmd=blpop"))
            .and_then(|l| l.split(' ').next())
            .and_then(|f| f.strip_prefix("id="))
            .expect("the blocked client in CLIENT LIST")
            .to_string();
        seen.push(format!(
            "{:?}",
            cmd(&mut c, &["CLIENT", "UNBLOCK", &id, how])
        ));
        let (_, r) = w.join().unwrap();
        seen.push(r);
    }
    seen.push(format!(
        "{:?}",
        cmd(&mut c, &["CLIENT", "UNBLOCK", "999999"])
    ));

    // 8. A client that disconnects while blocked is gone from the count; the next push is
    //    not lost to it.
    let mut raw = Raw::connect(addr);
    raw.send(b"*3\r\n$5\r\nBLPOP\r\n$4\r\ngone\r\n$1\r\n0\r\n")
        .unwrap();
    until_blocked(&mut c, 1);
    drop(raw);
    until_blocked(&mut c, 0);
    cmd(&mut c, &["RPUSH", "gone", "kept"]);
    seen.push(format!("{:?}", cmd(&mut c, &["LRANGE", "gone", "0", "-1"])));

    // 9. Requests pipelined behind a blocked one wait for it, then run in order.
    let mut raw = Raw::connect(addr);
    raw.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\np\r\n$1\r\n0\r\n*2\r\n$4\r\nINCR\r\n$3\r\nctr\r\n")
        .unwrap();
    until_blocked(&mut c, 1);
    seen.push(format!("{:?}", cmd(&mut c, &["GET", "ctr"])));
    cmd(&mut c, &["RPUSH", "p", "v"]);
    let want = "*2\r\n$1\r\np\r\n$1\r\nv\r\n:1\r\n";
    let (got, _) = raw.read_at_least(want.len(), Duration::from_secs(10));
    seen.push(String::from_utf8_lossy(&got).into_owned());
    seen
}

#[test]
fn blocking_order_and_timeouts_match_redis_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let got = scenario(s.addr);
    let bulk = |v: &[&str]| {
        format!(
            "{:?}",
            Value::Array(
                v.iter()
                    .map(|s| Value::BulkString(s.as_bytes().to_vec()))
                    .collect()
            )
        )
    };
    let nil = format!("{:?}", Value::Nil);
    // What strata must answer, whatever redis-server does.
    assert_eq!(
        got[0],
        bulk(&["q", "a"]),
        "served in the order they blocked"
    );
    assert_eq!(got[1], bulk(&["q", "b"]));
    assert_eq!(got[2], bulk(&["q", "c"]));
    assert_eq!(got[3], nil);
    assert_eq!(got[5], format!("{:?}", Value::BulkString(b"x".to_vec())));
    assert_eq!(got[6], bulk(&["dst", "x"]));
    assert_eq!(got[8], bulk(&["z2", "m", "5"]));
    assert_eq!(got[10], bulk(&["t", "from-exec"]));
    assert_eq!(got[11], bulk(&["s", "from-script"]));
    assert_eq!(got[12], bulk(&["renamed", "moved"]));
    assert_eq!(got[13], format!("{:?}", Value::Array(vec![Value::Nil; 3])));
    assert_eq!(got[15], nil, "CLIENT UNBLOCK ... TIMEOUT");
    assert!(got[17].contains("UNBLOCKED"), "{}", got[17]);
    assert_eq!(got[19], bulk(&["kept"]));
    assert_eq!(got[20], nil, "INCR waits behind the blocked BLPOP");
    assert_eq!(got[21], "*2\r\n$1\r\np\r\n$1\r\nv\r\n:1\r\n");
    assert!(!s.shared().blocking.active(), "nothing left registered");

    let Some(redis) = redis_server_or_skip("the blocking comparison") else {
        return;
    };
    let want = scenario(redis.addr);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "step {i}: strata vs redis-server");
    }
}
