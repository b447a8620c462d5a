//! Keyspace notifications against redis-server: a subscriber on `__keyspace@0__:*` and
//! `__keyevent@0__:*` hears the same messages, in the same order, from strata and from
//! redis-server 7.0 while a client runs writes of every family (strings, expiry, RENAME and
//! COPY, lists and the two-key moves, hashes, sets, sorted sets, *STORE of an empty result,
//! streams and their groups, MULTI/EXEC and a script) — with `notify-keyspace-events` set by
//! CONFIG SET at run time, then narrowed to a few classes, then `n` (new keys). And what only
//! strata shows: with notifications off, nothing is published.

mod common;

use std::time::Duration;

use common::redis_server::redis_server_or_skip;
use common::{connect, test_config, TestServer};

fn run(c: &mut redis::Connection, line: &str) {
    let words: Vec<&str> = line.split(' ').collect();
    let mut k = redis::cmd(words[0]);
    for w in &words[1..] {
        k.arg(*w);
    }
    let _: redis::Value = k.query(c).unwrap_or_else(|e| panic!("{line}: {e}"));
}

const WRITES: &[&str] = &[
    "SET s v",
    "SET s v EX 100",
    "SETEX s2 100 v",
    "SETNX s3 v",
    "INCR n",
    "INCRBYFLOAT n 1.5",
    "APPEND s x",
    "SETRANGE s 1 y",
    "GETSET s z",
    "MSET m1 a m2 b",
    "EXPIRE n 100",
    "PERSIST n",
    "EXPIRE n -1",
    "GETEX s PERSIST",
    "GETEX s EX 50",
    "GETDEL s3",
    "RENAME s s4",
    "COPY s4 s5",
    "DEL m1 m2 missing",
    "LPUSH l a b c",
    "RPUSH l d",
    "LPOP l",
    "RPOP l",
    "LSET l 0 x",
    "LINSERT l BEFORE x w",
    "LREM l 1 w",
    "LTRIM l 0 0",
    "LMOVE l l2 LEFT RIGHT",
    "RPOPLPUSH l2 l3",
    "LMPOP 1 l3 LEFT",
    "HSET h f v g w",
    "HINCRBY h n 1",
    "HDEL h f g n",
    "SADD st a b",
    "SREM st a",
    "SMOVE st st2 b",
    "SPOP st2",
    "SADD x1 a",
    "SADD x2 b",
    "SINTERSTORE dst x1 x2",
    "SUNIONSTORE dst x1 x2",
    "ZADD z 1 a 2 b",
    "ZADD z INCR 5 a",
    "ZINCRBY z 1 b",
    "ZREM z b",
    "ZPOPMIN z",
    "XADD xs 1-1 f v",
    "XADD xs MAXLEN 1 2-1 f v",
    "XGROUP CREATE xs g $",
    "XGROUP CREATECONSUMER xs g c1",
    "XREADGROUP GROUP g c2 STREAMS xs 0",
    "XGROUP DELCONSUMER xs g c1",
    "XGROUP SETID xs g 0",
    "XGROUP DESTROY xs g",
    "XDEL xs 2-1",
    "SETBIT b 3 1",
];

/// What a subscriber heard while `setup` and the writes ran.
fn heard(url: &str, setup: &[&str], writes: &[&str]) -> Vec<String> {
    let mut c = connect(url);
    run(&mut c, "FLUSHALL");
    let mut sub = connect(url);
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__key*@0__:*").unwrap();
    ps.subscribe("marker").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for l in setup {
        run(&mut c, l);
    }
    for l in writes {
        run(&mut c, l);
    }
    // A transaction and a script publish too, in command order.
    redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("tx")
        .arg("1")
        .cmd("DEL")
        .arg("tx")
        .query::<redis::Value>(&mut c)
        .unwrap();
    redis::cmd("EVAL")
        .arg("redis.call('RPUSH', KEYS[1], 'a'); redis.call('LPOP', KEYS[1]); return 1")
        .arg(1)
        .arg("scripted")
        .query::<redis::Value>(&mut c)
        .unwrap();
    run(&mut c, "CONFIG SET notify-keyspace-events ");
    run(&mut c, "PUBLISH marker end");
    let mut out = Vec::new();
    loop {
        let m = ps.get_message().expect("a message before the marker");
        let channel = m.get_channel_name().to_string();
        if channel == "marker" {
            break;
        }
        let payload: String = m.get_payload().unwrap();
        out.push(format!("{channel} {payload}"));
    }
    out
}

fn scenario(url: &str) -> Vec<Vec<String>> {
    vec![
        heard(url, &["CONFIG SET notify-keyspace-events KEA"], WRITES),
        heard(
            url,
            &["CONFIG SET notify-keyspace-events Elg"],
            &WRITES[..30],
        ),
        heard(
            url,
            &["CONFIG SET notify-keyspace-events Kn$l"],
            &WRITES[..30],
        ),
    ]
}

#[test]
fn subscribers_hear_what_redis_server_publishes() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let ours = scenario(&s.url());
    assert!(ours[0].len() > WRITES.len(), "{:#?}", ours[0]);
    // Nothing is published with notifications off (the default).
    assert!(heard(&s.url(), &[], &WRITES[..10]).is_empty());
    let Some(redis) = redis_server_or_skip("the keyspace notification scenario") else {
        return;
    };
    let theirs = scenario(&format!("redis://{}/", redis.addr));
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        if a != b {
            let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            panic!(
                "pass {i}: first difference at message {n}\n  strata: {:?}\n  redis:  {:?}",
                &a[n.saturating_sub(3)..(n + 5).min(a.len())],
                &b[n.saturating_sub(3)..(n + 5).min(b.len())]
            );
        }
    }
}

/// What a subscriber to `expired` events hears within a few seconds: a key that had its TTL
/// before the events were turned on, two set after (one of them given a longer TTL before it
/// expires, one PERSISTed: neither may be announced early or at all).
fn expired_heard(url: &str) -> Vec<String> {
    let mut c = connect(url);
    run(&mut c, "FLUSHALL");
    run(&mut c, "CONFIG SET notify-keyspace-events ");
    run(&mut c, "SET before v PX 300");
    let mut sub = connect(url);
    let mut ps = sub.as_pubsub();
    ps.subscribe("__keyevent@0__:expired").unwrap();
    ps.subscribe("marker").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    run(&mut c, "CONFIG SET notify-keyspace-events Ex");
    run(&mut c, "SET after v PX 200");
    run(&mut c, "HSET coll f v");
    run(&mut c, "PEXPIRE coll 250");
    run(&mut c, "SET extended v PX 200");
    run(&mut c, "PEXPIRE extended 5000");
    run(&mut c, "SET kept v PX 200");
    run(&mut c, "PERSIST kept");
    std::thread::sleep(Duration::from_millis(1500));
    // The expired keys are gone for every command, as they were before.
    let n: i64 = redis::cmd("EXISTS")
        .arg("before")
        .arg("after")
        .arg("coll")
        .arg("extended")
        .arg("kept")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 2, "extended and kept remain");
    run(&mut c, "PUBLISH marker end");
    let mut out = Vec::new();
    loop {
        let m = ps.get_message().expect("a message before the marker");
        if m.get_channel_name() == "marker" {
            break;
        }
        out.push(m.get_payload::<String>().unwrap());
    }
    run(&mut c, "CONFIG SET notify-keyspace-events ");
    out.sort();
    out
}

#[test]
fn expired_keys_are_announced_once_they_expire() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let ours = expired_heard(&s.url());
    assert_eq!(ours, ["after", "before", "coll"]);
    let Some(redis) = redis_server_or_skip("the expired-event scenario") else {
        return;
    };
    assert_eq!(expired_heard(&format!("redis://{}/", redis.addr)), ours);
}
