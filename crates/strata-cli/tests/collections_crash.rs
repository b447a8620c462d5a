//! Collections survive SIGKILL in the middle of writes: `strata serve --sync always` under a
//! load of multi-element collection commands (HSET/HDEL, RPUSH/LPOP, SADD/SREM, ZADD/ZREM with
//! several elements each), killed at a random moment, restarted. Each writer owns its keys and
//! keeps an oracle of every acknowledged command; after the restart each key must equal the
//! oracle after the last acknowledged command, or after the one command that was in flight —
//! never a partial command (a collection write is one engine batch). Also runs the compaction
//! filter (small memtables) during the load. `STRATA_SEED` replays a seed.

mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Rng, ServerProcess};

const WRITERS: u64 = 3;

#[derive(Clone, Default, Debug, PartialEq)]
struct Model {
    hash: BTreeMap<String, String>,
    list: VecDeque<String>,
    set: BTreeSet<String>,
    zset: BTreeMap<String, i64>,
}

impl Model {
    /// The canonical text of one of the four keys.
    fn render(&self, which: usize) -> String {
        match which {
            0 => self
                .hash
                .iter()
                .map(|(f, v)| format!("{f}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            1 => self.list.iter().cloned().collect::<Vec<_>>().join(","),
            2 => self.set.iter().cloned().collect::<Vec<_>>().join(","),
            _ => {
                let mut v: Vec<(i64, &String)> = self.zset.iter().map(|(m, s)| (*s, m)).collect();
                v.sort();
                v.iter()
                    .map(|(s, m)| format!("{m}={s}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }
        }
    }
}

/// Per writer: the oracle after the last acknowledged command, and after the one in flight.
#[derive(Default, Clone)]
struct Progress {
    acked: Model,
    in_flight: Option<Model>,
    commands: u64,
}

fn keys(t: u64) -> [String; 4] {
    [
        format!("w{t}:h"),
        format!("w{t}:l"),
        format!("w{t}:s"),
        format!("w{t}:z"),
    ]
}

fn writer(url: String, t: u64, seed: u64, progress: Arc<Mutex<Progress>>, deadline: Instant) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    let Ok(mut c) = client.get_connection_with_timeout(Duration::from_secs(10)) else {
        return;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    let mut rng = Rng::new(seed ^ t.wrapping_mul(0x5851_f42d));
    let [h, l, s, z] = keys(t);
    while Instant::now() < deadline {
        let mut next = progress.lock().unwrap().acked.clone();
        let n = 1 + rng.below(5);
        let mut cmd;
        match rng.below(8) {
            0 | 1 => {
                cmd = redis::cmd("HSET");
                cmd.arg(&h);
                for _ in 0..n {
                    let (f, v) = (
                        format!("f{}", rng.below(40)),
                        format!("{}", rng.below(1000)),
                    );
                    cmd.arg(&f).arg(&v);
                    next.hash.insert(f, v);
                }
            }
            2 => {
                cmd = redis::cmd("HDEL");
                cmd.arg(&h);
                for _ in 0..n {
                    let f = format!("f{}", rng.below(40));
                    cmd.arg(&f);
                    next.hash.remove(&f);
                }
            }
            3 => {
                cmd = redis::cmd("RPUSH");
                cmd.arg(&l);
                for _ in 0..n {
                    let v = format!("e{}", rng.below(1000));
                    cmd.arg(&v);
                    next.list.push_back(v);
                }
            }
            4 => {
                cmd = redis::cmd("LPOP");
                cmd.arg(&l).arg(n);
                for _ in 0..n {
                    next.list.pop_front();
                }
            }
            5 => {
                let add = rng.below(3) != 0;
                cmd = redis::cmd(if add { "SADD" } else { "SREM" });
                cmd.arg(&s);
                for _ in 0..n {
                    let m = format!("m{}", rng.below(60));
                    cmd.arg(&m);
                    if add {
                        next.set.insert(m);
                    } else {
                        next.set.remove(&m);
                    }
                }
            }
            6 => {
                cmd = redis::cmd("ZADD");
                cmd.arg(&z);
                let mut seen = BTreeMap::new();
                for _ in 0..n {
                    let (m, sc) = (format!("m{}", rng.below(60)), rng.below(100) as i64 - 50);
                    cmd.arg(sc).arg(&m);
                    seen.insert(m, sc);
                }
                next.zset.extend(seen);
            }
            _ => {
                cmd = redis::cmd("ZREM");
                cmd.arg(&z);
                for _ in 0..n {
                    let m = format!("m{}", rng.below(60));
                    cmd.arg(&m);
                    next.zset.remove(&m);
                }
            }
        }
        progress.lock().unwrap().in_flight = Some(next.clone());
        if cmd.query::<redis::Value>(&mut c).is_err() {
            return;
        }
        let mut p = progress.lock().unwrap();
        p.acked = next;
        p.in_flight = None;
        p.commands += 1;
    }
}

/// The canonical text of key `which` of writer `t` on the server.
fn actual(c: &mut redis::Connection, t: u64, which: usize) -> String {
    let k = &keys(t)[which];
    match which {
        0 => {
            let m: BTreeMap<String, String> = redis::cmd("HGETALL").arg(k).query(c).unwrap();
            m.iter()
                .map(|(f, v)| format!("{f}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        }
        1 => {
            let v: Vec<String> = redis::cmd("LRANGE").arg(k).arg(0).arg(-1).query(c).unwrap();
            v.join(",")
        }
        2 => {
            let v: BTreeSet<String> = redis::cmd("SMEMBERS").arg(k).query(c).unwrap();
            v.into_iter().collect::<Vec<_>>().join(",")
        }
        _ => {
            let v: Vec<(String, i64)> = redis::cmd("ZRANGE")
                .arg(k)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(c)
                .unwrap();
            v.iter()
                .map(|(m, s)| format!("{m}={s}"))
                .collect::<Vec<_>>()
                .join(",")
        }
    }
}

#[test]
fn sigkill_mid_collection_writes_loses_nothing_and_splits_nothing() {
    let seed = common::seed("collections-sigkill");
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
        std::thread::sleep(Duration::from_millis(400 + rng.below(1500)));
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
            let mut p = progress[t as usize].lock().unwrap();
            total += p.commands;
            let in_flight = p.in_flight.take();
            let mut landed = false;
            for which in 0..4 {
                let got = actual(&mut c, t, which);
                let acked = p.acked.render(which);
                if got == acked {
                    continue;
                }
                let Some(f) = &in_flight else {
                    panic!("round {round} writer {t} key {which}: {got:?} != acknowledged {acked:?} (seed {seed})");
                };
                assert_eq!(
                    got,
                    f.render(which),
                    "round {round} writer {t} key {which}: neither the acknowledged state {acked:?} nor the in-flight one (seed {seed})"
                );
                landed = true;
            }
            // The server is the truth from here on: an in-flight command that landed counts.
            if landed {
                p.acked = in_flight.unwrap_or_default();
            }
        }
        assert!(
            total > 0,
            "no collection write acknowledged in round {round}"
        );
        eprintln!("round {round}: {total} collection commands acknowledged so far");
        drop(c);
        drop(server);
    }
}
