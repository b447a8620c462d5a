//! Streams survive SIGKILL under a job-queue load: `strata serve --sync always` while producers
//! XADD and consumers XREADGROUP and XACK, killed at a random moment, restarted. Each client
//! keeps an oracle of what was acknowledged to it. After the restart: every acknowledged XADD
//! is in the stream (plus at most the one in flight per producer); each consumer's pending
//! entries are exactly what it read and did not acknowledge — give or take its one command in
//! flight (an XACK that may have landed, an XREADGROUP whose entries it never saw); and the
//! counters kept beside the pending-entries list (XPENDING's total and per-consumer counts,
//! XINFO GROUPS, XINFO CONSUMERS) agree with the list itself. `STRATA_SEED` replays a seed.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Rng, ServerProcess};
use redis::Value;

const PRODUCERS: u64 = 2;
const CONSUMERS: u64 = 2;
const COUNT: usize = 3;

#[derive(Default)]
struct Producer {
    acked: BTreeSet<String>,
    in_flight: bool,
}

#[derive(Default)]
struct Consumer {
    /// Read and not acknowledged.
    mine: BTreeSet<String>,
    /// An XACK whose reply did not come: these may or may not have left the PEL.
    acking: BTreeSet<String>,
    /// An XREADGROUP whose reply did not come: up to COUNT entries may be pending unseen.
    reading: bool,
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// The entry IDs of an XREADGROUP reply.
fn read_ids(v: &Value) -> Vec<String> {
    let Value::Array(streams) = v else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in streams {
        let Value::Array(pair) = s else { continue };
        let Value::Array(entries) = &pair[1] else {
            continue;
        };
        for e in entries {
            if let Value::Array(e) = e {
                out.push(text(&e[0]));
            }
        }
    }
    out
}

fn connect(url: &str) -> Option<redis::Connection> {
    let c = redis::Client::open(url).ok()?;
    let c = c
        .get_connection_with_timeout(Duration::from_secs(10))
        .ok()?;
    c.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    Some(c)
}

fn producer(url: String, t: u64, p: Arc<Mutex<Producer>>, deadline: Instant) {
    let Some(mut c) = connect(&url) else { return };
    let mut i = 0u64;
    while Instant::now() < deadline {
        i += 1;
        p.lock().unwrap().in_flight = true;
        let r: redis::RedisResult<String> = redis::cmd("XADD")
            .arg("jobs")
            .arg("*")
            .arg("producer")
            .arg(t)
            .arg("n")
            .arg(i)
            .query(&mut c);
        let Ok(id) = r else { return };
        let mut p = p.lock().unwrap();
        p.acked.insert(id);
        p.in_flight = false;
    }
}

fn consumer(url: String, t: u64, seed: u64, me: Arc<Mutex<Consumer>>, deadline: Instant) {
    let Some(mut c) = connect(&url) else { return };
    let mut rng = Rng::new(seed ^ t);
    let name = format!("c{t}");
    while Instant::now() < deadline {
        me.lock().unwrap().reading = true;
        let r: redis::RedisResult<Value> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("workers")
            .arg(&name)
            .arg("COUNT")
            .arg(COUNT)
            .arg("STREAMS")
            .arg("jobs")
            .arg(">")
            .query(&mut c);
        let Ok(v) = r else { return };
        {
            let mut m = me.lock().unwrap();
            m.mine.extend(read_ids(&v));
            m.reading = false;
        }
        if rng.below(3) == 0 {
            continue;
        }
        // Acknowledge some of what this consumer holds.
        let ack: BTreeSet<String> = {
            let m = me.lock().unwrap();
            m.mine
                .iter()
                .filter(|_| rng.below(2) == 0)
                .cloned()
                .collect()
        };
        if ack.is_empty() {
            continue;
        }
        me.lock().unwrap().acking = ack.clone();
        let mut cmd = redis::cmd("XACK");
        cmd.arg("jobs").arg("workers");
        for id in &ack {
            cmd.arg(id);
        }
        let r: redis::RedisResult<i64> = cmd.query(&mut c);
        let Ok(n) = r else { return };
        assert_eq!(n as usize, ack.len(), "XACK of entries this consumer holds");
        let mut m = me.lock().unwrap();
        for id in &ack {
            m.mine.remove(id);
        }
        m.acking.clear();
    }
}

fn pending_of(c: &mut redis::Connection, consumer: &str) -> BTreeSet<String> {
    let v: Value = redis::cmd("XPENDING")
        .arg("jobs")
        .arg("workers")
        .arg("-")
        .arg("+")
        .arg(1_000_000)
        .arg(consumer)
        .query(c)
        .unwrap();
    let Value::Array(rows) = v else {
        panic!("XPENDING: {v:?}")
    };
    rows.iter()
        .map(|r| match r {
            Value::Array(f) => text(&f[0]),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn field(v: &Value, name: &str) -> Value {
    let Value::Array(kv) = v else {
        panic!("not a field list: {v:?}")
    };
    kv.chunks(2)
        .find(|p| text(&p[0]) == name)
        .map(|p| p[1].clone())
        .unwrap_or_else(|| panic!("no {name} in {v:?}"))
}

#[test]
fn sigkill_under_a_stream_job_queue_loses_no_entry_and_no_pending_entry() {
    let seed = common::seed("streams-sigkill");
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let opts = [
        "--sync",
        "always",
        "--write-buffer-size",
        "64kb",
        "--log-level",
        "warn",
        "--capacity",
        "none",
    ];
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| Arc::new(Mutex::new(Producer::default())))
        .collect();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| Arc::new(Mutex::new(Consumer::default())))
        .collect();
    {
        let server = ServerProcess::start(dir.path(), &opts);
        let mut c = server.conn();
        let _: () = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg("jobs")
            .arg("workers")
            .arg("$")
            .arg("MKSTREAM")
            .query(&mut c)
            .unwrap();
    }
    for round in 0..rounds {
        let mut server = ServerProcess::start(dir.path(), &opts);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut threads = Vec::new();
        for t in 0..PRODUCERS {
            let (url, p) = (server.url(), producers[t as usize].clone());
            threads.push(std::thread::spawn(move || producer(url, t, p, deadline)));
        }
        for t in 0..CONSUMERS {
            let (url, m) = (server.url(), consumers[t as usize].clone());
            let s = seed ^ round.wrapping_mul(0x9e37_79b9);
            threads.push(std::thread::spawn(move || consumer(url, t, s, m, deadline)));
        }
        std::thread::sleep(Duration::from_millis(400 + rng.below(1500)));
        server.child.kill().expect("SIGKILL");
        let status = server.wait(Duration::from_secs(30));
        assert!(!status.success(), "killed server must not exit cleanly");
        for t in threads {
            t.join().unwrap();
        }

        let server = ServerProcess::start(dir.path(), &opts);
        let mut c = server.conn();
        // Every acknowledged XADD is there; at most one more per producer.
        let all: Value = redis::cmd("XRANGE")
            .arg("jobs")
            .arg("-")
            .arg("+")
            .query(&mut c)
            .unwrap();
        let Value::Array(entries) = &all else {
            panic!("{all:?}")
        };
        let in_stream: BTreeSet<String> = entries
            .iter()
            .map(|e| match e {
                Value::Array(e) => text(&e[0]),
                other => panic!("{other:?}"),
            })
            .collect();
        let mut acked_total = 0;
        let mut in_flight = 0;
        for p in &producers {
            let mut p = p.lock().unwrap();
            let lost: Vec<_> = p.acked.difference(&in_stream).collect();
            assert!(
                lost.is_empty(),
                "round {round}: acknowledged XADDs lost: {lost:?} (seed {seed})"
            );
            acked_total += p.acked.len();
            in_flight += usize::from(std::mem::take(&mut p.in_flight));
        }
        assert!(
            in_stream.len() <= acked_total + in_flight,
            "round {round}: {} entries, {acked_total} acknowledged, {in_flight} in flight (seed {seed})",
            in_stream.len()
        );
        // Each consumer's pending entries: what it read and did not acknowledge.
        let mut pel_total = 0;
        for t in 0..CONSUMERS {
            let name = format!("c{t}");
            let pel = pending_of(&mut c, &name);
            let mut m = consumers[t as usize].lock().unwrap();
            let missing: BTreeSet<_> = m.mine.difference(&pel).cloned().collect();
            assert!(
                missing.is_subset(&m.acking),
                "round {round} {name}: pending entries lost: {missing:?} (in-flight XACK {:?}, seed {seed})",
                m.acking
            );
            let extra: Vec<_> = pel.difference(&m.mine).collect();
            assert!(
                extra.is_empty() || (m.reading && extra.len() <= COUNT),
                "round {round} {name}: unexpected pending entries {extra:?} (seed {seed})"
            );
            assert!(
                pel.is_subset(&in_stream),
                "round {round}: pending entries not in the stream"
            );
            pel_total += pel.len();
            // The server is the truth from here on.
            m.mine = pel;
            m.acking.clear();
            m.reading = false;
        }
        // The counters kept beside the list agree with it.
        let summary: Value = redis::cmd("XPENDING")
            .arg("jobs")
            .arg("workers")
            .query(&mut c)
            .unwrap();
        let Value::Array(summary) = &summary else {
            panic!()
        };
        assert_eq!(
            summary[0],
            Value::Int(pel_total as i64),
            "round {round}: XPENDING total"
        );
        let groups: Value = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg("jobs")
            .query(&mut c)
            .unwrap();
        let Value::Array(groups) = &groups else {
            panic!()
        };
        assert_eq!(field(&groups[0], "pending"), Value::Int(pel_total as i64));
        let cons: Value = redis::cmd("XINFO")
            .arg("CONSUMERS")
            .arg("jobs")
            .arg("workers")
            .query(&mut c)
            .unwrap();
        let Value::Array(cons) = &cons else { panic!() };
        for info in cons {
            let name = text(&field(info, "name"));
            let listed = pending_of(&mut c, &name).len() as i64;
            assert_eq!(
                field(info, "pending"),
                Value::Int(listed),
                "round {round}: {name}'s count"
            );
        }
        for (i, p) in producers.iter().enumerate() {
            p.lock().unwrap().acked = if i == 0 {
                in_stream.clone()
            } else {
                BTreeSet::new()
            };
        }
        eprintln!(
            "round {round}: {} entries, {pel_total} pending after the restart",
            in_stream.len()
        );
        drop(c);
        drop(server);
    }
}
