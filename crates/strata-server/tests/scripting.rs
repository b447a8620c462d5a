//! Lua scripts against a real server with a real client: the environment and conversions a
//! script sees, EVALSHA and SCRIPT, read-only scripts, atomicity (one batch; other clients see
//! all of a script's writes or none) and isolation (transfers as scripts, with declared and
//! undeclared keys, never change the sum a concurrent reader sees), scripts inside MULTI/EXEC.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{run, test_config, Rng, TestServer};
use redis::Value;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn scripts_see_redis_environment_and_replies_convert() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let eval = |c: &mut redis::Connection, script: &str, keys: &[&str], args: &[&str]| {
        let n = keys.len().to_string();
        let mut v = vec!["EVAL", script, &n];
        v.extend_from_slice(keys);
        v.extend_from_slice(args);
        run(c, &v)
    };
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('INCRBY', KEYS[1], ARGV[1])",
            &["n"],
            &["5"]
        ),
        Ok(Value::Int(5))
    );
    assert_eq!(eval(&mut c, "return 3.7", &[], &[]), Ok(Value::Int(3)));
    assert_eq!(
        eval(&mut c, "return {1, 'a', false, 4}", &[], &[]),
        Ok(Value::Array(vec![
            Value::Int(1),
            bulk("a"),
            Value::Nil,
            Value::Int(4)
        ]))
    );
    assert_eq!(
        eval(&mut c, "return {1, nil, 3}", &[], &[]),
        Ok(Value::Array(vec![Value::Int(1)]))
    );
    assert_eq!(
        eval(&mut c, "return redis.call('GET', 'none')", &[], &[]),
        Ok(Value::Nil)
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('SET', KEYS[1], 'v')",
            &["k"],
            &[]
        ),
        Ok(Value::Okay)
    );
    assert_eq!(
        eval(
            &mut c,
            "return type(redis.call('GET', 'missing'))",
            &[],
            &[]
        ),
        Ok(bulk("boolean")),
        "nil bulk is false in Lua"
    );
    assert_eq!(
        eval(&mut c, "return redis.sha1hex('')", &[], &[]),
        Ok(bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"))
    );
    assert_eq!(
        eval(
            &mut c,
            "return cjson.decode(ARGV[1]).a",
            &[],
            &["{\"a\": \"x\"}"]
        ),
        Ok(bulk("x"))
    );
    let e = eval(
        &mut c,
        "return redis.call('LPUSH', KEYS[1], 'x')",
        &["k"],
        &[],
    )
    .unwrap_err();
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    let r = eval(
        &mut c,
        "local r = redis.pcall('LPUSH', KEYS[1], 'x') return r['err']",
        &["k"],
        &[],
    );
    assert!(
        matches!(&r, Ok(Value::BulkString(b)) if b.starts_with(b"WRONGTYPE")),
        "{r:?}"
    );
    for (script, want) in [
        ("x = 1", "create global variable"),
        ("return y", "nonexistent global variable"),
        ("return os.time()", "nonexistent global variable"),
        ("return (", "Error compiling script"),
        ("return redis.call('MULTI')", "not allowed from script"),
        ("return redis.call('NOSUCH')", "Unknown Redis command"),
        ("return redis.error_reply('MY bad')", "MY bad"),
    ] {
        let e = eval(&mut c, script, &[], &[]).unwrap_err();
        assert!(e.contains(want), "{script}: {e}");
    }
    // SCRIPT LOAD / EXISTS / FLUSH and EVALSHA.
    let Ok(Value::BulkString(sha)) = run(&mut c, &["SCRIPT", "LOAD", "return ARGV[1]"]) else {
        panic!()
    };
    let sha = String::from_utf8(sha).unwrap();
    assert_eq!(run(&mut c, &["EVALSHA", &sha, "0", "hi"]), Ok(bulk("hi")));
    assert_eq!(
        run(&mut c, &["EVALSHA", &sha.to_uppercase(), "0", "hi"]),
        Ok(bulk("hi"))
    );
    assert_eq!(
        run(&mut c, &["SCRIPT", "EXISTS", &sha, "ffff"]),
        Ok(Value::Array(vec![Value::Int(1), Value::Int(0)]))
    );
    assert_eq!(run(&mut c, &["SCRIPT", "FLUSH"]), Ok(Value::Okay));
    let e = run(&mut c, &["EVALSHA", &sha, "0"]).unwrap_err();
    assert!(e.starts_with("NOSCRIPT"), "{e}");
    // A flush from another connection also reaches a thread that compiled the script.
    assert_eq!(
        run(&mut c, &["SCRIPT", "LOAD", "return ARGV[1]"]),
        Ok(bulk(&sha))
    );
    assert_eq!(run(&mut c, &["EVALSHA", &sha, "0", "hi"]), Ok(bulk("hi")));
    let mut other = s.conn();
    assert_eq!(run(&mut other, &["SCRIPT", "FLUSH"]), Ok(Value::Okay));
    let e = run(&mut c, &["EVALSHA", &sha, "0", "hi"]).unwrap_err();
    assert!(e.starts_with("NOSCRIPT"), "{e}");
    // Read-only scripts read and refuse writes.
    assert_eq!(
        run(
            &mut c,
            &["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "k"]
        ),
        Ok(bulk("v"))
    );
    let e = run(
        &mut c,
        &["EVAL_RO", "return redis.call('DEL', KEYS[1])", "1", "k"],
    )
    .unwrap_err();
    assert!(e.contains("read-only"), "{e}");
    let e = run(&mut c, &["EVAL", "return 1", "2", "a"]).unwrap_err();
    assert!(e.contains("greater than number of args"), "{e}");
}

/// KEYS and ARGV reach the script whole whether they are set without a protected call (a
/// few small items) or with one (past 1,024 items or 1 MiB), and each script sees only its own.
#[test]
fn keys_and_argv_of_every_size_reach_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    // Counts, the last key and argument, and the total bytes of the arguments.
    let script = "local n = 0 for _, a in ipairs(ARGV) do n = n + #a end \
                  return {#KEYS, #ARGV, KEYS[#KEYS] or '', ARGV[#ARGV] or '', n}";
    for (nkeys, nargs, width) in [
        (0usize, 0usize, 1usize),
        (1, 1, 3),
        (3, 2, 10),
        (500, 524, 1),
        (600, 600, 1),
        (1, 3000, 7),
        (2, 3, 600_000),
    ] {
        let keys: Vec<String> = (0..nkeys).map(|i| format!("k{i}")).collect();
        let args: Vec<String> = (0..nargs)
            .map(|i| {
                let i = i.to_string();
                "0".repeat(width.saturating_sub(i.len())) + &i
            })
            .collect();
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(nkeys).arg(&keys).arg(&args);
        let got: Vec<Value> = cmd.query(&mut c).unwrap();
        let total: usize = args.iter().map(String::len).sum();
        let want = vec![
            Value::Int(nkeys as i64),
            Value::Int(nargs as i64),
            bulk(keys.last().map_or("", String::as_str)),
            bulk(args.last().map_or("", String::as_str)),
            Value::Int(total as i64),
        ];
        assert_eq!(
            got, want,
            "{nkeys} keys, {nargs} arguments of {width} bytes"
        );
    }
}

#[test]
fn a_script_is_one_batch_and_reads_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    // Collection writes then scans within one script, and an undeclared key (the script
    // reruns holding every stripe).
    let script = "
        redis.call('RPUSH', KEYS[1], 'a', 'b')
        redis.call('HSET', KEYS[2], 'f', '1')
        redis.call('SET', 'undeclared', 'u')
        local l = redis.call('LRANGE', KEYS[1], 0, -1)
        local h = redis.call('HGETALL', KEYS[2])
        return {#l, #h, redis.call('GET', 'undeclared'), redis.call('DBSIZE')}";
    assert_eq!(
        run(&mut c, &["EVAL", script, "2", "l", "h"]),
        Ok(Value::Array(vec![
            Value::Int(2),
            Value::Int(2),
            bulk("u"),
            Value::Int(3)
        ]))
    );
    // An error midway keeps what ran before it (redis does not roll a script back).
    let e = run(
        &mut c,
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], '1') redis.call('LPUSH', KEYS[1], 'x') return 1",
            "1",
            "e",
        ],
    )
    .unwrap_err();
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    assert_eq!(run(&mut c, &["GET", "e"]), Ok(bulk("1")));
    // Inside MULTI/EXEC.
    run(&mut c, &["MULTI"]).unwrap();
    run(&mut c, &["SET", "m", "1"]).unwrap();
    run(
        &mut c,
        &["EVAL", "return redis.call('INCR', KEYS[1])", "1", "m"],
    )
    .unwrap();
    assert_eq!(
        run(&mut c, &["EXEC"]),
        Ok(Value::Array(vec![Value::Okay, Value::Int(2)]))
    );
}

const ACCOUNTS: usize = 6;

/// Transfers by script — some declaring both accounts, some declaring none (so they rerun
/// holding every stripe) — while a script sums all accounts: the sum never changes.
#[test]
fn concurrent_script_transfers_never_change_the_sum() {
    let seed = common::seed("script-transfers");
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    for i in 0..ACCOUNTS {
        run(&mut c, &["SET", &format!("acct{i}"), "100"]).unwrap();
    }
    let transfer = "
        local from, to, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
        local have = tonumber(redis.call('GET', from))
        redis.call('SET', from, have - n)
        redis.call('INCRBY', to, n)
        return 1";
    let Ok(Value::BulkString(sha)) = run(&mut c, &["SCRIPT", "LOAD", transfer]) else {
        panic!()
    };
    let sha = String::from_utf8(sha).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for t in 0..4u64 {
        let mut w = s.conn();
        let sha = sha.clone();
        let stop = stop.clone();
        workers.push(std::thread::spawn(move || {
            let mut rng = Rng::new(seed ^ t);
            let mut done = 0;
            while !stop.load(Ordering::Relaxed) && done < 300 {
                let a = format!("acct{}", rng.below(ACCOUNTS as u64));
                let b = format!("acct{}", rng.below(ACCOUNTS as u64));
                let n = (1 + rng.below(9)).to_string();
                let r = if t % 2 == 0 {
                    run(&mut w, &["EVALSHA", &sha, "2", &a, &b, &a, &b, &n])
                } else {
                    run(&mut w, &["EVALSHA", &sha, "0", &a, &b, &n])
                };
                assert_eq!(r, Ok(Value::Int(1)), "seed {seed}");
                done += 1;
            }
        }));
    }
    let sum = "local s = 0 for i = 0, tonumber(ARGV[1]) - 1 do s = s + tonumber(redis.call('GET', 'acct' .. i)) end return s";
    let mut reads = 0;
    while workers.iter().any(|w| !w.is_finished()) {
        let r = run(&mut c, &["EVAL", sum, "0", &ACCOUNTS.to_string()]);
        assert_eq!(r, Ok(Value::Int(100 * ACCOUNTS as i64)), "seed {seed}");
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(reads > 0);
}

/// Functions against a real server: FCALL and FCALL_RO with flags, a `no-writes` function
/// refused a write, FCALL inside MULTI/EXEC, and a script that tries to change the
/// environment leaves the next script (and function) an intact one.
#[test]
fn functions_run_with_their_flags_and_the_sandbox_holds_across_calls() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let lib = "#!lua name=bank\n\
        redis.register_function('move', function(keys, args)\n\
          redis.call('DECRBY', keys[1], args[1])\n\
          return redis.call('INCRBY', keys[2], args[1])\n\
        end)\n\
        redis.register_function{function_name='peek', callback=function(keys)\n\
          return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n\
        redis.register_function{function_name='sneak', callback=function(keys)\n\
          return redis.call('SET', keys[1], 'x') end, flags={'no-writes'}}";
    assert_eq!(run(&mut c, &["FUNCTION", "LOAD", lib]), Ok(bulk("bank")));
    assert_eq!(
        run(&mut c, &["FCALL", "move", "2", "a", "b", "5"]),
        Ok(Value::Int(5))
    );
    assert_eq!(run(&mut c, &["FCALL_RO", "peek", "1", "b"]), Ok(bulk("5")));
    let e = run(&mut c, &["FCALL", "sneak", "1", "a"]).unwrap_err();
    assert!(e.contains("Write commands are not allowed"), "{e}");
    let e = run(&mut c, &["FCALL_RO", "move", "2", "a", "b", "1"]).unwrap_err();
    assert!(e.contains("write flag"), "{e}");
    run(&mut c, &["MULTI"]).unwrap();
    run(&mut c, &["FCALL", "move", "2", "a", "b", "1"]).unwrap();
    run(&mut c, &["GET", "a"]).unwrap();
    assert_eq!(
        run(&mut c, &["EXEC"]),
        Ok(Value::Array(vec![Value::Int(6), bulk("-6")]))
    );
    for attack in [
        "string.rep = function() return 'pwned' end",
        "rawset(_G, 'redis', {})",
        "getmetatable('').__index = {}",
        "redis.call = function() return 'pwned' end",
    ] {
        assert!(run(&mut c, &["EVAL", attack, "0"]).is_err(), "{attack}");
    }
    assert_eq!(
        run(&mut c, &["EVAL", "return string.rep('a', 2)", "0"]),
        Ok(bulk("aa"))
    );
    assert_eq!(run(&mut c, &["FCALL_RO", "peek", "1", "b"]), Ok(bulk("6")));
    assert!(run(&mut c, &["FUNCTION", "LOAD", "#!lua name=bank\nreturn 1"]).is_err());
    // In a transaction whose script reruns it holding every lock, the LOAD is staged again
    // on the rerun (not refused as "already exists"), and takes effect once EXEC committed.
    let lib2 = "#!lua name=two\nredis.register_function('two', function() return 2 end)";
    run(&mut c, &["MULTI"]).unwrap();
    run(
        &mut c,
        &["EVAL", "return redis.call('GET', 'undeclared')", "0"],
    )
    .unwrap();
    run(&mut c, &["FUNCTION", "LOAD", lib2]).unwrap();
    assert_eq!(
        run(&mut c, &["EXEC"]),
        Ok(Value::Array(vec![Value::Nil, bulk("two")]))
    );
    assert_eq!(run(&mut c, &["FCALL", "two", "0"]), Ok(Value::Int(2)));
    // Pipelined: a FUNCTION LOAD is a segment of its own, so the FCALL after it sees it.
    let lib3 = "#!lua name=three\nredis.register_function('three', function() return 3 end)";
    let got: Vec<Value> = redis::pipe()
        .cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib3)
        .cmd("FCALL")
        .arg("three")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(got, vec![bulk("three"), Value::Int(3)]);
    assert_eq!(run(&mut c, &["FCALL_RO", "peek", "1", "b"]), Ok(bulk("6")));
    // A function never sees the KEYS and ARGV of the script that ran before it on its
    // interpreter (pipelined: the same thread runs both).
    let lib4 = "#!lua name=four\n\
        redis.register_function('globals', function()\n\
          local ok, k = pcall(function() return KEYS end)\n\
          local ok2, a = pcall(function() return ARGV end)\n\
          return {tostring(ok and k ~= nil), tostring(ok2 and a ~= nil)}\n\
        end)";
    run(&mut c, &["FUNCTION", "LOAD", lib4]).unwrap();
    let got: Vec<Value> = redis::pipe()
        .cmd("EVAL")
        .arg("return #KEYS + #ARGV")
        .arg(2)
        .arg("k1")
        .arg("k2")
        .arg("a1")
        .cmd("FCALL")
        .arg("globals")
        .arg(0)
        .cmd("EVAL")
        .arg("return {#KEYS, #ARGV}")
        .arg(1)
        .arg("k3")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        got,
        vec![
            Value::Int(3),
            Value::Array(vec![bulk("false"), bulk("false")]),
            Value::Array(vec![Value::Int(1), Value::Int(0)])
        ]
    );
    s.stop();
}

/// `lua-time-limit`: a script past it makes other clients get BUSY, FUNCTION STATS names
/// it, SCRIPT KILL stops it (it wrote nothing), its client gets the kill error and the server
/// serves again — also scripts that catch errors with `pcall`/`xpcall` in a loop, and ones
/// that loop inside coroutines.
#[test]
fn a_script_past_the_time_limit_is_busy_until_killed() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    run(&mut c, &["CONFIG", "SET", "lua-time-limit", "50"]).unwrap();
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "busy-reply-threshold"]),
        Ok(Value::Array(vec![bulk("busy-reply-threshold"), bulk("50")]))
    );
    assert!(run(&mut c, &["SCRIPT", "KILL"])
        .unwrap_err()
        .contains("NOTBUSY"));
    for script in [
        "local n = 0 while true do n = n + 1 end",
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "coroutine.wrap(function() while true do end end)()",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
    ] {
        let url = s.url();
        let looping = std::thread::spawn(move || {
            let mut c = common::connect(&url);
            run(&mut c, &["EVAL", script, "0"])
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match run(&mut c, &["GET", "k"]) {
                Err(e) if e.contains("BUSY") => break,
                _ if std::time::Instant::now() > deadline => panic!("never BUSY: {script}"),
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        let stats = format!("{:?}", run(&mut c, &["FUNCTION", "STATS"]).unwrap());
        assert!(stats.contains("duration_ms"), "{stats}");
        assert_eq!(
            run(&mut c, &["SCRIPT", "KILL"]),
            Ok(Value::Okay),
            "{script}"
        );
        let e = looping.join().unwrap().unwrap_err();
        assert!(e.contains("killed"), "{script}: {e}");
        assert_eq!(run(&mut c, &["GET", "k"]), Ok(Value::Nil));
    }
    s.stop();
}

/// INFO commandstats counts EXEC and EVAL and the commands they ran, once each (a script
/// whose undeclared key makes it rerun holding every lock counts once), failed calls and
/// rejected ones; CONFIG RESETSTAT clears them.
#[test]
fn commandstats_count_transactions_scripts_and_what_they_ran() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    run(&mut c, &["SET", "a", "x"]).unwrap();
    run(&mut c, &["MULTI"]).unwrap();
    run(&mut c, &["SET", "b", "1"]).unwrap();
    run(&mut c, &["INCR", "a"]).unwrap();
    // The client reports EXEC's array with INCR's error in it as an error.
    assert!(run(&mut c, &["EXEC"])
        .unwrap_err()
        .contains("not an integer"));
    // Undeclared key `b`: the script reruns holding every stripe, and counts once.
    run(&mut c, &["EVAL", "return redis.call('GET', 'b')", "0"]).unwrap();
    assert!(run(&mut c, &["GET"]).is_err());
    let info = match run(&mut c, &["INFO", "commandstats"]).unwrap() {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let stat = |name: &str| -> String {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:")))
            .unwrap_or_else(|| panic!("no cmdstat_{name} in {info}"))
            .to_string()
    };
    let field = |name: &str, f: &str| -> u64 {
        stat(name)
            .split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
            .unwrap()
            .parse::<f64>()
            .unwrap() as u64
    };
    assert!(info.starts_with("# Commandstats\r\n"), "{info}");
    assert_eq!(field("set", "calls"), 2, "{info}");
    assert_eq!(field("exec", "calls"), 1, "{info}");
    assert_eq!(field("incr", "calls"), 1, "{info}");
    assert_eq!(field("incr", "failed_calls"), 1, "{info}");
    assert_eq!(field("eval", "calls"), 1, "{info}");
    assert_eq!(field("get", "calls"), 1, "{info}");
    assert_eq!(field("get", "rejected_calls"), 1, "{info}");
    run(&mut c, &["CONFIG", "RESETSTAT"]).unwrap();
    let info = match run(&mut c, &["INFO", "commandstats"]).unwrap() {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(!info.contains("cmdstat_set"), "{info}");
    s.stop();
}

/// `redis.setresp(3)`: `redis.call` gives maps, sets, doubles and nulls as redis 7 does in
/// RESP3 (`{map=}`, `{set=}`, `{double=}`, `nil`), and a script may return those tables,
/// which reach a RESP2 client as RESP2 shows them.
#[test]
fn setresp_3_converts_resp3_replies_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    run(&mut c, &["HSET", "h", "f", "v"]).unwrap();
    run(&mut c, &["ZADD", "z", "1.5", "m"]).unwrap();
    let eval = |c: &mut redis::Connection, script: &str| run(c, &["EVAL", script, "0"]);
    // Undeclared keys: each script reruns holding every stripe (fine for a test).
    assert_eq!(
        eval(
            &mut c,
            "redis.setresp(3) return redis.call('HGETALL', 'h').map.f"
        ),
        Ok(bulk("v"))
    );
    assert_eq!(
        eval(
            &mut c,
            "redis.setresp(3) return redis.call('GET', 'none') == nil"
        ),
        Ok(Value::Int(1))
    );
    assert_eq!(
        eval(
            &mut c,
            "redis.setresp(3) return redis.call('ZSCORE', 'z', 'm').double * 2"
        ),
        Ok(Value::Int(3))
    );
    // Without setresp(3) (each script starts in RESP2): a flat array and `false`.
    assert_eq!(
        eval(&mut c, "return redis.call('HGETALL', 'h')"),
        Ok(Value::Array(vec![bulk("f"), bulk("v")]))
    );
    assert_eq!(
        eval(&mut c, "return redis.call('GET', 'none') == false"),
        Ok(Value::Int(1))
    );
    assert_eq!(
        eval(&mut c, "return {map={a='b'}}"),
        Ok(Value::Array(vec![bulk("a"), bulk("b")]))
    );
    assert_eq!(eval(&mut c, "return {double=2.5}"), Ok(bulk("2.5")));
    assert!(eval(&mut c, "redis.setresp(4)").is_err());
    // Booleans: null/1 without setresp(3); a RESP3 boolean with it (0/1 to a RESP2 client).
    assert_eq!(eval(&mut c, "return false"), Ok(Value::Nil));
    assert_eq!(
        eval(&mut c, "redis.setresp(3) return false"),
        Ok(Value::Int(0))
    );
    let mut c3 = s.conn3();
    assert_eq!(
        eval(&mut c3, "redis.setresp(3) return true"),
        Ok(Value::Boolean(true))
    );
    assert_eq!(eval(&mut c3, "return true"), Ok(Value::Int(1)));
    s.stop();
}

/// A script that does not compile is refused by SCRIPT LOAD and EVAL and not cached; scripts
/// cannot run CONFIG, CLIENT, SCRIPT or FUNCTION (their subcommands are `noscript` in redis).
#[test]
fn uncompilable_scripts_are_not_cached_and_admin_commands_are_refused_in_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut c = s.conn();
    let bad = "return (";
    let e = run(&mut c, &["SCRIPT", "LOAD", bad]).unwrap_err();
    assert!(e.contains("Error compiling script"), "{e}");
    let e = run(&mut c, &["EVAL", bad, "0"]).unwrap_err();
    assert!(e.contains("Error compiling script"), "{e}");
    let sha = "728acb63e2aaef0ee859ece5db586bff5d800d1e"; // SHA1 of "return ("
    assert_eq!(
        run(&mut c, &["SCRIPT", "EXISTS", sha]),
        Ok(Value::Array(vec![Value::Int(0)]))
    );
    for cmd in [
        "CONFIG GET port",
        "CLIENT ID",
        "SCRIPT FLUSH",
        "FUNCTION FLUSH",
    ] {
        let args: Vec<String> = cmd.split(' ').map(|a| format!("'{a}'")).collect();
        let script = format!("return redis.call({})", args.join(", "));
        let e = run(&mut c, &["EVAL", &script, "0"]).unwrap_err();
        assert!(e.contains("not allowed from script"), "{cmd}: {e}");
    }
    s.stop();
}
