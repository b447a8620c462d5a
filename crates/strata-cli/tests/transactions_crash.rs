//! A MULTI/EXEC transaction or a Lua script is all or nothing across SIGKILL: `strata serve`
//! under writers that each run large transactions (100-1,000 SETs plus a tenth as many hash
//! fields and a marker, all carrying the transaction's generation; the last writer does the
//! same in one EVAL, whose undeclared keys make it run holding every key lock), killed at a random moment and
//! restarted, under `--sync always` and `--sync everysec`. After the restart, each writer's
//! marker names the last transaction that survived, every key and field it wrote holds that
//! generation, and no key holds a later one: never part of a transaction. Under `always` the
//! survivor is the last acknowledged transaction or the one in flight; under `everysec` an
//! acknowledged suffix may be lost (the policy's promise), but only whole transactions.
//! `STRATA_SEED` replays a seed.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Rng, ServerProcess};

const WRITERS: u64 = 3;
const KEYS: u64 = 1000;

/// The last writer's transaction as one script: the same writes as the MULTI/EXEC writers'.
const SCRIPT: &str = "
    local g, n = ARGV[1], tonumber(ARGV[2])
    for i = 0, n - 1 do redis.call('SET', KEYS[1] .. i, g) end
    for i = 0, math.floor(n / 10) - 1 do redis.call('HSET', KEYS[2], 'f' .. i, g) end
    redis.call('SET', KEYS[3], g .. ':' .. n)
    return n";

/// Per writer: the generation (and size) of the last acknowledged transaction and of the one
/// in flight.
#[derive(Default, Clone, Copy, Debug)]
struct Progress {
    acked: (u64, u64),
    in_flight: Option<(u64, u64)>,
    transactions: u64,
}

fn writer(url: String, t: u64, seed: u64, progress: Arc<Mutex<Progress>>, deadline: Instant) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    let Ok(mut c) = client.get_connection_with_timeout(Duration::from_secs(10)) else {
        return;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(20)));
    let mut rng = Rng::new(seed ^ t.wrapping_mul(0x5851_f42d));
    while Instant::now() < deadline {
        let g = {
            let p = progress.lock().unwrap();
            p.in_flight.map_or(p.acked.0, |f| f.0.max(p.acked.0)) + 1
        };
        let n = 100 + rng.below(901);
        progress.lock().unwrap().in_flight = Some((g, n));
        if t == WRITERS - 1 {
            let r = redis::cmd("EVAL")
                .arg(SCRIPT)
                .arg(3)
                .arg(format!("w{t}:k"))
                .arg(format!("w{t}:h"))
                .arg(format!("w{t}:marker"))
                .arg(g)
                .arg(n)
                .query::<i64>(&mut c);
            if r.is_err() {
                return;
            }
            let mut p = progress.lock().unwrap();
            p.acked = (g, n);
            p.in_flight = None;
            p.transactions += 1;
            continue;
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        for i in 0..n {
            pipe.cmd("SET").arg(format!("w{t}:k{i}")).arg(g).ignore();
        }
        for i in 0..n / 10 {
            pipe.cmd("HSET")
                .arg(format!("w{t}:h"))
                .arg(format!("f{i}"))
                .arg(g)
                .ignore();
        }
        pipe.cmd("SET")
            .arg(format!("w{t}:marker"))
            .arg(format!("{g}:{n}"))
            .ignore();
        if pipe.query::<()>(&mut c).is_err() {
            return;
        }
        let mut p = progress.lock().unwrap();
        p.acked = (g, n);
        p.in_flight = None;
        p.transactions += 1;
    }
}

/// The surviving transaction of writer `t` — `(generation, size)`, `(0, 0)` if none — after
/// checking that every key holds it or an older generation and the transaction's own keys
/// all hold it.
fn check_writer(c: &mut redis::Connection, t: u64, seed: u64) -> (u64, u64) {
    let marker: Option<String> = redis::cmd("GET")
        .arg(format!("w{t}:marker"))
        .query(c)
        .unwrap();
    let (g, n) = marker.map_or((0, 0), |m| {
        let (g, n) = m.split_once(':').expect("marker g:n");
        (g.parse().unwrap(), n.parse().unwrap())
    });
    let mut mget = redis::cmd("MGET");
    for i in 0..KEYS {
        mget.arg(format!("w{t}:k{i}"));
    }
    let vals: Vec<Option<u64>> = mget.query(c).unwrap();
    for (i, v) in vals.iter().enumerate() {
        let i = i as u64;
        if i < n {
            assert_eq!(
                *v,
                Some(g),
                "writer {t} key {i}: part of transaction {g} is missing (seed {seed})"
            );
        } else {
            assert!(
                v.is_none_or(|v| v < g),
                "writer {t} key {i}: {v:?} is from a transaction after the surviving {g} (seed {seed})"
            );
        }
    }
    let fields: std::collections::HashMap<String, u64> = redis::cmd("HGETALL")
        .arg(format!("w{t}:h"))
        .query(c)
        .unwrap();
    for i in 0..n / 10 {
        assert_eq!(
            fields.get(&format!("f{i}")),
            Some(&g),
            "writer {t} field {i} (seed {seed})"
        );
    }
    assert!(
        fields.values().all(|&v| v <= g),
        "writer {t}: a field from a later transaction (seed {seed})"
    );
    (g, n)
}

fn sigkill_rounds(sync: &str, rounds: u64) {
    let seed = common::seed(&format!("multi-sigkill-{sync}"));
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let opts = [
        "--sync",
        sync,
        "--write-buffer-size",
        "256kb",
        "--log-level",
        "warn",
        "--capacity",
        "none",
    ];
    let progress: Vec<Arc<Mutex<Progress>>> = (0..WRITERS)
        .map(|_| Arc::new(Mutex::new(Progress::default())))
        .collect();
    for round in 0..rounds {
        let mut server = ServerProcess::start(dir.path(), &opts);
        let deadline = Instant::now() + Duration::from_secs(20);
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (url, p) = (server.url(), progress[t as usize].clone());
                let s = seed ^ round.wrapping_mul(0x9e37_79b9);
                std::thread::spawn(move || writer(url, t, s, p, deadline))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500 + rng.below(1500)));
        server.child.kill().expect("SIGKILL");
        let status = server.wait(Duration::from_secs(30));
        assert!(!status.success(), "killed server must not exit cleanly");
        for w in writers {
            w.join().unwrap();
        }
        let server = ServerProcess::start(dir.path(), &opts);
        let mut c = server.conn();
        let mut total = 0;
        for t in 0..WRITERS {
            let (g, n) = check_writer(&mut c, t, seed);
            let mut p = progress[t as usize].lock().unwrap();
            total += p.transactions;
            if sync == "always" {
                let in_flight = p.in_flight.map(|f| f.0);
                assert!(
                    g == p.acked.0 || Some(g) == in_flight,
                    "round {round} writer {t}: survivor {g} is neither the acknowledged {} nor the in-flight {in_flight:?} (seed {seed})",
                    p.acked.0
                );
            } else {
                assert!(g <= p.in_flight.map_or(p.acked.0, |f| f.0.max(p.acked.0)));
            }
            // The server is the truth from here on.
            p.acked = (g, n);
            p.in_flight = None;
        }
        assert!(total > 0, "no transaction acknowledged in round {round}");
        eprintln!("{sync} round {round}: {total} transactions acknowledged so far");
        drop(c);
        drop(server);
    }
}

#[test]
fn sigkill_keeps_each_transaction_whole_under_sync_always() {
    sigkill_rounds("always", 2);
}

#[test]
fn sigkill_keeps_each_transaction_whole_under_sync_everysec() {
    sigkill_rounds("everysec", 2);
}

/// FUNCTION LOAD, DELETE and RESTORE are durable when acknowledged (`--sync always`): a
/// SIGKILL right after each leaves a restarted server with exactly the libraries it had
/// answered for, their functions callable, and a library that failed to load absent.
#[test]
fn sigkill_keeps_acknowledged_function_libraries() {
    let dir = tempfile::tempdir().unwrap();
    let opts = [
        "--sync",
        "always",
        "--log-level",
        "warn",
        "--capacity",
        "none",
    ];
    let lib = |name: &str, f: &str, body: &str| {
        format!(
            "#!lua name={name}\nredis.register_function('{f}', function(keys, args) {body} end)"
        )
    };
    let cmd = |c: &mut redis::Connection, args: &[&str]| -> redis::RedisResult<redis::Value> {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query(c)
    };
    let restart = |server: &mut ServerProcess| {
        server.child.kill().expect("SIGKILL");
        server.wait(Duration::from_secs(30));
        ServerProcess::start(dir.path(), &opts)
    };
    let mut server = ServerProcess::start(dir.path(), &opts);
    let mut c = server.conn();
    let set = lib(
        "setlib",
        "setk",
        "return redis.call('SET', keys[1], args[1])",
    );
    let get = lib("getlib", "getk", "return redis.call('GET', keys[1])");
    cmd(&mut c, &["FUNCTION", "LOAD", &set]).unwrap();
    cmd(&mut c, &["FUNCTION", "LOAD", &get]).unwrap();
    // Refused: a function name another library has. Must leave nothing behind.
    let clash = lib("clash", "getk", "return 1");
    assert!(cmd(&mut c, &["FUNCTION", "LOAD", &clash]).is_err());
    let dump: Vec<u8> = redis::cmd("FUNCTION").arg("DUMP").query(&mut c).unwrap();

    server = restart(&mut server);
    let mut c = server.conn();
    let v: String = redis::cmd("FCALL")
        .arg("setk")
        .arg(1)
        .arg("k")
        .arg("v")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "OK");
    let v: String = redis::cmd("FCALL")
        .arg("getk")
        .arg(1)
        .arg("k")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "v");
    let listed: redis::Value = cmd(&mut c, &["FUNCTION", "LIST"]).unwrap();
    let text = format!("{listed:?}");
    assert!(
        text.contains("setlib") && text.contains("getlib") && !text.contains("clash"),
        "{text}"
    );

    cmd(&mut c, &["FUNCTION", "DELETE", "setlib"]).unwrap();
    server = restart(&mut server);
    let mut c = server.conn();
    let e = cmd(&mut c, &["FCALL", "setk", "1", "k", "w"]).unwrap_err();
    assert!(e.to_string().contains("Function not found"), "{e}");

    let restored: String = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(&dump)
        .arg("FLUSH")
        .query(&mut c)
        .unwrap();
    assert_eq!(restored, "OK");
    server = restart(&mut server);
    let mut c = server.conn();
    let v: String = redis::cmd("FCALL")
        .arg("setk")
        .arg(1)
        .arg("k")
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "OK");
    // getk has no `no-writes` flag: FCALL_RO refuses it, as redis does.
    let e = cmd(&mut c, &["FCALL_RO", "getk", "1", "k"]).unwrap_err();
    assert!(e.to_string().contains("write flag"), "{e}");
    cmd(&mut c, &["FUNCTION", "FLUSH"]).unwrap();
    server = restart(&mut server);
    let mut c = server.conn();
    let listed: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(&mut c).unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    drop(server);
}
