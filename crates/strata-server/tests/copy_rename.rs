//! RENAMENX, COPY and TOUCH against a real server over a real Redis client: replies, TTLs carried
//! over, every value type (collections copied under a fresh version, so the source and the
//! copy change independently), REPLACE over a collection, and the error cases redis-server
//! 7.0 gives.

mod common;

use common::{run, test_config, TestServer};
use redis::Value;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn renamenx_moves_only_onto_a_missing_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    run(c, &["SET", "a", "1", "EX", "1000"]).unwrap();
    run(c, &["SET", "b", "2"]).unwrap();
    assert_eq!(run(c, &["RENAMENX", "a", "b"]), Ok(Value::Int(0)));
    assert_eq!(run(c, &["RENAMENX", "a", "a"]), Ok(Value::Int(0)));
    assert_eq!(run(c, &["RENAMENX", "a", "c"]), Ok(Value::Int(1)));
    assert_eq!(run(c, &["EXISTS", "a"]), Ok(Value::Int(0)));
    assert_eq!(run(c, &["GET", "c"]), Ok(bulk("1")));
    let Ok(Value::Int(ttl)) = run(c, &["TTL", "c"]) else {
        panic!("TTL of c")
    };
    assert!((990..=1000).contains(&ttl), "ttl {ttl}");
    assert_eq!(run(c, &["GET", "b"]), Ok(bulk("2")));
    let e = run(c, &["RENAMENX", "missing", "x"]).unwrap_err();
    assert!(e.contains("no such key"), "{e}");
    // A hash moves with its fields.
    run(c, &["HSET", "h", "f1", "v1", "f2", "v2"]).unwrap();
    assert_eq!(run(c, &["RENAMENX", "h", "h2"]), Ok(Value::Int(1)));
    assert_eq!(run(c, &["HGET", "h2", "f2"]), Ok(bulk("v2")));
    assert_eq!(run(c, &["EXISTS", "h"]), Ok(Value::Int(0)));
}

#[test]
fn copy_copies_every_type_and_honours_replace() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    run(c, &["SET", "s", "hello", "PX", "500000"]).unwrap();
    run(c, &["RPUSH", "l", "x", "y", "z"]).unwrap();
    run(c, &["SADD", "set", "m1", "m2"]).unwrap();
    run(c, &["ZADD", "z", "1", "one", "2", "two"]).unwrap();
    run(c, &["HSET", "h", "f", "v"]).unwrap();
    for (src, dst) in [
        ("s", "s2"),
        ("l", "l2"),
        ("set", "set2"),
        ("z", "z2"),
        ("h", "h2"),
    ] {
        assert_eq!(run(c, &["COPY", src, dst]), Ok(Value::Int(1)), "{src}");
        assert_eq!(run(c, &["TYPE", src]), run(c, &["TYPE", dst]));
    }
    assert_eq!(run(c, &["GET", "s2"]), Ok(bulk("hello")));
    let Ok(Value::Int(pttl)) = run(c, &["PTTL", "s2"]) else {
        panic!("PTTL of s2")
    };
    assert!(pttl > 400_000, "pttl {pttl}");
    assert_eq!(
        run(c, &["LRANGE", "l2", "0", "-1"]),
        Ok(Value::Array(vec![bulk("x"), bulk("y"), bulk("z")]))
    );
    assert_eq!(run(c, &["SCARD", "set2"]), Ok(Value::Int(2)));
    assert_eq!(run(c, &["ZSCORE", "z2", "two"]), Ok(bulk("2")));
    // The copy is independent of its source.
    run(c, &["RPUSH", "l", "w"]).unwrap();
    run(c, &["HSET", "h2", "g", "w"]).unwrap();
    assert_eq!(run(c, &["LLEN", "l2"]), Ok(Value::Int(3)));
    assert_eq!(run(c, &["HLEN", "h"]), Ok(Value::Int(1)));
    // An existing destination is kept unless REPLACE; REPLACE over a collection leaves none
    // of its old elements.
    assert_eq!(run(c, &["COPY", "s", "h2"]), Ok(Value::Int(0)));
    assert_eq!(run(c, &["HLEN", "h2"]), Ok(Value::Int(2)));
    assert_eq!(run(c, &["COPY", "set", "h2", "REPLACE"]), Ok(Value::Int(1)));
    assert_eq!(
        run(c, &["TYPE", "h2"]),
        Ok(Value::SimpleString("set".into()))
    );
    assert_eq!(run(c, &["SCARD", "h2"]), Ok(Value::Int(2)));
    assert_eq!(run(c, &["COPY", "missing", "d"]), Ok(Value::Int(0)));
    assert_eq!(run(c, &["COPY", "s", "d", "DB", "0"]), Ok(Value::Int(1)));
    // Errors as redis-server 7.0 words them.
    let e = run(c, &["COPY", "s", "s"]).unwrap_err();
    assert!(
        e.contains("source and destination objects are the same"),
        "{e}"
    );
    let e = run(c, &["COPY", "s", "d9", "DB", "1"]).unwrap_err();
    assert!(e.contains("DB index is out of range"), "{e}");
    let e = run(c, &["COPY", "s", "d9", "DB", "x"]).unwrap_err();
    assert!(e.contains("not an integer"), "{e}");
    let e = run(c, &["COPY", "s", "d9", "NOPE"]).unwrap_err();
    assert!(e.contains("syntax error"), "{e}");
    assert_eq!(run(c, &["EXISTS", "d9"]), Ok(Value::Int(0)));
}

#[test]
fn touch_counts_existing_keys() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    run(c, &["SET", "a", "1"]).unwrap();
    run(c, &["RPUSH", "l", "x"]).unwrap();
    // As redis-server: every existing argument counts, repeats included.
    assert_eq!(
        run(c, &["TOUCH", "a", "l", "missing", "a"]),
        Ok(Value::Int(3))
    );
    assert_eq!(run(c, &["TOUCH", "missing"]), Ok(Value::Int(0)));
}

#[test]
fn randomkey_returns_live_keys_and_nil_when_empty() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    assert_eq!(run(c, &["RANDOMKEY"]), Ok(Value::Nil));
    let names: Vec<String> = (0..50).map(|i| format!("key:{i}")).collect();
    for n in &names {
        run(c, &["SET", n, "v"]).unwrap();
    }
    run(c, &["HSET", "h", "f", "v"]).unwrap();
    // An expired key is never returned.
    run(c, &["SET", "gone", "v", "PX", "1"]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut seen = std::collections::HashSet::new();
    for _ in 0..400 {
        let Ok(Value::BulkString(k)) = run(c, &["RANDOMKEY"]) else {
            panic!("RANDOMKEY on a non-empty database")
        };
        let k = String::from_utf8(k).unwrap();
        assert!(k == "h" || names.contains(&k), "{k}");
        seen.insert(k);
    }
    // Random points over the hashed key space reach most keys.
    assert!(seen.len() > 25, "only {} distinct keys", seen.len());
    assert_eq!(
        run(c, &["RANDOMKEY", "x"]),
        Err("ERR wrong number of arguments for 'randomkey' command".into())
    );
}
