//! Real-client tests over TCP on loopback with the `redis` crate (RESP2 and RESP3): every
//! supported command, Redis's error wording, pipelining, authentication, restart persistence.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{run, set_numbered, test_config, TestServer};
use redis::Value;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn ok() -> Result<Value, String> {
    Ok(Value::Okay)
}

fn int(i: i64) -> Result<Value, String> {
    Ok(Value::Int(i))
}

fn b(s: &str) -> Result<Value, String> {
    Ok(bulk(s))
}

fn err(s: &str) -> Result<Value, String> {
    Err(s.to_string())
}

#[test]
fn strings_and_errors_match_redis() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();

    assert_eq!(run(c, &["PING"]), Ok(Value::SimpleString("PONG".into())));
    assert_eq!(run(c, &["PING", "hi"]), b("hi"));
    assert_eq!(run(c, &["ECHO", "x y"]), b("x y"));
    assert_eq!(run(c, &["SET", "a", "1"]), ok());
    assert_eq!(run(c, &["GET", "a"]), b("1"));
    assert_eq!(run(c, &["get", "a"]), b("1"), "names are case-insensitive");
    assert_eq!(run(c, &["GET", "nope"]), Ok(Value::Nil));
    assert_eq!(run(c, &["INCR", "a"]), int(2));
    assert_eq!(run(c, &["INCRBY", "a", "10"]), int(12));
    assert_eq!(run(c, &["DECR", "a"]), int(11));
    assert_eq!(run(c, &["DECRBY", "a", "20"]), int(-9));
    assert_eq!(
        run(c, &["INCRBY", "a", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(c, &["DECRBY", "a", "-9223372036854775808"]),
        err("ERR decrement would overflow")
    );
    assert_eq!(run(c, &["SET", "big", "9223372036854775807"]), ok());
    assert_eq!(
        run(c, &["INCR", "big"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(run(c, &["SET", "s", "abc"]), ok());
    assert_eq!(
        run(c, &["INCR", "s"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(c, &["SET", "n", "10.50"]), ok());
    assert_eq!(run(c, &["INCRBYFLOAT", "n", "0.1"]), b("10.6"));
    assert_eq!(run(c, &["INCRBYFLOAT", "n", "-5"]), b("5.6"));
    assert_eq!(run(c, &["SET", "e", "5.0e3"]), ok());
    assert_eq!(run(c, &["INCRBYFLOAT", "e", "2.0e2"]), b("5200"));
    assert_eq!(
        run(c, &["INCRBYFLOAT", "s", "1"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        run(c, &["INCRBYFLOAT", "e", "x"]),
        err("ERR value is not a valid float")
    );
    // long double arithmetic, as redis-server: 2e308 is finite there; 2e4932 is not.
    assert_eq!(run(c, &["SET", "f", "1e308"]), ok());
    let Ok(Value::BulkString(sum)) = run(c, &["INCRBYFLOAT", "f", "1e308"]) else {
        panic!("INCRBYFLOAT beyond f64 range")
    };
    assert!(sum.starts_with(b"199999999999999999993371759311691291"));
    assert_eq!(sum.len(), 309);
    assert_eq!(run(c, &["SET", "f", "1e4932"]), ok());
    assert_eq!(
        run(c, &["INCRBYFLOAT", "f", "1e4932"]),
        err("ERR increment would produce NaN or Infinity")
    );

    // SET options.
    assert_eq!(run(c, &["SET", "k", "v", "NX"]), ok());
    assert_eq!(run(c, &["SET", "k", "w", "NX"]), Ok(Value::Nil));
    assert_eq!(run(c, &["SET", "k", "w", "XX", "GET"]), b("v"));
    assert_eq!(run(c, &["SET", "k2", "w", "XX"]), Ok(Value::Nil));
    assert_eq!(run(c, &["SET", "k", "x", "nx", "get"]), b("w"));
    assert_eq!(
        run(c, &["SET", "k", "v", "NX", "XX"]),
        err("ERR syntax error")
    );
    assert_eq!(run(c, &["SET", "k", "v", "EX"]), err("ERR syntax error"));
    assert_eq!(
        run(c, &["SET", "k", "v", "EX", "10", "PX", "10"]),
        err("ERR syntax error")
    );
    assert_eq!(
        run(c, &["SET", "k", "v", "EX", "10", "KEEPTTL"]),
        err("ERR syntax error")
    );
    assert_eq!(
        run(c, &["SET", "k", "v", "EX", "0"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(
        run(c, &["SET", "k", "v", "EX", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(c, &["SET", "k", "v", "PX", "9223372036854775807"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(run(c, &["SET", "k", "v", "EX", "100"]), ok());
    assert_eq!(run(c, &["TTL", "k"]), int(100));
    assert_eq!(run(c, &["SET", "k", "v2", "KEEPTTL"]), ok());
    assert_eq!(run(c, &["TTL", "k"]), int(100));
    assert_eq!(run(c, &["SET", "k", "v3"]), ok());
    assert_eq!(run(c, &["TTL", "k"]), int(-1), "plain SET clears the TTL");
    assert_eq!(run(c, &["SET", "k", "v", "PX", "100000"]), ok());
    let Ok(Value::Int(pttl)) = run(c, &["PTTL", "k"]) else {
        panic!()
    };
    assert!((99_000..=100_000).contains(&pttl));
    assert_eq!(run(c, &["SET", "k", "v", "EXAT", "1"]), ok());
    assert_eq!(run(c, &["GET", "k"]), Ok(Value::Nil), "EXAT in the past");
    let later = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 50_000)
        .to_string();
    assert_eq!(run(c, &["SET", "k", "v", "PXAT", &later]), ok());
    assert!(matches!(run(c, &["TTL", "k"]), Ok(Value::Int(49 | 50))));

    // SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX.
    assert_eq!(run(c, &["SETNX", "nx", "1"]), int(1));
    assert_eq!(run(c, &["SETNX", "nx", "2"]), int(0));
    assert_eq!(run(c, &["SETEX", "ex", "100", "v"]), ok());
    assert_eq!(run(c, &["TTL", "ex"]), int(100));
    assert_eq!(
        run(c, &["SETEX", "ex", "0", "v"]),
        err("ERR invalid expire time in 'setex' command")
    );
    assert_eq!(run(c, &["PSETEX", "pex", "100000", "v"]), ok());
    assert_eq!(run(c, &["TTL", "pex"]), int(100));
    assert_eq!(run(c, &["GETSET", "ex", "new"]), b("v"));
    assert_eq!(run(c, &["TTL", "ex"]), int(-1), "GETSET clears the TTL");
    assert_eq!(run(c, &["GETSET", "fresh", "x"]), Ok(Value::Nil));
    assert_eq!(run(c, &["GETDEL", "fresh"]), b("x"));
    assert_eq!(run(c, &["GETDEL", "fresh"]), Ok(Value::Nil));
    assert_eq!(run(c, &["GETEX", "nx", "EX", "100"]), b("1"));
    assert_eq!(run(c, &["TTL", "nx"]), int(100));
    assert_eq!(run(c, &["GETEX", "nx", "PERSIST"]), b("1"));
    assert_eq!(run(c, &["TTL", "nx"]), int(-1));
    assert_eq!(run(c, &["GETEX", "nx"]), b("1"));
    assert_eq!(run(c, &["GETEX", "nope"]), Ok(Value::Nil));
    assert_eq!(
        run(c, &["GETEX", "nx", "PERSIST", "EX", "10"]),
        err("ERR syntax error")
    );
    assert_eq!(run(c, &["GETEX", "nx", "FOO"]), err("ERR syntax error"));

    // MGET, MSET, MSETNX.
    assert_eq!(run(c, &["MSET", "m1", "a", "m2", "b"]), ok());
    assert_eq!(
        run(c, &["MGET", "m1", "nope", "m2"]),
        Ok(Value::Array(vec![bulk("a"), Value::Nil, bulk("b")]))
    );
    assert_eq!(
        run(c, &["MSET", "m1", "a", "m2"]),
        err("ERR wrong number of arguments for 'mset' command")
    );
    assert_eq!(run(c, &["MSETNX", "m1", "x", "m3", "y"]), int(0));
    assert_eq!(
        run(c, &["EXISTS", "m3"]),
        int(0),
        "MSETNX is all or nothing"
    );
    assert_eq!(run(c, &["MSETNX", "m3", "x", "m4", "y"]), int(1));
    assert_eq!(
        run(c, &["MSETNX", "m1"]),
        err("ERR wrong number of arguments for 'msetnx' command")
    );

    // APPEND, STRLEN, GETRANGE, SETRANGE.
    assert_eq!(run(c, &["APPEND", "ap", "Hello"]), int(5));
    assert_eq!(run(c, &["APPEND", "ap", " World"]), int(11));
    assert_eq!(run(c, &["STRLEN", "ap"]), int(11));
    assert_eq!(run(c, &["STRLEN", "nope"]), int(0));
    assert_eq!(run(c, &["GETRANGE", "ap", "0", "4"]), b("Hello"));
    assert_eq!(run(c, &["GETRANGE", "ap", "-5", "-1"]), b("World"));
    assert_eq!(run(c, &["GETRANGE", "ap", "-1", "-5"]), b(""));
    assert_eq!(run(c, &["GETRANGE", "ap", "0", "100"]), b("Hello World"));
    assert_eq!(run(c, &["GETRANGE", "nope", "0", "1"]), b(""));
    assert_eq!(
        run(c, &["GETRANGE", "ap", "x", "1"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(c, &["SETRANGE", "ap", "6", "Redis"]), int(11));
    assert_eq!(run(c, &["GET", "ap"]), b("Hello Redis"));
    assert_eq!(run(c, &["SETRANGE", "sr", "3", "x"]), int(4));
    assert_eq!(
        run(c, &["GET", "sr"]),
        Ok(Value::BulkString(b"\0\0\0x".to_vec()))
    );
    assert_eq!(run(c, &["SETRANGE", "sr2", "3", ""]), int(0));
    assert_eq!(run(c, &["EXISTS", "sr2"]), int(0));
    assert_eq!(
        run(c, &["SETRANGE", "ap", "-1", "x"]),
        err("ERR offset is out of range")
    );
    assert_eq!(
        run(c, &["SETRANGE", "ap", "1000000000", "x"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );

    // Arity, unknown commands.
    assert_eq!(
        run(c, &["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(c, &["GET", "a", "b"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(c, &["FOO", "bar", "baz"]),
        err("ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' ")
    );
    assert_eq!(run(c, &["SELECT", "0"]), ok());
    assert_eq!(
        run(c, &["SELECT", "1"]),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        run(c, &["SELECT", "x"]),
        err("ERR value is not an integer or out of range")
    );
    drop(s);
}

#[test]
fn keys_and_expiry_commands() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    for i in 0..50 {
        run(c, &["SET", &format!("user:{i}"), "x"]).unwrap();
    }
    run(c, &["SET", "other", "y"]).unwrap();
    assert_eq!(run(c, &["DBSIZE"]), int(51));
    assert_eq!(
        run(c, &["TYPE", "other"]),
        Ok(Value::SimpleString("string".into()))
    );
    assert_eq!(
        run(c, &["TYPE", "nope"]),
        Ok(Value::SimpleString("none".into()))
    );
    assert_eq!(run(c, &["EXISTS", "other", "other", "nope"]), int(2));
    assert_eq!(run(c, &["DEL", "other", "other", "nope"]), int(1));
    assert_eq!(run(c, &["UNLINK", "user:0", "user:1"]), int(2));
    assert_eq!(run(c, &["DBSIZE"]), int(48));

    // KEYS and a full SCAN return every key exactly once.
    let Ok(Value::Array(keys)) = run(c, &["KEYS", "user:*"]) else {
        panic!()
    };
    assert_eq!(keys.len(), 48);
    let Ok(Value::Array(keys)) = run(c, &["KEYS", "user:1?"]) else {
        panic!()
    };
    assert_eq!(keys.len(), 10);
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    for round in 0.. {
        assert!(round < 1000, "SCAN did not terminate");
        let Ok(Value::Array(r)) = run(c, &["SCAN", &cursor, "COUNT", "7", "MATCH", "user:*"])
        else {
            panic!()
        };
        let Value::BulkString(next) = &r[0] else {
            panic!()
        };
        let Value::Array(ks) = &r[1] else { panic!() };
        for k in ks {
            let Value::BulkString(k) = k else { panic!() };
            assert!(seen.insert(k.clone()), "duplicate in SCAN");
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 48);
    let Ok(Value::Array(r)) = run(c, &["SCAN", "0", "COUNT", "1000", "TYPE", "hash"]) else {
        panic!()
    };
    assert_eq!(r[1], Value::Array(vec![]));
    assert_eq!(run(c, &["SCAN", "abc"]), err("ERR invalid cursor"));
    assert_eq!(
        run(c, &["SCAN", "0", "COUNT", "0"]),
        err("ERR syntax error")
    );
    assert_eq!(run(c, &["SCAN", "0", "MATCH"]), err("ERR syntax error"));

    // RENAME keeps the TTL.
    run(c, &["SET", "src", "v", "EX", "100"]).unwrap();
    assert_eq!(run(c, &["RENAME", "src", "dst"]), ok());
    assert_eq!(run(c, &["GET", "dst"]), b("v"));
    assert_eq!(run(c, &["TTL", "dst"]), int(100));
    assert_eq!(run(c, &["EXISTS", "src"]), int(0));
    assert_eq!(run(c, &["RENAME", "src", "dst"]), err("ERR no such key"));
    assert_eq!(run(c, &["RENAME", "dst", "dst"]), ok());

    // EXPIRE family with NX/XX/GT/LT.
    run(c, &["SET", "t", "v"]).unwrap();
    assert_eq!(run(c, &["TTL", "t"]), int(-1));
    assert_eq!(run(c, &["TTL", "nope"]), int(-2));
    assert_eq!(run(c, &["PTTL", "nope"]), int(-2));
    assert_eq!(run(c, &["EXPIRE", "t", "100", "XX"]), int(0));
    assert_eq!(run(c, &["EXPIRE", "t", "100", "GT"]), int(0));
    assert_eq!(run(c, &["EXPIRE", "t", "100", "NX"]), int(1));
    assert_eq!(run(c, &["EXPIRE", "t", "50", "NX"]), int(0));
    assert_eq!(run(c, &["EXPIRE", "t", "50", "GT"]), int(0));
    assert_eq!(run(c, &["EXPIRE", "t", "200", "GT"]), int(1));
    assert_eq!(run(c, &["EXPIRE", "t", "300", "LT"]), int(0));
    assert_eq!(run(c, &["EXPIRE", "t", "150", "LT"]), int(1));
    assert_eq!(run(c, &["TTL", "t"]), int(150));
    assert_eq!(run(c, &["PEXPIRE", "t", "120000"]), int(1));
    assert_eq!(run(c, &["TTL", "t"]), int(120));
    let at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1000)
        .to_string();
    assert_eq!(run(c, &["EXPIREAT", "t", &at]), int(1));
    assert!(matches!(run(c, &["TTL", "t"]), Ok(Value::Int(999 | 1000))));
    assert_eq!(run(c, &["PERSIST", "t"]), int(1));
    assert_eq!(run(c, &["PERSIST", "t"]), int(0));
    assert_eq!(run(c, &["EXPIRE", "nope", "10"]), int(0));
    assert_eq!(
        run(c, &["EXPIRE", "t", "10", "NX", "XX"]),
        err("ERR NX and XX, GT or LT options at the same time are not compatible")
    );
    assert_eq!(
        run(c, &["EXPIRE", "t", "10", "GT", "LT"]),
        err("ERR GT and LT options at the same time are not compatible")
    );
    assert_eq!(
        run(c, &["EXPIRE", "t", "10", "FOO"]),
        err("ERR Unsupported option FOO")
    );
    assert_eq!(
        run(c, &["EXPIRE", "t", "9223372036854775807"]),
        err("ERR invalid expire time in 'expire' command")
    );
    assert_eq!(run(c, &["PEXPIREAT", "t", "1"]), int(1), "past: deleted");
    assert_eq!(run(c, &["EXISTS", "t"]), int(0));
    run(c, &["SET", "t", "v"]).unwrap();
    assert_eq!(run(c, &["EXPIRE", "t", "-1"]), int(1));
    assert_eq!(run(c, &["GET", "t"]), Ok(Value::Nil));

    // Expired keys disappear from reads, DBSIZE and scans.
    run(c, &["FLUSHDB"]).unwrap();
    run(c, &["SET", "short", "v", "PX", "30"]).unwrap();
    run(c, &["SET", "long", "v"]).unwrap();
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(run(c, &["GET", "short"]), Ok(Value::Nil));
    assert_eq!(run(c, &["EXISTS", "short"]), int(0));
    assert_eq!(run(c, &["TTL", "short"]), int(-2));
    assert_eq!(run(c, &["DBSIZE"]), int(1));
    assert_eq!(run(c, &["KEYS", "*"]), Ok(Value::Array(vec![bulk("long")])));
    assert_eq!(run(c, &["FLUSHALL", "ASYNC"]), ok());
    assert_eq!(run(c, &["DBSIZE"]), int(0));
    assert_eq!(run(c, &["FLUSHDB", "FOO"]), err("ERR syntax error"));
}

#[test]
fn pipelines_see_their_own_writes_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    let mut p = redis::pipe();
    p.cmd("SET").arg("p").arg("1");
    p.cmd("INCR").arg("p");
    p.cmd("APPEND").arg("p").arg("0");
    p.cmd("GET").arg("p");
    p.cmd("DEL").arg("p");
    p.cmd("EXISTS").arg("p");
    p.cmd("MSET").arg("x").arg("1").arg("y").arg("2");
    p.cmd("RENAME").arg("x").arg("z");
    p.cmd("MGET").arg("x").arg("y").arg("z");
    p.cmd("DBSIZE");
    p.cmd("INCR").arg("y");
    p.cmd("KEYS").arg("*");
    let r: Vec<Value> = p.query(c).unwrap();
    assert_eq!(
        r,
        vec![
            Value::Okay,
            Value::Int(2),
            Value::Int(2),
            bulk("20"),
            Value::Int(1),
            Value::Int(0),
            Value::Okay,
            Value::Okay,
            Value::Array(vec![Value::Nil, bulk("2"), bulk("1")]),
            Value::Int(2),
            Value::Int(3),
            Value::Array(vec![bulk("y"), bulk("z")])
                .clone()
                .pipe_sorted(&r[11]),
        ]
    );
    // A long pipeline (more than one batch) keeps order.
    let mut p = redis::pipe();
    for i in 0..5000 {
        p.cmd("INCR").arg("ctr");
        if i % 1000 == 0 {
            p.cmd("PING");
        }
    }
    let r: Vec<Value> = p.query(c).unwrap();
    let ints: Vec<i64> = r
        .iter()
        .filter_map(|v| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        })
        .collect();
    assert_eq!(ints, (1..=5000).collect::<Vec<_>>());
}

trait SortedLike {
    fn pipe_sorted(self, actual: &Value) -> Value;
}

impl SortedLike for Value {
    /// KEYS order is unspecified: return `actual` if it holds the same elements as `self`.
    fn pipe_sorted(self, actual: &Value) -> Value {
        match (&self, actual) {
            (Value::Array(a), Value::Array(b)) => {
                let mut a2 = a.clone();
                let mut b2 = b.clone();
                let key = |v: &Value| format!("{v:?}");
                a2.sort_by_key(key);
                b2.sort_by_key(key);
                if a2 == b2 {
                    actual.clone()
                } else {
                    self
                }
            }
            _ => self,
        }
    }
}

#[test]
fn resp3_hello_and_typed_replies() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    // The redis crate sends HELLO 3 when asked for RESP3.
    let c = &mut s.conn3();
    assert_eq!(run(c, &["GET", "nope"]), Ok(Value::Nil));
    assert_eq!(run(c, &["SET", "a", "1"]), ok());
    let Ok(Value::Map(m)) = run(c, &["HELLO"]) else {
        panic!("HELLO is a map in RESP3")
    };
    assert!(m.contains(&(bulk("proto"), Value::Int(3))));
    assert!(m.contains(&(bulk("server"), bulk("redis"))));
    let Ok(Value::Map(m)) = run(c, &["CONFIG", "GET", "maxclients"]) else {
        panic!("CONFIG GET is a map in RESP3")
    };
    assert_eq!(m, vec![(bulk("maxclients"), bulk("10000"))]);
    let Ok(Value::VerbatimString { text, .. }) = run(c, &["INFO", "server"]) else {
        panic!("INFO is a verbatim string in RESP3")
    };
    assert!(text.contains("redis_version:"));
    let Ok(Value::Array(infos)) = run(c, &["COMMAND", "INFO", "get"]) else {
        panic!()
    };
    let Value::Array(get) = &infos[0] else {
        panic!()
    };
    assert!(matches!(&get[2], Value::Set(_)), "flags are a set in RESP3");
    // Back to RESP2 on the same connection.
    let Ok(Value::Array(flat)) = run(c, &["HELLO", "2"]) else {
        panic!("HELLO 2 replies in RESP2")
    };
    assert_eq!(flat.len(), 14);
    assert_eq!(
        run(c, &["HELLO", "4"]),
        err("NOPROTO unsupported protocol version")
    );
    assert_eq!(
        run(c, &["HELLO", "x"]),
        err("ERR Protocol version is not an integer or out of range")
    );
    assert_eq!(
        run(c, &["HELLO", "3", "FOO"]),
        err("ERR Syntax error in HELLO option 'FOO'")
    );
    // RESP3 nulls on the wire.
    let mut raw = s.raw();
    raw.expect(b"HELLO 3 SETNAME raw\r\n", "");
    let _ = raw.read_at_least(1, Duration::from_millis(300));
    raw.expect(b"GET nope\r\n", "_\r\n");
    raw.expect(b"CLIENT GETNAME\r\n", "$3\r\nraw\r\n");
    raw.expect(b"HELLO 2\r\nGET nope\r\n", "");
    let (got, _) = raw.read_at_least(1000, Duration::from_millis(500));
    assert!(String::from_utf8_lossy(&got).ends_with("$-1\r\n"));
}

#[test]
fn client_and_command_introspection() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    let Ok(Value::Int(id)) = run(c, &["CLIENT", "ID"]) else {
        panic!()
    };
    assert!(id > 0);
    assert_eq!(run(c, &["CLIENT", "GETNAME"]), Ok(Value::Nil));
    assert_eq!(run(c, &["CLIENT", "SETNAME", "worker-1"]), ok());
    assert_eq!(run(c, &["CLIENT", "GETNAME"]), b("worker-1"));
    assert_eq!(
        run(c, &["CLIENT", "SETNAME", "a b"]),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(run(c, &["CLIENT", "SETINFO", "LIB-NAME", "mylib"]), ok());
    assert_eq!(
        run(c, &["CLIENT", "SETINFO", "FOO", "x"]),
        err("ERR Unrecognized option 'FOO'")
    );
    let Ok(Value::BulkString(list)) = run(c, &["CLIENT", "LIST"]) else {
        panic!()
    };
    let list = String::from_utf8(list).unwrap();
    let mine = list
        .lines()
        .find(|l| l.starts_with(&format!("id={id} ")))
        .expect("own line");
    assert!(mine.contains("name=worker-1"), "{mine}");
    assert!(mine.contains("lib-name=mylib"), "{mine}");
    // redis-rs identifies itself with CLIENT SETINFO on connect.
    let _other = s.conn();
    let Ok(Value::BulkString(list)) = run(c, &["CLIENT", "LIST"]) else {
        panic!()
    };
    let list = String::from_utf8(list).unwrap();
    assert!(list.contains("lib-name=redis-rs lib-ver="), "{list}");
    assert_eq!(list.lines().count(), 2);
    assert_eq!(
        run(c, &["CLIENT", "FOO"]),
        err("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
    );
    assert_eq!(
        run(c, &["CLIENT", "SETNAME"]),
        err("ERR wrong number of arguments for 'client|setname' command")
    );
    let Ok(Value::Int(n)) = run(c, &["COMMAND", "COUNT"]) else {
        panic!()
    };
    assert!(n >= 48, "{n}");
    let Ok(Value::Array(all)) = run(c, &["COMMAND"]) else {
        panic!()
    };
    assert_eq!(all.len() as i64, n);
    assert_eq!(
        run(c, &["COMMAND", "INFO", "nosuch"]),
        Ok(Value::Array(vec![Value::Nil]))
    );
    let Ok(Value::Array(docs)) = run(c, &["COMMAND", "DOCS", "set"]) else {
        panic!()
    };
    assert_eq!(docs[0], bulk("set"));
    assert_eq!(
        run(c, &["COMMAND", "FOO"]),
        err("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")
    );
}

#[test]
fn info_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    run(c, &["SET", "a", "1", "EX", "100"]).unwrap();
    run(c, &["SET", "b", "1"]).unwrap();
    run(c, &["GET", "a"]).unwrap();
    run(c, &["GET", "zz"]).unwrap();
    let info: String = redis::cmd("INFO").query(c).unwrap();
    for section in [
        "# Server",
        "# Clients",
        "# Persistence",
        "# Stats",
        "# Keyspace",
        "# Strata",
    ] {
        assert!(info.contains(section), "missing {section}");
    }
    assert!(info.contains("db0:keys=2,expires=1,avg_ttl="), "{info}");
    assert!(info.contains("keyspace_hits:1\r\n"), "{info}");
    assert!(info.contains("keyspace_misses:1\r\n"), "{info}");
    assert!(info.contains("connected_clients:1\r\n"));
    assert!(info.contains("level0:"));
    let keyspace: String = redis::cmd("INFO").arg("keyspace").query(c).unwrap();
    assert!(!keyspace.contains("# Server"));
    let two: String = redis::cmd("INFO")
        .arg("clients")
        .arg("STRATA")
        .query(c)
        .unwrap();
    assert!(two.contains("# Clients") && two.contains("# Strata"));

    // CONFIG GET as redis-benchmark asks, and the documented subset.
    assert_eq!(
        run(c, &["CONFIG", "GET", "save"]),
        Ok(Value::Array(vec![bulk("save"), bulk("")]))
    );
    assert_eq!(
        run(c, &["CONFIG", "GET", "appendonly"]),
        Ok(Value::Array(vec![bulk("appendonly"), bulk("yes")]))
    );
    let Ok(Value::Array(eng)) = run(c, &["CONFIG", "GET", "strata-*"]) else {
        panic!()
    };
    assert!(eng.contains(&bulk("strata-write-buffer-size")));
    assert_eq!(run(c, &["CONFIG", "SET", "maxclients", "77"]), ok());
    assert_eq!(
        run(c, &["CONFIG", "GET", "maxclients"]),
        Ok(Value::Array(vec![bulk("maxclients"), bulk("77")]))
    );
    assert_eq!(
        run(c, &["CONFIG", "SET", "maxclients", "x"]),
        err("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer")
    );
    assert_eq!(
        run(c, &["CONFIG", "GET", "tcp-backlog"]),
        Ok(Value::Array(vec![bulk("tcp-backlog"), bulk("511")]))
    );
    assert_eq!(
        run(c, &["CONFIG", "SET", "tcp-backlog", "1024"]),
        err("ERR CONFIG SET failed (possibly related to argument 'tcp-backlog') - can't set immutable config")
    );
    assert_eq!(
        run(c, &["CONFIG", "SET", "port", "1"]),
        err("ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config")
    );
    assert_eq!(
        run(c, &["CONFIG", "SET", "foo", "bar"]),
        err("ERR Unknown option or number of arguments for CONFIG SET - 'foo'")
    );
    assert_eq!(
        run(c, &["CONFIG", "SET", "a"]),
        err("ERR wrong number of arguments for 'config|set' command")
    );
    assert_eq!(
        run(c, &["CONFIG", "GET"]),
        err("ERR wrong number of arguments for 'config|get' command")
    );
    assert_eq!(run(c, &["CONFIG", "RESETSTAT"]), ok());
    let stats: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    assert!(stats.contains("keyspace_hits:0\r\n"));
}

#[test]
fn authentication() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(dir.path());
    cfg.requirepass = Some("sekret".into());
    let s = TestServer::start(cfg);
    let mut raw = s.raw();
    raw.expect(b"GET a\r\n", "-NOAUTH Authentication required.\r\n");
    raw.expect(
        b"GET\r\n",
        "-ERR wrong number of arguments for 'get' command\r\n",
    );
    raw.expect(
        b"FOO\r\n",
        "-ERR unknown command 'FOO', with args beginning with: \r\n",
    );
    raw.expect(b"HELLO 3\r\n", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n");
    raw.expect(
        b"AUTH wrong\r\n",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    raw.expect(
        b"AUTH bob sekret\r\n",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    raw.expect(b"AUTH sekret\r\n", "+OK\r\n");
    raw.expect(b"SET a 1\r\n", "+OK\r\n");
    // HELLO with AUTH authenticates and switches protocol at once.
    let mut raw2 = s.raw();
    raw2.send(b"HELLO 3 AUTH default sekret\r\nGET nope\r\n")
        .unwrap();
    let (got, _) = raw2.read_at_least(10_000, Duration::from_millis(500));
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("%7\r\n") && got.ends_with("_\r\n"), "{got}");
    // Clients with the password in the URL.
    let url = format!("redis://:sekret@{}/", s.addr);
    let c = &mut common::connect(&url);
    assert_eq!(run(c, &["GET", "a"]), b("1"));
    let url3 = format!("redis://:sekret@{}/?protocol=resp3", s.addr);
    let c3 = &mut common::connect(&url3);
    assert_eq!(run(c3, &["GET", "a"]), b("1"));
    // Without a password configured, AUTH <pass> is an error and AUTH default <any> works.
    let dir2 = tempfile::tempdir().unwrap();
    let s2 = TestServer::start(test_config(dir2.path()));
    let mut raw = s2.raw();
    raw.expect(b"AUTH x\r\n", "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n");
    raw.expect(b"AUTH default x\r\n", "+OK\r\n");
    // CONFIG SET requirepass applies to new connections.
    let c = &mut s2.conn();
    assert_eq!(run(c, &["CONFIG", "SET", "requirepass", "p2"]), ok());
    let mut raw = s2.raw();
    raw.expect(b"GET a\r\n", "-NOAUTH Authentication required.\r\n");
    raw.expect(b"QUIT\r\n", "+OK\r\n");
    assert!(raw.closed_within(Duration::from_secs(5)));
}

#[test]
fn restart_serves_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    {
        let c = &mut s.conn();
        set_numbered(c, "k", "v", 3000);
        run(c, &["SET", "ttl", "v", "EX", "1000"]).unwrap();
        run(c, &["INCRBY", "n", "41"]).unwrap();
    }
    s.stop();
    let s = TestServer::start(test_config(dir.path()));
    let c = &mut s.conn();
    assert_eq!(run(c, &["DBSIZE"]), int(3002));
    assert_eq!(run(c, &["GET", "k2999"]), b("v2999"));
    assert_eq!(run(c, &["INCR", "n"]), int(42));
    // Seconds pass between the SET and this read (a restart on a busy machine took over 2 s).
    assert!(matches!(
        run(c, &["TTL", "ttl"]),
        Ok(Value::Int(960..=1000))
    ));
    // SHUTDOWN closes the connection without a reply, then the server stops cleanly.
    let mut raw = s.raw();
    raw.send(b"SET last 1\r\nSHUTDOWN\r\n").unwrap();
    let (got, closed) = raw.read_at_least(1000, Duration::from_secs(10));
    assert_eq!(String::from_utf8_lossy(&got), "+OK\r\n");
    assert!(closed);
    s.wait_stopped().expect("clean shutdown");
    let s = TestServer::start(test_config(dir.path()));
    assert_eq!(run(&mut s.conn(), &["GET", "last"]), b("1"));
}

#[test]
fn refuses_a_foreign_database() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = strata::Db::open(dir.path(), strata::Options::default()).unwrap();
        db.put(b"not-ours", b"x").unwrap();
        db.close().unwrap();
    }
    let r = std::panic::catch_unwind(|| TestServer::start(test_config(dir.path())));
    assert!(
        r.is_err(),
        "a database not written by the server must be refused"
    );
}
