//! Streams against a real server: XREAD BLOCK woken by XADD (and `$` meaning the last ID when
//! the client blocked, not when it is woken), XREADGROUP BLOCK serving one consumer per new
//! entry in the order they blocked, a BLOCK timeout in milliseconds, approximate trimming of
//! whole nodes — one scenario run against strata and redis-server with every observation
//! compared — and what only strata can show: the pending-entries list and group state survive
//! a restart, and a long stream is read a page at a time.

mod common;

use std::time::{Duration, Instant};

use common::blocked::{blocked_clients, cmd, spawn, until_blocked};
use common::redis_server::redis_server_or_skip;
use common::stream::{ids, read_ids};
use common::{connect, test_config, TestServer};
use redis::Value;

/// The scenario; returns what it observed (compared with redis-server's).
fn scenario(url: &str) -> Vec<String> {
    let mut c = connect(url);
    let mut seen = Vec::new();
    let mut note = |what: &str, v: String| seen.push(format!("{what}: {v}"));
    cmd(&mut c, &["FLUSHALL"]);

    // XREAD BLOCK on an absent stream with `$`: woken by the first XADD.
    let r = spawn(url, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    until_blocked(&mut c, 1);
    cmd(&mut c, &["XADD", "s", "1-1", "f", "v"]);
    note("xread woken", r.join().unwrap());

    // `$` is the last ID when the client blocked: an entry added to another stream does not
    // wake it, and when it is woken it gets only what came after it blocked.
    let r = spawn(url, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    until_blocked(&mut c, 1);
    cmd(&mut c, &["XADD", "other", "1-1", "f", "v"]);
    std::thread::sleep(Duration::from_millis(50));
    note("still blocked", blocked_clients(&mut c).to_string());
    cmd(&mut c, &["XADD", "s", "2-1", "g", "w"]);
    note("xread after $", r.join().unwrap());

    // Two consumers of one group blocked on `>`: one entry serves the one that blocked first.
    cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    let first = spawn(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "COUNT",
            "1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    until_blocked(&mut c, 1);
    let second = spawn(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "b",
            "COUNT",
            "1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    until_blocked(&mut c, 2);
    cmd(&mut c, &["XADD", "s", "3-1", "h", "x"]);
    note("first consumer", first.join().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    note("second still blocked", blocked_clients(&mut c).to_string());
    cmd(&mut c, &["XADD", "s", "4-1", "i", "y"]);
    note("second consumer", second.join().unwrap());
    note(
        "pending",
        format!("{:?}", cmd(&mut c, &["XPENDING", "s", "g"])),
    );

    // A BLOCK timeout in milliseconds answers the null array.
    let start = Instant::now();
    let v = cmd(&mut c, &["XREAD", "BLOCK", "150", "STREAMS", "s", "$"]);
    let waited = start.elapsed();
    note("timeout reply", format!("{v:?}"));
    note(
        "waited about 150 ms",
        (waited >= Duration::from_millis(140) && waited < Duration::from_secs(3)).to_string(),
    );

    // A consumer blocked on `>` is served the next entry.
    let r = spawn(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    until_blocked(&mut c, 1);
    cmd(&mut c, &["XADD", "s", "5-1", "j", "z"]);
    note("served before destroy", r.join().unwrap());

    // An XREAD waiting for a later ID does not hold back the XREAD behind it.
    let far = spawn(
        url,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "99999999999999-0"],
    );
    until_blocked(&mut c, 1);
    let near = spawn(url, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    until_blocked(&mut c, 2);
    cmd(&mut c, &["XADD", "s", "6-1", "k", "v"]);
    note("near xread", near.join().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    note("far still blocked", blocked_clients(&mut c).to_string());
    // Consumers of two groups blocked on one stream: one entry serves the first consumer of
    // each group; the second consumer of the first group waits on.
    cmd(&mut c, &["XGROUP", "CREATE", "s", "g2", "$"]);
    cmd(&mut c, &["XGROUP", "SETID", "s", "g", "$"]);
    let ga = spawn(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a2",
            "COUNT",
            "1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    until_blocked(&mut c, 2);
    let gb = spawn(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "b2",
            "COUNT",
            "1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    until_blocked(&mut c, 3);
    let gc = spawn(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g2",
            "c2",
            "COUNT",
            "1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    until_blocked(&mut c, 4);
    cmd(&mut c, &["XADD", "s", "7-1", "l", "w"]);
    note("first of g", ga.join().unwrap());
    note("first of g2", gc.join().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    note("left blocked", blocked_clients(&mut c).to_string());
    cmd(&mut c, &["XADD", "s", "99999999999999-1", "m", "x"]);
    note("far xread", far.join().unwrap());
    note("second of g", gb.join().unwrap());
    // One stream named twice in one XREADGROUP is served once.
    cmd(&mut c, &["XADD", "s", "99999999999999-2", "n", "y"]);
    note(
        "twice",
        format!(
            "{:?}",
            cmd(
                &mut c,
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g2",
                    "d",
                    "STREAMS",
                    "s",
                    "s",
                    ">",
                    ">"
                ]
            )
        ),
    );
    note(
        "groups after",
        format!("{:?}", cmd(&mut c, &["XINFO", "GROUPS", "s"])),
    );

    // Approximate trimming removes whole nodes (100 entries each for small entries).
    for i in 1..=250 {
        cmd(&mut c, &["XADD", "t", &format!("{i}-1"), "f", "v"]);
    }
    for (args, what) in [
        (&["XTRIM", "t", "MAXLEN", "~", "200"][..], "maxlen ~ 200"),
        (&["XTRIM", "t", "MAXLEN", "~", "100"], "maxlen ~ 100"),
        (&["XTRIM", "t", "MINID", "~", "240-0"], "minid ~ 240"),
        (
            &["XTRIM", "t", "MAXLEN", "~", "0", "LIMIT", "10"],
            "limit 10",
        ),
        (&["XLEN", "t"], "length"),
        (&["XTRIM", "t", "MAXLEN", "~", "0"], "maxlen ~ 0"),
        (&["XLEN", "t"], "length after ~ 0"),
    ] {
        note(what, format!("{:?}", cmd(&mut c, args)));
    }
    note("blocked at the end", blocked_clients(&mut c).to_string());
    seen
}

#[test]
fn blocking_reads_and_trimming_match_redis_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let ours = scenario(&s.url());
    assert!(
        ours.iter()
            .any(|l| l.contains("xread after $") && l.contains("2-1") && !l.contains("1-1")),
        "{ours:#?}"
    );
    let Some(redis) = redis_server_or_skip("the stream scenario") else {
        return;
    };
    let theirs = scenario(&format!("redis://{}/", redis.addr));
    assert_eq!(ours, theirs);
}

#[test]
fn pending_entries_and_groups_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    for i in 1..=5 {
        cmd(
            &mut c,
            &["XADD", "jobs", &format!("{i}-0"), "n", &i.to_string()],
        );
    }
    cmd(&mut c, &["XGROUP", "CREATE", "jobs", "workers", "0"]);
    cmd(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    cmd(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "bob",
            "COUNT",
            "1",
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    cmd(&mut c, &["XACK", "jobs", "workers", "1-0"]);
    cmd(&mut c, &["XDEL", "jobs", "5-0"]);
    let before = (
        cmd(&mut c, &["XPENDING", "jobs", "workers"]),
        cmd(&mut c, &["XINFO", "GROUPS", "jobs"]),
        cmd(&mut c, &["XPENDING", "jobs", "workers", "-", "+", "10"]),
    );
    drop(c);
    s.stop();

    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let summary = cmd(&mut c, &["XPENDING", "jobs", "workers"]);
    assert_eq!(summary, before.0, "the PEL summary after a restart");
    assert_eq!(cmd(&mut c, &["XINFO", "GROUPS", "jobs"]), before.1);
    // Delivery counts and owners (idle times moved on).
    let rows = |v: &Value| match v {
        Value::Array(rows) => rows
            .iter()
            .map(|r| match r {
                Value::Array(f) => (
                    format!("{:?}", f[0]),
                    format!("{:?}", f[1]),
                    format!("{:?}", f[3]),
                ),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        rows(&cmd(
            &mut c,
            &["XPENDING", "jobs", "workers", "-", "+", "10"]
        )),
        rows(&before.2)
    );
    // The group goes on where it was: 4-0 is next (5-0 was deleted), then nothing.
    let v = cmd(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "carol",
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    assert_eq!(read_ids(&v), ["4-0"]);
    // alice's history: 2-0 pending (1-0 was acknowledged), delivered a second time.
    let v = cmd(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "alice",
            "STREAMS",
            "jobs",
            "0",
        ],
    );
    assert_eq!(read_ids(&v), ["2-0"]);
    let v = cmd(
        &mut c,
        &["XPENDING", "jobs", "workers", "-", "+", "10", "alice"],
    );
    assert_eq!(rows(&v)[0].2, "int(2)", "delivered twice: {v:?}");
}

#[test]
fn a_long_stream_is_read_a_page_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let n = 20_000;
    let mut p = redis::pipe();
    for i in 1..=n {
        p.cmd("XADD")
            .arg("big")
            .arg(format!("{i}-0"))
            .arg("i")
            .arg(i);
    }
    let _: Vec<String> = p.query(&mut c).unwrap();
    assert_eq!(cmd(&mut c, &["XLEN", "big"]), Value::Int(n));
    let page = cmd(&mut c, &["XRANGE", "big", "(10000-0", "+", "COUNT", "3"]);
    assert_eq!(ids(&page), ["10001-0", "10002-0", "10003-0"]);
    let last = cmd(&mut c, &["XREVRANGE", "big", "+", "-", "COUNT", "1"]);
    assert_eq!(ids(&last), [format!("{n}-0")]);
    let read = cmd(
        &mut c,
        &["XREAD", "COUNT", "2", "STREAMS", "big", "19998-0"],
    );
    let Value::Array(streams) = read else {
        panic!()
    };
    let Value::Array(pair) = &streams[0] else {
        panic!()
    };
    assert_eq!(ids(&pair[1]), ["19999-0", "20000-0"]);
    // Exact trimming from the head, and the new first entry.
    assert_eq!(
        cmd(&mut c, &["XTRIM", "big", "MINID", "15000"]),
        Value::Int(14_999)
    );
    let first = cmd(&mut c, &["XRANGE", "big", "-", "+", "COUNT", "1"]);
    assert_eq!(ids(&first), ["15000-0"]);
}

/// XADD runs inline and shares a segment with the commands pipelined around it; one that
/// trims reruns on the engine pool and must see the entries added before it in its segment.
#[test]
fn pipelined_xadds_that_trim_see_the_entries_before_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let mut p = redis::pipe();
    for i in 1..=10 {
        p.cmd("XADD").arg("p").arg(format!("{i}-1")).arg("f").arg(i);
        if i % 3 == 0 {
            p.cmd("XADD")
                .arg("p")
                .arg("MAXLEN")
                .arg(2)
                .arg(format!("{i}-2"))
                .arg("f")
                .arg(i);
            p.cmd("XLEN").arg("p");
        }
    }
    p.cmd("XRANGE").arg("p").arg("-").arg("+");
    let out: Vec<Value> = p.query(&mut c).unwrap();
    let lens: Vec<&Value> = out.iter().filter(|v| matches!(v, Value::Int(_))).collect();
    assert_eq!(lens, [&Value::Int(2), &Value::Int(2), &Value::Int(2)]);
    assert_eq!(ids(out.last().unwrap()), ["9-1", "9-2", "10-1"]);
    assert_eq!(cmd(&mut c, &["XLEN", "p"]), Value::Int(3));
}
