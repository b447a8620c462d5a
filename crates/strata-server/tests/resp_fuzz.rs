//! Mutation fuzzing (on stable Rust) of the RESP request parser, the server's only parser of
//! untrusted bytes. Valid requests are mutated (bit flips, byte overwrites, truncation,
//! insertion, splicing, forged lengths) and fed to the parser whole and in random chunks: it
//! must never panic, must respect its limits, and must parse the same requests and stop with
//! the same error however the input is split. A second target sends mutated inputs to a live
//! server, which must stay up.
//! `STRATA_SEED` replays a seed; `STRATA_FUZZ_ITERS` sets iterations.

mod common;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::{resp, run, test_config, Rng, TestServer};
use redis::Value;
use strata_server::resp::{ParseLimits, Parser, ProtocolError};

fn iters() -> u64 {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

fn seeds() -> Vec<Vec<u8>> {
    let mut v = vec![
        resp(&[b"SET", b"key", b"value"]),
        resp(&[b"GET", b"key"]),
        resp(&[b"MSET", b"a", b"1", b"b", b"2", b"c", b"3"]),
        resp(&[b"PING"]),
        resp(&[b"SET", b"bin", b"\r\n\x00\xff*$"]),
        resp(&[b"ECHO", b""]),
        b"PING\r\n".to_vec(),
        b"SET a \"b c\\x41\\n\" 'd\\'e'\r\n".to_vec(),
        b"  GET   a \n".to_vec(),
        b"*0\r\n*-1\r\n\r\n".to_vec(),
        b"*2\r\n$3\r\nGET\r\n$3\r\nabc\r\nPING\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
    ];
    let mut pipeline = Vec::new();
    for i in 0..20 {
        pipeline.extend(resp(&[b"INCR", format!("k{i}").as_bytes()]));
    }
    v.push(pipeline);
    v
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seeds[rng.below(seeds.len() as u64) as usize].clone();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            v.push(rng.next_u64() as u8);
            continue;
        }
        let i = rng.below(v.len() as u64) as usize;
        match rng.below(9) {
            0 => v[i] ^= 1 << rng.below(8),
            1 => v[i] = rng.next_u64() as u8,
            2 => v.truncate(i),
            3 => v.insert(i, rng.next_u64() as u8),
            4 => {
                let other = &seeds[rng.below(seeds.len() as u64) as usize];
                let j = rng.below(other.len() as u64) as usize;
                v.splice(i..i, other[j..].iter().copied());
            }
            5 => v.insert(i, b"*$\r\n\"' "[rng.below(7) as usize]),
            6 => {
                // Forge a length: a huge, negative or odd count after a '*' or '$'.
                let forged: &[u8] = [
                    &b"99999999999999999999"[..],
                    b"-2",
                    b"1048577",
                    b"4097",
                    b"0",
                    b"",
                ][rng.below(6) as usize];
                if let Some(p) = v[i..].iter().position(|&c| c == b'*' || c == b'$') {
                    let at = i + p + 1;
                    let end = v[at..]
                        .iter()
                        .position(|&c| c == b'\r')
                        .map_or(v.len(), |e| at + e);
                    v.splice(at..end, forged.iter().copied());
                }
            }
            7 => {
                let n = (rng.below(8) as usize).min(v.len() - i);
                v[i..i + n].fill(0xff);
            }
            _ => {
                let dup = v[i..].to_vec();
                v.extend(dup);
            }
        }
    }
    v
}

type Outcome = (Vec<Vec<Bytes>>, Option<ProtocolError>);

/// Parses `input`, fed in chunks given by `cut`, until the parser needs more or fails.
fn parse(input: &[u8], limits: &ParseLimits, mut cut: impl FnMut() -> usize) -> Outcome {
    let mut p = Parser::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut fed = 0;
    // Each round feeds at least one byte, so this ends after at most len + 1 rounds.
    loop {
        loop {
            match p.next(&mut buf, limits) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty());
                    assert!(args.len() <= limits.max_multibulk_len);
                    assert!(args
                        .iter()
                        .all(|a| a.len() <= limits.max_bulk_len.max(64 * 1024)));
                    out.push(args);
                }
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
        if fed == input.len() {
            return (out, None);
        }
        let n = cut().clamp(1, input.len() - fed);
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
    }
}

#[test]
fn parser_survives_mutations_and_is_split_invariant() {
    let seed = common::seed("resp_fuzz");
    let mut rng = Rng::new(seed);
    let seeds = seeds();
    let limits = ParseLimits {
        max_bulk_len: 4096,
        max_multibulk_len: 64,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut errors = 0u64;
    for n in 0..iters() {
        if Instant::now() > deadline {
            eprintln!("time bound reached after {n} iterations");
            break;
        }
        let input = mutate(&mut rng, &seeds);
        let whole = parse(&input, &limits, || usize::MAX);
        let mut r2 = Rng::new(rng.next_u64());
        let split = parse(&input, &limits, || 1 + r2.below(7) as usize);
        let bytewise = parse(&input, &limits, || 1);
        assert_eq!(whole, split, "seed {seed}, iteration {n}, input {input:?}");
        assert_eq!(
            whole, bytewise,
            "seed {seed}, iteration {n}, input {input:?}"
        );
        if whole.1.is_some() {
            errors += 1;
        }
    }
    eprintln!("{errors} inputs ended in a protocol error");
}

#[test]
fn live_server_survives_mutated_input() {
    let seed = common::seed("resp_fuzz_live");
    let mut rng = Rng::new(seed);
    let seeds = seeds();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(dir.path());
    cfg.proto_max_bulk_len = strata_server::ByteSize(4096);
    cfg.max_multibulk_len = 64;
    cfg.client_query_buffer_limit = strata_server::ByteSize(4096 + 64 * 1024);
    let s = TestServer::start(cfg);
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..300 {
        if Instant::now() > deadline {
            break;
        }
        let mut raw = s.raw();
        for _ in 0..1 + rng.below(3) {
            let input = mutate(&mut rng, &seeds);
            if raw.send(&input).is_err() {
                break;
            }
        }
        let _ = raw.read_at_least(usize::MAX, Duration::from_millis(20));
    }
    let c = &mut s.conn();
    assert_eq!(run(c, &["PING"]), Ok(Value::SimpleString("PONG".into())));
    assert_eq!(run(c, &["SET", "still", "here"]), Ok(Value::Okay));
}
