//! Queue and messaging loads for any Redis-protocol server, the same program against both
//! servers in `bench/queue-compare.sh`. One mode per run; each prints one line.
//!
//! - `--mode publish --subscribers N`: N connections SUBSCRIBE one channel; one publisher
//!   sends PUBLISH in pipelines of `--depth` for `--seconds`; prints the messages delivered
//!   per second (counted by the subscribers, until every published message arrived).
//! - `--mode pingpong`: two clients bounce one element between two lists with BLPOP and
//!   RPUSH, `--rounds` times; prints p50 and p99 of a round trip in microseconds (one BLPOP
//!   wake, one RPUSH, the other BLPOP wake and RPUSH).
//! - `--mode xadd --conns C --depth P`: C connections send XADD s * f v in pipelines of P
//!   for `--seconds`; prints entries added per second.
//! - `--mode xreadgroup --conns C --depth P`: the stream is filled first (`--entries`), then C
//!   consumers of one group each loop XREADGROUP COUNT P and one XACK of what it got (a
//!   consumer at depth 1 reads and acknowledges one entry per round trip pair); prints
//!   entries read and acknowledged per second.
//!
//!   cargo run --release -p strata-server --example queue_load -- --port 6379 --mode xadd

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

fn num(name: &str, default: u64) -> u64 {
    arg(name, &default.to_string()).parse().expect("a number")
}

fn connect(port: u64) -> redis::Connection {
    let c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).expect("url");
    let c = c
        .get_connection_with_timeout(Duration::from_secs(10))
        .expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    c
}

fn percentile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn publish(port: u64, subscribers: u64, depth: u64, seconds: u64) {
    let received = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(AtomicU64::new(0));
    let subs: Vec<_> = (0..subscribers)
        .map(|_| {
            let (received, ready) = (received.clone(), ready.clone());
            std::thread::spawn(move || {
                let mut c = connect(port);
                let mut ps = c.as_pubsub();
                ps.subscribe("bench").expect("subscribe");
                ready.fetch_add(1, Relaxed);
                loop {
                    let m = ps.get_message().expect("a message");
                    let p: Vec<u8> = m.get_payload().expect("payload");
                    if p == b"stop" {
                        return;
                    }
                    received.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    while ready.load(Relaxed) < subscribers {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = connect(port);
    let start = Instant::now();
    let mut sent = 0u64;
    let payload = [b'm'; 32];
    while start.elapsed() < Duration::from_secs(seconds) {
        let mut p = redis::pipe();
        for _ in 0..depth {
            p.cmd("PUBLISH").arg("bench").arg(&payload[..]);
        }
        let _: Vec<i64> = p.query(&mut c).expect("publish");
        sent += depth;
        // Back-pressure: the subscribers (threads of this program) set the pace, so neither
        // server has to buffer, or disconnect, a subscriber that lags.
        while sent * subscribers - received.load(Relaxed) > 50_000 {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    // Every message is counted once it arrived.
    while received.load(Relaxed) < sent * subscribers {
        std::thread::sleep(Duration::from_millis(1));
    }
    let elapsed = start.elapsed().as_secs_f64();
    let _: i64 = redis::cmd("PUBLISH")
        .arg("bench")
        .arg("stop")
        .query(&mut c)
        .expect("stop");
    for s in subs {
        s.join().expect("subscriber");
    }
    println!("{:.0}", received.load(Relaxed) as f64 / elapsed);
}

fn pingpong(port: u64, rounds: u64) {
    let mut c = connect(port);
    let _: () = redis::cmd("DEL")
        .arg("ping")
        .arg("pong")
        .query(&mut c)
        .expect("del");
    let other = std::thread::spawn(move || {
        let mut c = connect(port);
        for _ in 0..rounds {
            let _: (String, String) = redis::cmd("BLPOP")
                .arg("ping")
                .arg(0)
                .query(&mut c)
                .expect("blpop");
            let _: i64 = redis::cmd("RPUSH")
                .arg("pong")
                .arg("x")
                .query(&mut c)
                .expect("rpush");
        }
    });
    let mut lat = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds {
        let t = Instant::now();
        let _: i64 = redis::cmd("RPUSH")
            .arg("ping")
            .arg("x")
            .query(&mut c)
            .expect("rpush");
        let _: (String, String) = redis::cmd("BLPOP")
            .arg("pong")
            .arg(0)
            .query(&mut c)
            .expect("blpop");
        lat.push(t.elapsed().as_micros() as u64);
    }
    other.join().expect("the other client");
    let p50 = percentile(&mut lat, 0.5);
    let p99 = percentile(&mut lat, 0.99);
    println!("{p50} {p99}");
}

fn xadd(port: u64, conns: u64, depth: u64, seconds: u64) {
    let mut c = connect(port);
    let _: () = redis::cmd("DEL")
        .arg("bench-stream")
        .query(&mut c)
        .expect("del");
    let stop = Arc::new(AtomicBool::new(false));
    let added = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            let (stop, added) = (stop.clone(), added.clone());
            std::thread::spawn(move || {
                let mut c = connect(port);
                while !stop.load(Relaxed) {
                    let mut p = redis::pipe();
                    for _ in 0..depth {
                        p.cmd("XADD")
                            .arg("bench-stream")
                            .arg("*")
                            .arg("field")
                            .arg("value-of-sixteen");
                    }
                    let _: Vec<String> = p.query(&mut c).expect("xadd");
                    added.fetch_add(depth, Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Relaxed);
    for t in threads {
        t.join().expect("producer");
    }
    println!(
        "{:.0}",
        added.load(Relaxed) as f64 / start.elapsed().as_secs_f64()
    );
}

fn xreadgroup(port: u64, conns: u64, depth: u64, entries: u64) {
    let mut c = connect(port);
    let _: () = redis::cmd("DEL")
        .arg("bench-queue")
        .query(&mut c)
        .expect("del");
    let mut i = 0;
    while i < entries {
        let mut p = redis::pipe();
        for _ in 0..1000.min(entries - i) {
            p.cmd("XADD")
                .arg("bench-queue")
                .arg("*")
                .arg("field")
                .arg("value-of-sixteen");
            i += 1;
        }
        let _: Vec<String> = p.query(&mut c).expect("fill");
    }
    let _: () = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("bench-queue")
        .arg("workers")
        .arg("0")
        .query(&mut c)
        .expect("group");
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..conns)
        .map(|t| {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut c = connect(port);
                loop {
                    let v: redis::Value = redis::cmd("XREADGROUP")
                        .arg("GROUP")
                        .arg("workers")
                        .arg(format!("w{t}"))
                        .arg("COUNT")
                        .arg(depth)
                        .arg("STREAMS")
                        .arg("bench-queue")
                        .arg(">")
                        .query(&mut c)
                        .expect("xreadgroup");
                    let ids = ids(&v);
                    if ids.is_empty() {
                        return;
                    }
                    let mut ack = redis::cmd("XACK");
                    ack.arg("bench-queue").arg("workers");
                    for id in &ids {
                        ack.arg(id);
                    }
                    let n: u64 = ack.query(&mut c).expect("xack");
                    done.fetch_add(n, Relaxed);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("consumer");
    }
    assert_eq!(
        done.load(Relaxed),
        entries,
        "every entry read and acknowledged once"
    );
    println!("{:.0}", entries as f64 / start.elapsed().as_secs_f64());
}

fn ids(v: &redis::Value) -> Vec<Vec<u8>> {
    use redis::Value;
    let mut out = Vec::new();
    let streams = match v {
        Value::Array(s) => s.clone(),
        Value::Map(m) => m
            .iter()
            .map(|(k, v)| Value::Array(vec![k.clone(), v.clone()]))
            .collect(),
        _ => return out,
    };
    for s in streams {
        let Value::Array(pair) = s else { continue };
        let Some(Value::Array(entries)) = pair.get(1) else {
            continue;
        };
        for e in entries {
            if let Value::Array(e) = e {
                if let Some(Value::BulkString(id)) = e.first() {
                    out.push(id.clone());
                }
            }
        }
    }
    out
}

fn main() {
    let port = num("--port", 6379);
    let seconds = num("--seconds", 10);
    let depth = num("--depth", 1);
    let conns = num("--conns", 50);
    match arg("--mode", "xadd").as_str() {
        "publish" => publish(port, num("--subscribers", 1), depth, seconds),
        "pingpong" => pingpong(port, num("--rounds", 20_000)),
        "xadd" => xadd(port, conns, depth, seconds),
        "xreadgroup" => xreadgroup(port, conns, depth, num("--entries", 200_000)),
        other => panic!("unknown --mode {other}"),
    }
}
