//! Read-modify-write commands are atomic under concurrent clients: every client's result is
//! one a serial execution would give (each INCR returns a distinct value, exactly one SETNX
//! wins, GETSET hands each value to exactly one caller, MSETNX is all-or-nothing).

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{run, test_config, TestServer};
use redis::Value;

const THREADS: usize = 6;

fn parallel<T: Send + 'static>(
    s: &TestServer,
    f: impl Fn(usize, &mut redis::Connection) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let f = Arc::new(f);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let f = f.clone();
            let mut c = s.conn();
            std::thread::spawn(move || f(t, &mut c))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn incr_returns_every_value_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    const N: i64 = 400;
    let results = parallel(&s, |t, c| {
        let mut got = Vec::new();
        if t % 2 == 0 {
            for _ in 0..N {
                let Ok(Value::Int(v)) = run(c, &["INCR", "ctr"]) else {
                    panic!()
                };
                got.push(v);
            }
        } else {
            // Pipelined, in chunks, so several increments share one engine write.
            for _ in 0..N / 20 {
                let mut p = redis::pipe();
                for _ in 0..20 {
                    p.cmd("INCRBY").arg("ctr").arg(1);
                }
                let r: Vec<i64> = p.query(c).unwrap();
                got.extend(r);
            }
        }
        got
    });
    let all: Vec<i64> = results.into_iter().flatten().collect();
    let set: HashSet<i64> = all.iter().copied().collect();
    let total = THREADS as i64 * N;
    assert_eq!(set.len() as i64, total, "duplicate INCR results");
    assert_eq!(set, (1..=total).collect::<HashSet<_>>());
    assert_eq!(
        run(&mut s.conn(), &["GET", "ctr"]),
        Ok(Value::BulkString(total.to_string().into_bytes()))
    );
}

#[test]
fn append_and_incrbyfloat_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    const N: usize = 300;
    let lens = parallel(&s, |_, c| {
        (0..N)
            .map(|_| {
                let Ok(Value::Int(l)) = run(c, &["APPEND", "log", "x"]) else {
                    panic!()
                };
                run(c, &["INCRBYFLOAT", "f", "0.5"]).unwrap();
                l
            })
            .collect::<Vec<_>>()
    });
    let set: HashSet<i64> = lens.into_iter().flatten().collect();
    assert_eq!(set.len(), THREADS * N);
    let c = &mut s.conn();
    assert_eq!(
        run(c, &["STRLEN", "log"]),
        Ok(Value::Int((THREADS * N) as i64))
    );
    assert_eq!(
        run(c, &["GET", "f"]),
        Ok(Value::BulkString(
            format!("{}", THREADS * N / 2).into_bytes()
        ))
    );
}

#[test]
fn setnx_has_one_winner_and_getset_hands_values_out_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    const ROUNDS: usize = 150;
    let wins = parallel(&s, |t, c| {
        let mut wins = Vec::new();
        let mut handed = Vec::new();
        for r in 0..ROUNDS {
            if run(c, &["SETNX", &format!("nx:{r}"), &t.to_string()]) == Ok(Value::Int(1)) {
                wins.push(r);
            }
            let mine = format!("{t}:{r}");
            match run(c, &["GETSET", "baton", &mine]) {
                Ok(Value::BulkString(old)) => handed.push(String::from_utf8(old).unwrap()),
                Ok(Value::Nil) => handed.push("<none>".into()),
                other => panic!("{other:?}"),
            }
        }
        (wins, handed)
    });
    let mut per_round = vec![0; ROUNDS];
    let mut handed = Vec::new();
    for (w, h) in wins {
        for r in w {
            per_round[r] += 1;
        }
        handed.extend(h);
    }
    assert!(per_round.iter().all(|&n| n == 1), "{per_round:?}");
    // Every value written to `baton` was handed to exactly one later GETSET, except the last
    // one, which is still stored; and `<none>` exactly once.
    let c = &mut s.conn();
    let Ok(Value::BulkString(last)) = run(c, &["GET", "baton"]) else {
        panic!()
    };
    handed.push(String::from_utf8(last).unwrap());
    let set: HashSet<&String> = handed.iter().collect();
    assert_eq!(set.len(), handed.len(), "a value was handed out twice");
    assert_eq!(handed.len(), THREADS * ROUNDS + 1);
    assert!(set.contains(&"<none>".to_string()));
}

#[test]
fn msetnx_is_all_or_nothing_under_contention() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    const ROUNDS: usize = 150;
    parallel(&s, |t, c| {
        for r in 0..ROUNDS {
            // Thread t claims keys t and t+1 of round r: neighbours overlap by one key.
            let a = format!("r{r}:k{t}");
            let b = format!("r{r}:k{}", (t + 1) % THREADS);
            let v = t.to_string();
            run(c, &["MSETNX", &a, &v, &b, &v]).unwrap();
        }
    });
    let c = &mut s.conn();
    for r in 0..ROUNDS {
        let keys: Vec<String> = (0..THREADS).map(|t| format!("r{r}:k{t}")).collect();
        let mut cmd = redis::cmd("MGET");
        for k in &keys {
            cmd.arg(k);
        }
        let vals: Vec<Option<String>> = cmd.query(c).unwrap();
        // Every owner wrote both of its keys, and owners never overlap.
        let mut owned = [false; THREADS];
        for (i, v) in vals.iter().enumerate() {
            let Some(v) = v else { continue };
            let t: usize = v.parse().unwrap();
            assert!(i == t || i == (t + 1) % THREADS, "round {r}: {vals:?}");
            owned[t] = true;
        }
        for (t, o) in owned.iter().enumerate() {
            if *o {
                assert_eq!(
                    vals[t].as_deref(),
                    Some(t.to_string().as_str()),
                    "round {r}"
                );
                assert_eq!(
                    vals[(t + 1) % THREADS].as_deref(),
                    Some(t.to_string().as_str()),
                    "round {r}: partial MSETNX {vals:?}"
                );
            }
        }
        assert!(owned.iter().any(|o| *o), "round {r}: nobody won");
    }
}

#[test]
fn flushdb_does_not_tear_concurrent_increments() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    // Each INCR result must be 1 more than the last one the same thread saw, unless a FLUSHDB
    // happened in between (then it restarts from 1); never an old value plus one after a flush.
    let flusher = {
        let mut c = s.conn();
        std::thread::spawn(move || {
            for _ in 0..50 {
                run(&mut c, &["FLUSHDB"]).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let results = parallel(&s, |t, c| {
        let key = format!("own:{t}");
        let mut prev = 0;
        for _ in 0..400 {
            let Ok(Value::Int(v)) = run(c, &["INCR", &key]) else {
                panic!()
            };
            assert!(v == prev + 1 || v == 1, "{key}: {prev} -> {v}");
            prev = v;
        }
    });
    assert_eq!(results.len(), THREADS);
    flusher.join().unwrap();
}
