//! A MULTI/EXEC load for any Redis-protocol server: `--conns` connections (one thread each),
//! each sending, one after another, transactions of `MULTI`, `--sets` SETs of random keys and
//! `EXEC` in one write, then reading the whole reply (with `--plain 1`, the same SETs as a
//! plain pipeline, no MULTI/EXEC: what atomicity costs is the difference). Prints one line:
//! `transactions/s commands/s p50_ms p99_ms`. The same program measures both servers in
//! `bench/multi-compare.sh`.
//!
//!   cargo run --release -p strata-server --example multi_exec_load -- \
//!       --port 6379 --conns 50 --sets 10 --seconds 10

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn main() {
    let port = arg("--port", 6379);
    let conns = arg("--conns", 50);
    let sets = arg("--sets", 10);
    let seconds = arg("--seconds", 10);
    let plain = arg("--plain", 0) == 1;
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..conns)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port as u16)).expect("connect");
                s.set_nodelay(true).expect("nodelay");
                s.set_read_timeout(Some(Duration::from_secs(30)))
                    .expect("read timeout");
                // +OK, a +QUEUED per SET, then *n and a +OK per SET.
                let reply_len = if plain {
                    5 * sets as usize
                } else {
                    5 + 9 * sets as usize + format!("*{sets}\r\n").len() + 5 * sets as usize
                };
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1).wrapping_mul(0xff51_afd7_ed55_8ccd);
                let mut req = Vec::new();
                let mut buf = vec![0u8; reply_len];
                let mut lat = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    req.clear();
                    if !plain {
                        encode(&mut req, &[b"MULTI"]);
                    }
                    for _ in 0..sets {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let key = format!("key:{:07}", x % 1_000_000);
                        encode(&mut req, &[b"SET", key.as_bytes(), b"xxxxxxxxxxxxxxxx"]);
                    }
                    if !plain {
                        encode(&mut req, &[b"EXEC"]);
                    }
                    let start = Instant::now();
                    s.write_all(&req).expect("write");
                    let mut got = 0;
                    while got < buf.len() {
                        match s.read(&mut buf[got..]) {
                            Ok(0) | Err(_) => panic!(
                                "the server stopped answering; it sent {:?}",
                                String::from_utf8_lossy(&buf[..got])
                            ),
                            Ok(n) => got += n,
                        }
                    }
                    lat.push(start.elapsed());
                    assert!(
                        buf.starts_with(if plain {
                            b"+OK\r\n+OK"
                        } else {
                            b"+OK\r\n+QUEUED"
                        }),
                        "unexpected reply {:?}",
                        String::from_utf8_lossy(&buf)
                    );
                }
                lat
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut lat: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("client thread"))
        .collect();
    lat.sort();
    let n = lat.len() as f64;
    let pct = |p: f64| lat[((n * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{:.0} {:.0} {:.3} {:.3}",
        n / seconds as f64,
        n * (sets + if plain { 0 } else { 2 }) as f64 / seconds as f64,
        pct(0.5),
        pct(0.99)
    );
}
