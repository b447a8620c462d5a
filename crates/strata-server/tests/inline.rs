//! Inline execution on the event loop and its fallback to the engine pool (see
//! `connection::execute`): replies and writes must be exactly those of running on the pool —
//! a segment that starts inline and finds a cold block is discarded and rerun once, never
//! applied twice.

mod common;

use common::stream::read_ids;
use common::{resp, run, set_numbered, test_config, TestServer};
use redis::Value;

fn info_field(c: &mut redis::Connection, name: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("strata").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("{name} missing from INFO strata"))
        .trim()
        .parse()
        .unwrap()
}

/// A test server whose engine finds the operating system's page cache cold (as after a reboot):
/// a block not in the block cache needs I/O, so an inline read of it must fall back.
fn cold_config(dir: &std::path::Path) -> strata_server::ServerConfig {
    let fs = strata::storage::FaultFs::new(std::sync::Arc::new(strata::storage::LocalFs));
    fs.set_plan(strata::storage::FaultPlan {
        cold_reads: true,
        ..Default::default()
    });
    let mut c = test_config(dir);
    c.storage = strata_server::EngineStorage(Some(std::sync::Arc::new(fs)));
    c
}

/// Runs `f(client number, connection)` on `n` clients at once, each on its own thread and
/// connection; returns their results in client order.
fn each_client<T: Send + 'static>(
    url: &str,
    n: usize,
    f: impl Fn(usize, &mut redis::Connection) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let f = std::sync::Arc::new(f);
    let threads: Vec<_> = (0..n)
        .map(|t| {
            let (url, f) = (url.to_string(), f.clone());
            std::thread::spawn(move || f(t, &mut common::connect(&url)))
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn cold_reads_fall_back_to_the_pool_and_writes_apply_once() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = TestServer::start(test_config(dir.path()));
        let c = &mut s.conn();
        set_numbered(c, "cold:", "v", 2_000);
        drop(s); // flushes the memtable on shutdown: after the restart every key is in a table
    }
    let s = TestServer::start(cold_config(dir.path()));
    let c = &mut s.conn();
    // Nothing is cached after the restart: the first read of each block needs I/O.
    assert_eq!(
        run(c, &["GET", "cold:7"]),
        Ok(Value::BulkString(b"v7".to_vec()))
    );
    assert!(info_field(c, "inline_fallbacks") >= 1);
    // One pipelined batch, one segment: an increment, a read of it, a cold read and another
    // write. Started inline, the segment is discarded at the cold read and rerun on the pool:
    // the counter must be incremented once, and the two reads counted once each as hits.
    let hits = |c: &mut redis::Connection| -> u64 {
        let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("keyspace_hits:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let hits_before = hits(c);
    let mut raw = s.raw();
    let mut req = Vec::new();
    for args in [
        &[&b"INCR"[..], b"counter"][..],
        &[b"GET", b"counter"],
        &[b"GET", b"cold:1500"],
        &[b"APPEND", b"log", b"x"],
    ] {
        req.extend(resp(args));
    }
    raw.expect(&req, ":1\r\n$1\r\n1\r\n$5\r\nv1500\r\n:1\r\n");
    assert_eq!(
        hits(c),
        hits_before + 2,
        "a discarded segment's hits count once"
    );
    assert_eq!(
        run(c, &["GET", "counter"]),
        Ok(Value::BulkString(b"1".to_vec()))
    );
    assert_eq!(
        run(c, &["GET", "log"]),
        Ok(Value::BulkString(b"x".to_vec()))
    );
    // Warm reads and memtable writes run inline.
    let before = info_field(c, "inline_segments");
    for _ in 0..20 {
        run(c, &["INCR", "counter"]).unwrap();
        run(c, &["GET", "cold:7"]).unwrap();
    }
    assert!(info_field(c, "inline_segments") >= before + 40);
    assert_eq!(
        run(c, &["GET", "counter"]),
        Ok(Value::BulkString(b"21".to_vec()))
    );
    // Every key reads back whatever path serves it.
    for i in (0..2_000).step_by(37) {
        assert_eq!(
            run(c, &["GET", &format!("cold:{i}")]),
            Ok(Value::BulkString(format!("v{i}").into_bytes()))
        );
    }
}

/// Many clients writing at once: their inline segments commit in groups (`commit_group`), one
/// engine write for several clients, and every read-modify-write stays atomic — each client's
/// increments of shared counters all count, and each client's own list keeps its order.
#[test]
fn concurrent_clients_commit_in_groups_and_lose_no_increment() {
    const CLIENTS: usize = 12;
    const ROUNDS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    each_client(&s.url(), CLIENTS, |t, c| {
        for i in 0..ROUNDS {
            run(c, &["INCR", &format!("shared:{}", i % 3)]).unwrap();
            run(c, &["SET", &format!("own:{t}:{i}"), &i.to_string()]).unwrap();
            run(c, &["RPUSH", &format!("list:{t}"), &i.to_string()]).unwrap();
        }
    });
    let c = &mut s.conn();
    let total: i64 = (0..3)
        .map(|k| {
            let v: String = redis::cmd("GET")
                .arg(format!("shared:{k}"))
                .query(c)
                .unwrap();
            v.parse::<i64>().unwrap()
        })
        .sum();
    assert_eq!(total, (CLIENTS * ROUNDS) as i64);
    for t in 0..CLIENTS {
        let list: Vec<String> = redis::cmd("LRANGE")
            .arg(format!("list:{t}"))
            .arg(0)
            .arg(-1)
            .query(c)
            .unwrap();
        let want: Vec<String> = (0..ROUNDS).map(|i| i.to_string()).collect();
        assert_eq!(list, want, "list of client {t}");
        for i in (0..ROUNDS).step_by(29) {
            assert_eq!(
                run(c, &["GET", &format!("own:{t}:{i}")]),
                Ok(Value::BulkString(i.to_string().into_bytes()))
            );
        }
    }
    let (writes, batches) = (
        info_field(c, "inline_group_writes"),
        info_field(c, "inline_group_segments"),
    );
    assert!(
        writes > 0 && batches >= writes,
        "{writes} writes, {batches} segments"
    );
    // Twelve clients writing without pause: some ticks carry several clients' segments.
    assert!(
        batches > writes,
        "no group carried more than one segment ({writes} writes)"
    );
}

/// Many clients pipelining writes to the same few hot collections: their segments chain on the
/// hot keys' stripes inside commit groups (`locks`, `commit_group`), so one engine write carries
/// several clients' segments of one key — and each read-modify-write still sees every earlier
/// one: no push, pop, increment or member is lost or applied twice, and each client's pushes
/// keep their order.
#[test]
fn hot_collection_writes_chain_in_groups_and_stay_atomic() {
    const CLIENTS: usize = 12;
    const ROUNDS: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let results: Vec<(Vec<i64>, Vec<String>)> = each_client(&s.url(), CLIENTS, |t, c| {
        let (mut ctrs, mut popped) = (Vec::new(), Vec::new());
        for i in 0..ROUNDS {
            let mut p = redis::pipe();
            p.cmd("LPUSH").arg("hot:list").arg(format!("{t}:{i}"));
            p.cmd("HINCRBY")
                .arg("hot:hash")
                .arg(format!("f{}", t % 3))
                .arg(1);
            p.cmd("ZINCRBY").arg("hot:z").arg(1).arg(format!("m{t}"));
            p.cmd("SADD").arg("hot:set").arg(format!("{t}:{i}"));
            p.cmd("INCR").arg("hot:ctr");
            p.cmd("RPOP").arg("hot:list");
            let (_, _, _, added, ctr, pop): (i64, i64, f64, i64, i64, Option<String>) =
                p.query(c).unwrap();
            assert_eq!(added, 1, "a new member");
            ctrs.push(ctr);
            popped.extend(pop);
        }
        (ctrs, popped)
    });
    let c = &mut s.conn();
    let total = CLIENTS * ROUNDS;
    let mut ctrs: Vec<i64> = results.iter().flat_map(|r| r.0.clone()).collect();
    ctrs.sort_unstable();
    assert_eq!(ctrs, (1..=total as i64).collect::<Vec<_>>(), "INCR values");
    // Every push was popped (each client pops once per push) exactly once, oldest first per
    // client: a client's elements leave the list's tail in push order.
    let popped: Vec<String> = results.iter().flat_map(|r| r.1.clone()).collect();
    let left: Vec<String> = redis::cmd("LRANGE")
        .arg("hot:list")
        .arg(0)
        .arg(-1)
        .query(c)
        .unwrap();
    assert_eq!(popped.len() + left.len(), total);
    let mut all: Vec<String> = popped.iter().chain(&left).cloned().collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), total, "a pushed element lost or duplicated");
    // The list's elements of one client, tail first, are in its push order.
    for t in 0..CLIENTS {
        let seq: Vec<usize> = left
            .iter()
            .rev()
            .filter_map(|e| e.strip_prefix(&format!("{t}:")))
            .map(|i| i.parse().unwrap())
            .collect();
        assert!(seq.windows(2).all(|w| w[0] < w[1]), "client {t}: {seq:?}");
    }
    let hash: std::collections::HashMap<String, i64> =
        redis::cmd("HGETALL").arg("hot:hash").query(c).unwrap();
    assert_eq!(hash.values().sum::<i64>(), total as i64);
    for t in 0..CLIENTS {
        let score: f64 = redis::cmd("ZSCORE")
            .arg("hot:z")
            .arg(format!("m{t}"))
            .query(c)
            .unwrap();
        assert_eq!(score, ROUNDS as f64);
    }
    assert_eq!(run(c, &["SCARD", "hot:set"]), Ok(Value::Int(total as i64)));
    let chained = info_field(c, "inline_chained_segments");
    eprintln!("chained segments: {chained} of {total}");
    // Twelve clients on the same keys without pause: some segments found the hot stripes held
    // by their group and chained on them instead of waiting for its write.
    assert!(chained > 0, "no segment chained");
}

/// A segment of several GETs reads their keys ahead with one engine multi_get
/// (`executor::prefetch_keys`). The answers must be those of running the commands one by one:
/// the segment's own writes shadow what was read ahead, a read-modify-write of a key read
/// ahead sees its current value, and a cold read ahead that started inline is redone on the
/// pool (never half-applied).
#[test]
fn reads_ahead_answer_as_the_commands_would() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = |args: &[&[&[u8]]]| -> Vec<u8> { args.iter().flat_map(|a| resp(a)).collect() };
    let req = pipeline(&[
        &[b"GET", b"n"],
        &[b"GET", b"a"],
        &[b"GET", b"missing"],
        &[b"INCR", b"n"],
        &[b"GET", b"n"],
        &[b"SET", b"a", b"2"],
        &[b"GET", b"a"],
        &[b"MGET", b"n", b"a", b"missing"],
        &[b"DEL", b"a"],
        &[b"GET", b"a"],
    ]);
    let expect = |n: u64| {
        format!(
            "${l}\r\n{n}\r\n$1\r\n1\r\n$-1\r\n:{m}\r\n${l2}\r\n{m}\r\n+OK\r\n$1\r\n2\r\n\
             *3\r\n${l2}\r\n{m}\r\n$1\r\n2\r\n$-1\r\n:1\r\n$-1\r\n",
            l = n.to_string().len(),
            m = n + 1,
            l2 = (n + 1).to_string().len(),
        )
    };
    {
        let s = TestServer::start(test_config(dir.path()));
        let c = &mut s.conn();
        run(c, &["SET", "n", "5"]).unwrap();
        run(c, &["SET", "a", "1"]).unwrap();
        // Warm: everything in the memtable, read ahead inline: the 9 keys the GETs and the
        // MGET name, a key named twice read twice (n ×3, a ×4, missing ×2).
        let ahead = info_field(c, "read_ahead_keys");
        s.raw().expect(&req, &expect(5));
        assert_eq!(info_field(c, "read_ahead_keys"), ahead + 9);
        run(c, &["SET", "a", "1"]).unwrap();
        set_numbered(c, "pad:", "v", 2_000);
        drop(s); // flushed on shutdown: after the restart every key is in a table
    }
    let s = TestServer::start(cold_config(dir.path()));
    let c = &mut s.conn();
    // Cold: nothing cached, so the segment started inline reads nothing ahead, meets the cold
    // block and is rerun on the engine pool, where the read-ahead succeeds.
    let (ahead, fallbacks) = (
        info_field(c, "read_ahead_keys"),
        info_field(c, "inline_fallbacks"),
    );
    s.raw().expect(&req, &expect(6));
    assert_eq!(info_field(c, "read_ahead_keys"), ahead + 9);
    assert_eq!(info_field(c, "inline_fallbacks"), fallbacks + 1);
    assert_eq!(run(c, &["GET", "n"]), Ok(Value::BulkString(b"7".to_vec())));
    assert_eq!(run(c, &["GET", "a"]), Ok(Value::Nil));
    // One MGET alone reads its keys with one multi_get (cold ones: rerun on the pool).
    let fallbacks = info_field(c, "inline_fallbacks");
    let ahead = info_field(c, "read_ahead_keys");
    let keys = [
        "pad:1999", "n", "pad:3", "nope", "pad:1000", "a", "pad:1000",
    ];
    let mut args = vec!["MGET"];
    args.extend(keys);
    let want: Vec<Value> = keys
        .iter()
        .map(|k| match *k {
            "n" => Value::BulkString(b"7".to_vec()),
            "nope" | "a" => Value::Nil,
            k => Value::BulkString(format!("v{}", &k[4..]).into_bytes()),
        })
        .collect();
    assert_eq!(run(c, &args), Ok(Value::Array(want)));
    assert!(info_field(c, "inline_fallbacks") > fallbacks);
    assert_eq!(
        info_field(c, "read_ahead_keys"),
        ahead,
        "a lone MGET reads for itself"
    );
}

/// A segment reads ahead whole GETs and MGETs up to 64 keys; from the first that does not
/// fit on, every command reads for itself, even a GET of a key read ahead (it must not answer
/// from before the later reads). The answers are the commands' own. (The pipeline is kept
/// under the connection's first 1 KiB read, so it runs as one segment.)
#[test]
fn read_ahead_stops_at_whole_commands() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    set_numbered(c, "a", "", 70);
    let bulk = |v: &str| format!("${}\r\n{v}\r\n", v.len());
    // MGETs of 30, 30 and 10 keys (the third does not fit: 70 > 64), then a0 again.
    let mut req = Vec::new();
    let mut want = String::new();
    for range in [0..30, 30..60, 60..70] {
        let keys: Vec<String> = range.clone().map(|i| format!("a{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        req.extend(resp(&args));
        want += &format!("*{}\r\n", keys.len());
        for i in range {
            want += &bulk(&i.to_string());
        }
    }
    req.extend(resp(&[b"GET", b"a0"]));
    want += &bulk("0");
    assert!(req.len() < 1024, "one read: {}", req.len());
    let ahead = info_field(c, "read_ahead_keys");
    s.raw().expect(&req, &want);
    assert_eq!(
        info_field(c, "read_ahead_keys"),
        ahead + 60,
        "the two MGETs before the one that does not fit"
    );
}

/// A consumer's XREADGROUP runs inline when what it reads is in memory, and a cold one reruns
/// on the pool once: every entry is delivered once and the pending list counts it once.
#[test]
fn stream_reads_run_inline_when_warm_and_rerun_once_when_cold() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = TestServer::start(test_config(dir.path()));
        let c = &mut s.conn();
        for i in 1..=300 {
            run(
                c,
                &["XADD", "jobs", &format!("{i}-0"), "n", &"x".repeat(64)],
            )
            .unwrap();
        }
        run(c, &["XGROUP", "CREATE", "jobs", "g", "0"]).unwrap();
        drop(s); // after the restart every entry is in a table, nothing cached
    }
    let s = TestServer::start(cold_config(dir.path()));
    let c = &mut s.conn();
    let group_read = |c: &mut redis::Connection, group: &str, who: &str, count: &str| {
        run(
            c,
            &[
                "XREADGROUP",
                "GROUP",
                group,
                who,
                "COUNT",
                count,
                "STREAMS",
                "jobs",
                ">",
            ],
        )
        .unwrap()
    };
    let fallbacks = info_field(c, "inline_fallbacks");
    let got = read_ids(&group_read(c, "g", "alice", "10"));
    assert_eq!(got, (1..=10).map(|i| format!("{i}-0")).collect::<Vec<_>>());
    assert!(
        info_field(c, "inline_fallbacks") > fallbacks,
        "a cold stream read started inline reran on the pool"
    );
    // Delivered once: ten pending entries, each delivered one time.
    let Value::Array(pending) = run(c, &["XPENDING", "jobs", "g", "-", "+", "100"]).unwrap() else {
        panic!()
    };
    assert_eq!(pending.len(), 10);
    for p in &pending {
        let Value::Array(f) = p else { panic!("{p:?}") };
        assert_eq!(f[3], Value::Int(1), "delivery count of {p:?}");
    }
    // Warm: a queue's consumer reads what producers just added (the memtable). One pair may
    // still fetch an index block; after it, both commands run inline.
    run(c, &["XGROUP", "CREATE", "jobs", "h", "$"]).unwrap();
    let (mut added, mut seen) = (Vec::new(), Vec::new());
    let mut pair = |c: &mut redis::Connection| {
        match run(c, &["XADD", "jobs", "*", "n", "new"]).unwrap() {
            Value::BulkString(id) => added.push(String::from_utf8(id).unwrap()),
            x => panic!("{x:?}"),
        }
        seen.extend(read_ids(&group_read(c, "h", "bob", "1")));
    };
    pair(c);
    let before = info_field(c, "inline_segments");
    for _ in 0..20 {
        pair(c);
    }
    assert!(
        info_field(c, "inline_segments") >= before + 40,
        "warm XADDs and XREADGROUPs run inline"
    );
    assert_eq!(seen, added, "each new entry once, in order");
}

/// An acknowledged entry is never delivered again, whatever runs beside the XACK: a consumer's
/// history read (`XREADGROUP ... 0`) that chains on the commit group of an XACK not yet
/// committed scans the pending list with the group's writes merged in, never without them and
/// re-assigning the entry (which review found: the entry came back and the group's pending
/// count went wrong).
#[test]
fn history_reads_beside_acks_never_resurrect_an_entry() {
    const N: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    for i in 1..=N {
        run(c, &["XADD", "q", &format!("{i}-0"), "f", "v"]).unwrap();
    }
    run(c, &["XGROUP", "CREATE", "q", "g", "0"]).unwrap();
    let n = N.to_string();
    let all = run(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "w",
            "COUNT",
            &n,
            "STREAMS",
            "q",
            ">",
        ],
    )
    .unwrap();
    assert_eq!(read_ids(&all).len(), N);
    let acked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = acked.clone();
    each_client(&s.url(), 2, move |t, c| {
        use std::sync::atomic::Ordering::SeqCst;
        if t == 0 {
            for i in 1..=N {
                assert_eq!(
                    run(c, &["XACK", "q", "g", &format!("{i}-0")]),
                    Ok(Value::Int(1)),
                    "entry {i} acknowledged once"
                );
            }
            done.store(true, SeqCst);
        } else {
            // Re-read the consumer's history until nothing is pending, or the acks are all
            // in (what is still pending then is checked below).
            loop {
                let finished = done.load(SeqCst);
                let v = run(
                    c,
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "w",
                        "COUNT",
                        "5",
                        "STREAMS",
                        "q",
                        "0",
                    ],
                )
                .unwrap();
                if read_ids(&v).is_empty() || finished {
                    return;
                }
            }
        }
    });
    assert!(acked.load(std::sync::atomic::Ordering::SeqCst));
    let Value::Array(summary) = run(c, &["XPENDING", "q", "g"]).unwrap() else {
        panic!()
    };
    assert_eq!(summary[0], Value::Int(0), "pending count: {summary:?}");
    assert_eq!(
        run(c, &["XPENDING", "q", "g", "-", "+", "1000"]),
        Ok(Value::Array(vec![])),
        "no acknowledged entry is pending again"
    );
}
