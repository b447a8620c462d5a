//! MULTI/EXEC/DISCARD and WATCH against a real server with a real client: redis' queuing and
//! error semantics, reads that see the transaction's own writes (collection scans, KEYS, SCAN
//! and DBSIZE included, also after a FLUSHDB inside it), WATCH aborts on every kind of change
//! by another client (and on expiry), and isolation: concurrent transfers between accounts,
//! by WATCH + MULTI/EXEC and by plain MULTI/EXEC, never change the sum a reader sees inside
//! MULTI/EXEC.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{err_text, run, test_config, Rng, TestServer};
use redis::Value;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn ok() -> Value {
    Value::Okay
}

fn queued(c: &mut redis::Connection, args: &[&str]) {
    assert_eq!(
        run(c, args),
        Ok(Value::SimpleString("QUEUED".into())),
        "{args:?}"
    );
}

/// Runs MULTI, the commands, EXEC; returns EXEC's reply.
fn transaction(c: &mut redis::Connection, cmds: &[&[&str]]) -> Result<Value, String> {
    assert_eq!(run(c, &["MULTI"]), Ok(ok()));
    for cmd in cmds {
        queued(c, cmd);
    }
    run(c, &["EXEC"])
}

#[test]
fn exec_runs_the_queue_in_order_and_reads_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    run(&mut c, &["RPUSH", "l", "old"]).unwrap();
    run(&mut c, &["HSET", "h", "a", "0", "z", "9"]).unwrap();
    let got = transaction(
        &mut c,
        &[
            &["SET", "a", "1"],
            &["INCR", "a"],
            &["GET", "a"],
            &["HSET", "h", "b", "1"],
            &["HDEL", "h", "z"],
            &["HGETALL", "h"],
            &["RPUSH", "l", "x", "y"],
            &["LRANGE", "l", "0", "-1"],
            &["LRANGE", "l", "-1", "0"],
            &["ZADD", "z", "2", "b", "1", "a"],
            &["ZREVRANGE", "z", "0", "-1"],
            &["SADD", "s", "m"],
            &["SMEMBERS", "s"],
            &["DBSIZE"],
            &["RENAME", "s", "s2"],
            &["EXISTS", "s", "s2"],
            &["PING"],
        ],
    )
    .unwrap();
    let Value::Array(replies) = got else {
        panic!("{got:?}")
    };
    let want = vec![
        ok(),
        Value::Int(2),
        bulk("2"),
        Value::Int(1),
        Value::Int(1),
        Value::Array(vec![bulk("a"), bulk("0"), bulk("b"), bulk("1")]),
        Value::Int(3),
        Value::Array(vec![bulk("old"), bulk("x"), bulk("y")]),
        Value::Array(vec![]),
        Value::Int(2),
        Value::Array(vec![bulk("b"), bulk("a")]),
        Value::Int(1),
        Value::Array(vec![bulk("m")]),
        Value::Int(5),
        ok(),
        Value::Int(1),
        Value::SimpleString("PONG".into()),
    ];
    assert_eq!(replies, want);
    // Committed: another client sees it all.
    let mut other = s.conn();
    assert_eq!(run(&mut other, &["GET", "a"]), Ok(bulk("2")));
    assert_eq!(run(&mut other, &["LLEN", "l"]), Ok(Value::Int(3)));
    assert_eq!(
        run(&mut other, &["SMEMBERS", "s2"]),
        Ok(Value::Array(vec![bulk("m")]))
    );

    // After a FLUSHDB inside the transaction, nothing older is seen: not by point reads, not
    // by scans, not by collection reads.
    let got = transaction(
        &mut c,
        &[
            &["FLUSHDB"],
            &["GET", "a"],
            &["HGETALL", "h"],
            &["LLEN", "l"],
            &["SET", "n", "1"],
            &["RPUSH", "l", "new"],
            &["LRANGE", "l", "0", "-1"],
            &["KEYS", "*"],
            &["DBSIZE"],
            &["SCAN", "0", "COUNT", "1000"],
        ],
    )
    .unwrap();
    let Value::Array(r) = got else { panic!() };
    assert_eq!(r[1], Value::Nil);
    assert_eq!(r[2], Value::Array(vec![]));
    assert_eq!(r[3], Value::Int(0));
    assert_eq!(r[6], Value::Array(vec![bulk("new")]));
    let Value::Array(mut keys) = r[7].clone() else {
        panic!()
    };
    keys.sort_by_key(|v| format!("{v:?}"));
    assert_eq!(keys, vec![bulk("l"), bulk("n")]);
    assert_eq!(r[8], Value::Int(2));
    assert_eq!(
        run(&mut other, &["DBSIZE"]),
        Ok(Value::Int(2)),
        "one batch: the flush and the writes after it"
    );
}

#[test]
fn errors_while_queuing_abort_and_errors_while_running_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["MULTI"]), Ok(ok()));
    queued(&mut c, &["SET", "a", "1"]);
    let e = run(&mut c, &["GET"]).unwrap_err();
    assert!(e.contains("wrong number of arguments"), "{e}");
    let e = run(&mut c, &["NOSUCHCOMMAND"]).unwrap_err();
    assert!(e.contains("unknown command"), "{e}");
    let e = run(&mut c, &["SHUTDOWN"]).unwrap_err();
    assert!(e.contains("not allowed inside a transaction"), "{e}");
    let e = run(&mut c, &["MULTI"]).unwrap_err();
    assert!(e.contains("can not be nested"), "{e}");
    let e = run(&mut c, &["WATCH", "a"]).unwrap_err();
    assert!(e.contains("WATCH inside MULTI"), "{e}");
    let e = run(&mut c, &["EXEC"]).unwrap_err();
    assert!(e.starts_with("EXECABORT"), "{e}");
    assert_eq!(run(&mut c, &["GET", "a"]), Ok(Value::Nil), "nothing ran");
    let e = run(&mut c, &["EXEC"]).unwrap_err();
    assert!(e.contains("EXEC without MULTI"), "{e}");
    let e = run(&mut c, &["DISCARD"]).unwrap_err();
    assert!(e.contains("DISCARD without MULTI"), "{e}");

    // A runtime error is that command's reply; the rest runs and commits.
    run(&mut c, &["SET", "str", "x"]).unwrap();
    let mut raw = s.raw();
    raw.expect(
        b"MULTI\r\nSET a 1\r\nLPUSH str y\r\nINCR a\r\nEXEC\r\n",
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n\
         -WRONGTYPE Operation against a key holding the wrong kind of value\r\n:2\r\n",
    );
    assert_eq!(run(&mut c, &["GET", "a"]), Ok(bulk("2")));

    // DISCARD drops the queue; an empty transaction answers an empty array.
    assert_eq!(run(&mut c, &["MULTI"]), Ok(ok()));
    queued(&mut c, &["SET", "a", "999"]);
    assert_eq!(run(&mut c, &["DISCARD"]), Ok(ok()));
    assert_eq!(run(&mut c, &["GET", "a"]), Ok(bulk("2")));
    assert_eq!(transaction(&mut c, &[]), Ok(Value::Array(vec![])));

    // Pipelined in one write, as redis-py's pipeline sends it.
    raw.expect(
        b"MULTI\r\nSET p 1\r\nINCR p\r\nEXEC\r\nGET p\r\n",
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:2\r\n$1\r\n2\r\n",
    );
}

/// What WATCH sees as a change: writes of every kind by another client, by a transaction,
/// by the watcher itself, FLUSHDB, and the key expiring; not a write of another key.
#[test]
fn watch_aborts_exec_when_a_watched_key_changes() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let mut other = s.conn();
    let changes: &[&[&[&str]]] = &[
        &[&["SET", "k", "2"]],
        &[&["DEL", "k"]],
        &[&["EXPIRE", "k", "100"]],
        &[&["RENAME", "k", "k2"]],
        &[&["RENAME", "k0", "k"]],
        &[&["FLUSHDB"]],
        &[&["INCR", "k"]],
        &[&["MULTI"], &["SET", "k", "3"], &["EXEC"]],
        &[&["HSET", "k", "f", "v"]],
    ];
    for (i, change) in changes.iter().enumerate() {
        run(&mut c, &["FLUSHDB"]).unwrap();
        run(&mut c, &["SET", "k0", "0"]).unwrap();
        if change[0][0] != "HSET" {
            run(&mut c, &["SET", "k", "1"]).unwrap();
        }
        assert_eq!(run(&mut c, &["WATCH", "k", "unrelated"]), Ok(ok()));
        for cmd in *change {
            run(&mut other, cmd).unwrap();
        }
        let got = transaction(&mut c, &[&["SET", "out", "x"]]);
        assert_eq!(got, Ok(Value::Nil), "change {i}: {change:?}");
        assert_eq!(
            run(&mut c, &["EXISTS", "out"]),
            Ok(Value::Int(0)),
            "change {i}"
        );
    }
    // Untouched, or touched only elsewhere: EXEC runs.
    run(&mut c, &["SET", "k", "1"]).unwrap();
    run(&mut c, &["WATCH", "k"]).unwrap();
    run(&mut other, &["SET", "elsewhere", "1"]).unwrap();
    run(&mut other, &["GET", "k"]).unwrap();
    assert_eq!(
        transaction(&mut c, &[&["SET", "out", "1"]]),
        Ok(Value::Array(vec![ok()]))
    );
    // EXEC unwatches: a later change does not abort the next transaction.
    run(&mut other, &["SET", "k", "5"]).unwrap();
    assert_eq!(
        transaction(&mut c, &[&["GET", "k"]]),
        Ok(Value::Array(vec![bulk("5")]))
    );
    // UNWATCH and DISCARD forget the watches.
    run(&mut c, &["WATCH", "k"]).unwrap();
    run(&mut c, &["UNWATCH"]).unwrap();
    run(&mut other, &["SET", "k", "6"]).unwrap();
    assert_eq!(
        transaction(&mut c, &[&["GET", "k"]]),
        Ok(Value::Array(vec![bulk("6")]))
    );
    run(&mut c, &["WATCH", "k"]).unwrap();
    run(&mut c, &["MULTI"]).unwrap();
    run(&mut c, &["DISCARD"]).unwrap();
    run(&mut other, &["SET", "k", "7"]).unwrap();
    assert_eq!(
        transaction(&mut c, &[&["GET", "k"]]),
        Ok(Value::Array(vec![bulk("7")]))
    );
    // The watcher's own write counts (as in redis).
    run(&mut c, &["WATCH", "k"]).unwrap();
    run(&mut c, &["SET", "k", "8"]).unwrap();
    assert_eq!(transaction(&mut c, &[&["GET", "k"]]), Ok(Value::Nil));
    // Expiring after WATCH aborts; a key already expired when watched does not.
    run(&mut c, &["SET", "t", "1", "PX", "60"]).unwrap();
    run(&mut c, &["WATCH", "t"]).unwrap();
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(transaction(&mut c, &[&["GET", "t"]]), Ok(Value::Nil));
    run(&mut c, &["WATCH", "t"]).unwrap();
    assert_eq!(
        transaction(&mut c, &[&["GET", "t"]]),
        Ok(Value::Array(vec![Value::Nil]))
    );
    // A closed connection's watches are gone from the registry.
    run(&mut other, &["WATCH", "a", "b", "c"]).unwrap();
    drop(other);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.shared().store.watches().registrations() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "watches outlive their connection"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = err_text(&redis::cmd("WATCH").query::<()>(&mut c).unwrap_err());
    assert!(e.contains("wrong number of arguments"), "{e}");
}

const ACCOUNTS: usize = 8;
const START: i64 = 1000;

fn balances(c: &mut redis::Connection) -> Vec<i64> {
    let mut cmd: Vec<String> = vec!["MGET".into()];
    cmd.extend((0..ACCOUNTS).map(|i| format!("acct{i}")));
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let Ok(Value::Array(r)) = transaction(c, &[&args, &["PING"]]) else {
        panic!("reader's EXEC failed")
    };
    let Value::Array(vals) = &r[0] else { panic!() };
    vals.iter()
        .map(|v| match v {
            Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Transfers by WATCH + GET + MULTI/EXEC (check-and-set, retried on abort) and by blind
/// MULTI/EXEC (DECRBY + INCRBY, also into a hash field) run concurrently; a reader summing
/// inside MULTI/EXEC always sees the same total.
#[test]
fn concurrent_transfers_never_change_the_sum() {
    let seed = common::seed("multi-transfers");
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    for i in 0..ACCOUNTS {
        run(&mut c, &["SET", &format!("acct{i}"), &START.to_string()]).unwrap();
    }
    let total = START * ACCOUNTS as i64;
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for t in 0..4u64 {
        let mut w = s.conn();
        let stop = stop.clone();
        workers.push(std::thread::spawn(move || {
            let mut rng = Rng::new(seed ^ t);
            let (mut done, mut aborted) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) && done < 400 {
                let a = format!("acct{}", rng.below(ACCOUNTS as u64));
                let b = format!("acct{}", rng.below(ACCOUNTS as u64));
                let amount = 1 + rng.below(20) as i64;
                if t % 2 == 0 {
                    run(&mut w, &["WATCH", &a, &b]).unwrap();
                    let Ok(Value::BulkString(v)) = run(&mut w, &["GET", &a]) else {
                        panic!()
                    };
                    let have: i64 = std::str::from_utf8(&v).unwrap().parse().unwrap();
                    let Ok(Value::BulkString(v)) = run(&mut w, &["GET", &b]) else {
                        panic!()
                    };
                    let to: i64 = std::str::from_utf8(&v).unwrap().parse().unwrap();
                    let (na, nb) = if a == b {
                        (have, have)
                    } else {
                        (have - amount, to + amount)
                    };
                    let r = transaction(
                        &mut w,
                        &[&["SET", &a, &na.to_string()], &["SET", &b, &nb.to_string()]],
                    );
                    match r {
                        Ok(Value::Nil) => aborted += 1,
                        Ok(Value::Array(_)) => done += 1,
                        other => panic!("{other:?}"),
                    }
                } else {
                    let r = transaction(
                        &mut w,
                        &[
                            &["DECRBY", &a, &amount.to_string()],
                            &["INCRBY", &b, &amount.to_string()],
                        ],
                    );
                    assert!(matches!(r, Ok(Value::Array(_))), "{r:?}");
                    done += 1;
                }
            }
            (done, aborted)
        }));
    }
    let mut reads = 0;
    while workers.iter().any(|w| !w.is_finished()) {
        let b = balances(&mut c);
        assert_eq!(
            b.iter().sum::<i64>(),
            total,
            "a reader saw a half transfer: {b:?} (seed {seed})"
        );
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let mut aborted = 0;
    for w in workers {
        aborted += w.join().unwrap().1;
    }
    assert_eq!(balances(&mut c).iter().sum::<i64>(), total, "seed {seed}");
    eprintln!("{reads} consistent reads; {aborted} check-and-set transfers aborted and retried");
    assert!(reads > 0);
}

/// A blocking command inside EXEC never blocks, as in redis: on empty keys it answers its
/// timeout reply (null). Scripts may call only BLMPOP and BZMPOP (redis 7.0's `noscript` flag
/// on the others), which answer at once there. (Blocking for real: tests/blocking.rs.)
#[test]
fn blocking_commands_answer_null_inside_exec_and_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    run(&mut c, &["MULTI"]).unwrap();
    run(&mut c, &["BLPOP", "empty", "0"]).unwrap();
    run(&mut c, &["BRPOPLPUSH", "empty", "dst", "0"]).unwrap();
    run(&mut c, &["BZPOPMIN", "emptyz", "0"]).unwrap();
    run(&mut c, &["RPUSH", "l", "x"]).unwrap();
    run(&mut c, &["BLPOP", "l", "0"]).unwrap();
    assert_eq!(
        run(&mut c, &["EXEC"]),
        Ok(Value::Array(vec![
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::Int(1),
            Value::Array(vec![bulk("l"), bulk("x")]),
        ]))
    );
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "return redis.call('BLMPOP', 0, 1, KEYS[1], 'LEFT') == false",
                "1",
                "empty"
            ]
        ),
        Ok(Value::Int(1))
    );
    let e = run(
        &mut c,
        &[
            "EVAL",
            "return redis.call('BLPOP', KEYS[1], 0)",
            "1",
            "empty",
        ],
    )
    .unwrap_err();
    assert!(e.contains("not allowed from script"), "{e}");
    s.stop();
}
