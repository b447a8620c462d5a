//! Keyspace notifications (redis' `notify-keyspace-events`): which events a write command
//! raises, and the Pub/Sub messages that announce them.
//!
//! When the classes a client asked for are enabled, `commands::dispatch` records the
//! database-0 keys each write command writes or deletes (`Ctx::put_raw`, `Ctx::delete`), and
//! [`events`] turns the command, its arguments and those writes into redis' events — `set`,
//! `lpush`, `hdel`, `expire`, `rename_from`/`rename_to`, `del` when a collection empties, ... —
//! plus any a handler noted itself (`Ctx::notify`: the stream events that do not show in the
//! key's record). Each event becomes a message on `__keyspace@0__:<key>` (class `K`) and/or
//! `__keyevent@0__:<event>` (class `E`), staged with the segment's other publishes and
//! delivered only once its write committed, so a subscriber never hears of a write that a
//! crash undid. `expired` events come from the active expiry cycle (`expiry::ActiveExpiry`).
//!
//! Invariants: with no class enabled (the default) nothing is recorded and a command pays one
//! atomic load; [`parse`] and [`format`] read and write redis' flag strings (`CONFIG GET`
//! prints what redis prints). [`events`] is a pure function of its inputs (table-tested).
//! Depends on `pubsub` (the `Publish` it builds); must not depend on the engine or the network
//! layer.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use bytes::Bytes;

use crate::pubsub::{Kind, Publish};

/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted-set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: expired keys.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: evicted keys (strata serve evicts nothing; accepted as redis accepts it).
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: key misses (accepted; strata serve raises none).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events (accepted; strata has no modules).
pub const MODULE: u32 = 1 << 13;
/// `n`: a key was created (not part of `A`, as in redis).
pub const NEW: u32 = 1 << 14;
/// `K`: publish on `__keyspace@0__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@0__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `A`: every class but key misses.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Parses redis' flag string (`"KEA"`, `"Ex"`, `""`); `None` for an unknown letter.
pub fn parse(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            _ => return None,
        };
    }
    Some(f)
}

/// The flag string redis prints for `f` (`CONFIG GET notify-keyspace-events`).
pub fn format(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    // `n` is printed after `A` too (redis 7.0 drops it there, so its CONFIG GET loses it).
    for (bit, c) in [
        (NEW, 'n'),
        (KEYSPACE, 'K'),
        (KEYEVENT, 'E'),
        (KEY_MISS, 'm'),
    ] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// The server's setting, changed by `CONFIG SET notify-keyspace-events`.
#[derive(Default)]
pub struct Notifier {
    flags: AtomicU32,
}

impl Notifier {
    pub fn new(flags: u32) -> Notifier {
        Notifier {
            flags: AtomicU32::new(flags),
        }
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Relaxed)
    }

    pub fn set(&self, flags: u32) {
        self.flags.store(flags, Relaxed);
    }

    /// Whether any event can be published (a class and a channel kind are both on).
    pub fn active(&self) -> bool {
        active(self.flags())
    }
}

/// Whether `flags` can publish anything.
pub fn active(flags: u32) -> bool {
    flags & (KEYSPACE | KEYEVENT) != 0 && flags & !(KEYSPACE | KEYEVENT) != 0
}

/// One event: its class, its name and its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub class: u32,
    pub name: &'static str,
    pub key: Bytes,
}

fn ev(class: u32, name: &'static str, key: &Bytes) -> Event {
    Event {
        class,
        name,
        key: key.clone(),
    }
}

fn has(args: &[Bytes], words: &[&str]) -> bool {
    args.iter()
        .skip(1)
        .any(|a| words.iter().any(|w| a.eq_ignore_ascii_case(w.as_bytes())))
}

/// The class and event name a command raises on each key it writes, for the commands whose
/// event does not depend on more than their name.
fn plain(cmd: &str) -> Option<(u32, &'static str)> {
    Some(match cmd {
        "set" | "setnx" | "getset" | "mset" | "msetnx" => (STRING, "set"),
        "setrange" => (STRING, "setrange"),
        "incr" | "decr" | "incrby" | "decrby" => (STRING, "incrby"),
        "incrbyfloat" => (STRING, "incrbyfloat"),
        "append" => (STRING, "append"),
        "setbit" => (STRING, "setbit"),
        "bitop" => (STRING, "set"),
        "lpush" | "lpushx" => (LIST, "lpush"),
        "rpush" | "rpushx" => (LIST, "rpush"),
        "lpop" | "blpop" => (LIST, "lpop"),
        "rpop" | "brpop" => (LIST, "rpop"),
        "linsert" => (LIST, "linsert"),
        "lset" => (LIST, "lset"),
        "lrem" => (LIST, "lrem"),
        "ltrim" => (LIST, "ltrim"),
        "hset" | "hmset" | "hsetnx" => (HASH, "hset"),
        "hdel" => (HASH, "hdel"),
        "hincrby" => (HASH, "hincrby"),
        "hincrbyfloat" => (HASH, "hincrbyfloat"),
        "sadd" => (SET, "sadd"),
        "srem" => (SET, "srem"),
        "spop" => (SET, "spop"),
        "sinterstore" => (SET, "sinterstore"),
        "sunionstore" => (SET, "sunionstore"),
        "sdiffstore" => (SET, "sdiffstore"),
        "zincrby" => (ZSET, "zincr"),
        "zrem" => (ZSET, "zrem"),
        "zremrangebyscore" => (ZSET, "zremrangebyscore"),
        "zremrangebyrank" => (ZSET, "zremrangebyrank"),
        "zremrangebylex" => (ZSET, "zremrangebylex"),
        "zpopmin" | "bzpopmin" => (ZSET, "zpopmin"),
        "zpopmax" | "bzpopmax" => (ZSET, "zpopmax"),
        "zunionstore" => (ZSET, "zunionstore"),
        "zinterstore" => (ZSET, "zinterstore"),
        "zdiffstore" => (ZSET, "zdiffstore"),
        "zrangestore" => (ZSET, "zrangestore"),
        "xadd" => (STREAM, "xadd"),
        "xdel" => (STREAM, "xdel"),
        "xtrim" => (STREAM, "xtrim"),
        "xsetid" => (STREAM, "xsetid"),
        "persist" => (GENERIC, "persist"),
        _ => return None,
    })
}

/// One database-0 write of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    pub key: Bytes,
    pub deleted: bool,
    /// The key did not exist before (recorded only when `n` is on).
    pub created: bool,
}

/// The events command `cmd` (lower case) with arguments `args` raised, given the database-0
/// keys it wrote, in order. Redis' rules: `new` on a key it created, a command's own event on every key
/// it wrote, then `del` on a key it emptied; DEL, GETDEL and an EXPIRE into the past raise
/// `del` alone; the two-key moves raise their two halves; RENAME raises `rename_from` and
/// `rename_to`; SET with an expiry and SETEX raise `set` and `expire`.
pub fn events(cmd: &str, args: &[Bytes], writes: &[Write]) -> Vec<Event> {
    let created: Vec<&Bytes> = writes
        .iter()
        .filter(|w| w.created && !w.deleted)
        .map(|w| &w.key)
        .collect();
    let out = command_events(cmd, args, writes);
    if created.is_empty() {
        return out;
    }
    // `new` comes when redis adds the key: before the key's first event, or — RENAME and
    // COPY add the destination before anything is announced — first of all.
    let mut with_new = Vec::with_capacity(out.len() + created.len());
    let mut announced: Vec<&Bytes> = Vec::new();
    if matches!(cmd, "rename" | "renamenx" | "copy") {
        for k in &created {
            with_new.push(ev(NEW, "new", k));
        }
        announced.extend(created.iter().copied());
    }
    for e in &out {
        if created.contains(&&e.key) && !announced.contains(&&e.key) {
            with_new.push(ev(NEW, "new", &e.key));
            announced.push(created[created.iter().position(|k| **k == e.key).unwrap_or(0)]);
        }
        with_new.push(e.clone());
    }
    for k in created {
        if !announced.contains(&k) {
            with_new.push(ev(NEW, "new", k));
        }
    }
    with_new
}

/// [`events`] without the `new` events.
fn command_events(cmd: &str, args: &[Bytes], writes: &[Write]) -> Vec<Event> {
    let mut out = Vec::new();
    if writes.is_empty() {
        return out;
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let deleted = |k: &Bytes| writes.iter().any(|w| w.key == *k && w.deleted);
    let side = |w: &Bytes, left: &'static str, right: &'static str| {
        if w.eq_ignore_ascii_case(b"LEFT") {
            left
        } else {
            right
        }
    };
    // Each key once, in the order first written, with whether its last write deleted it.
    let mut keys: Vec<(Bytes, bool)> = Vec::new();
    for w in writes {
        match keys.iter_mut().find(|(x, _)| *x == w.key) {
            Some(e) => e.1 = w.deleted,
            None => keys.push((w.key.clone(), w.deleted)),
        }
    }
    match cmd {
        "del" | "unlink" | "getdel" => {
            for (k, d) in &keys {
                if *d {
                    out.push(ev(GENERIC, "del", k));
                }
            }
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" | "getex" => {
            for (k, d) in &keys {
                out.push(if *d {
                    ev(GENERIC, "del", k)
                } else if cmd == "getex" && has(args, &["PERSIST"]) {
                    ev(GENERIC, "persist", k)
                } else {
                    ev(GENERIC, "expire", k)
                });
            }
        }
        "set" | "setex" | "psetex" => {
            let expiry = cmd != "set" || has(args, &["EX", "PX", "EXAT", "PXAT"]);
            for (k, _) in &keys {
                out.push(ev(STRING, "set", k));
                if expiry {
                    out.push(ev(GENERIC, "expire", k));
                }
            }
        }
        "rename" | "renamenx" => {
            out.push(ev(GENERIC, "rename_from", &arg(1)));
            out.push(ev(GENERIC, "rename_to", &arg(2)));
        }
        "copy" => out.push(ev(GENERIC, "copy_to", &arg(2))),
        "rpoplpush" | "brpoplpush" | "lmove" | "blmove" | "smove" => {
            let (src, dst) = (arg(1), arg(2));
            let (class, from, to) = match cmd {
                "smove" => (SET, "srem", "sadd"),
                "rpoplpush" | "brpoplpush" => (LIST, "rpop", "lpush"),
                _ => (
                    LIST,
                    side(&arg(3), "lpop", "rpop"),
                    side(&arg(4), "lpush", "rpush"),
                ),
            };
            // Redis announces a list move's push before its pop, a set move's removal first.
            let pushed = cmd != "smove" || keys.iter().any(|(k, _)| *k == dst);
            if cmd != "smove" {
                out.push(ev(class, to, &dst));
            }
            out.push(ev(class, from, &src));
            if src != dst && deleted(&src) {
                out.push(ev(GENERIC, "del", &src));
            }
            if cmd == "smove" && pushed {
                out.push(ev(class, to, &dst));
            }
        }
        "lmpop" | "blmpop" | "zmpop" | "bzmpop" => {
            let dir = args
                .iter()
                .find(|a| {
                    ["LEFT", "RIGHT", "MIN", "MAX"]
                        .iter()
                        .any(|w| a.eq_ignore_ascii_case(w.as_bytes()))
                })
                .cloned()
                .unwrap_or_default();
            let (class, name) = match dir.to_ascii_uppercase().as_slice() {
                b"LEFT" => (LIST, "lpop"),
                b"RIGHT" => (LIST, "rpop"),
                b"MIN" => (ZSET, "zpopmin"),
                _ => (ZSET, "zpopmax"),
            };
            for (k, d) in &keys {
                out.push(ev(class, name, k));
                if *d {
                    out.push(ev(GENERIC, "del", k));
                }
            }
        }
        _ => {
            let (class, name) = match cmd {
                "zadd" if has(args, &["INCR"]) => (ZSET, "zincr"),
                "zadd" => (ZSET, "zadd"),
                _ => match plain(cmd) {
                    Some(p) => p,
                    None => return out,
                },
            };
            let stores = name.ends_with("store") || cmd == "bitop";
            for (k, d) in &keys {
                if *d && stores {
                    // A *STORE of an empty result deletes its destination: `del` alone.
                    out.push(ev(GENERIC, "del", k));
                    continue;
                }
                out.push(ev(class, name, k));
                if *d && class != STREAM {
                    out.push(ev(GENERIC, "del", k));
                }
            }
        }
    }
    out
}

/// The messages announcing `events` under `flags`.
pub fn publishes(flags: u32, events: &[Event]) -> Vec<Publish> {
    let mut out = Vec::new();
    for e in events {
        if flags & e.class == 0 {
            continue;
        }
        if flags & KEYSPACE != 0 {
            let mut channel = b"__keyspace@0__:".to_vec();
            channel.extend_from_slice(&e.key);
            out.push(Publish {
                kind: Kind::Channel,
                channel: Bytes::from(channel),
                payload: Bytes::from_static(e.name.as_bytes()),
            });
        }
        if flags & KEYEVENT != 0 {
            out.push(Publish {
                kind: Kind::Channel,
                channel: Bytes::from(format!("__keyevent@0__:{}", e.name)),
                payload: e.key.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn args(s: &str) -> Vec<Bytes> {
        s.split(' ').map(b).collect()
    }

    #[test]
    fn flag_strings_round_trip_as_redis_prints_them() {
        for (input, printed) in [
            ("", ""),
            ("KEA", "AKE"),
            ("Ex", "xE"),
            ("K$lsh", "$lshK"),
            ("Agm", "Am"),
            ("g$lshzxetdKE", "AKE"),
            ("AnKE", "AnKE"),
        ] {
            let f = parse(input).unwrap_or_else(|| panic!("{input}"));
            assert_eq!(format(f), printed, "{input}");
            assert_eq!(parse(printed), Some(f));
        }
        assert_eq!(parse("KEq"), None, "an unknown class");
        assert!(!active(parse("K").unwrap()), "a channel kind and no class");
        assert!(!active(parse("A").unwrap()), "classes and no channel kind");
        assert!(active(parse("Kx").unwrap()));
    }

    /// (command, the keys it wrote with `!` for a deletion, the events expected).
    #[test]
    fn commands_raise_redis_events() {
        let cases: &[(&str, &str, &str)] = &[
            ("SET k v", "k", "set:k"),
            ("SET k v EX 10", "k", "set:k expire:k"),
            ("SETEX k 10 v", "k", "set:k expire:k"),
            ("MSET a 1 b 2", "a b", "set:a set:b"),
            ("INCR n", "n", "incrby:n"),
            ("DEL a b", "a! b!", "del:a del:b"),
            ("GETDEL a", "a!", "del:a"),
            ("EXPIRE k 10", "k", "expire:k"),
            ("EXPIRE k -1", "k!", "del:k"),
            ("GETEX k PERSIST", "k", "persist:k"),
            ("RENAME a b", "a! b", "rename_from:a rename_to:b"),
            ("COPY a b", "b", "copy_to:b"),
            ("LPUSH l x", "l", "lpush:l"),
            ("LPOP l", "l!", "lpop:l del:l"),
            ("LMOVE a b LEFT RIGHT", "a! b", "rpush:b lpop:a del:a"),
            ("RPOPLPUSH a a", "a", "lpush:a rpop:a"),
            ("SMOVE a b m", "a b", "srem:a sadd:b"),
            ("LMPOP 1 l RIGHT", "l", "rpop:l"),
            ("ZMPOP 2 a b MIN COUNT 2", "b!", "zpopmin:b del:b"),
            ("ZADD z INCR 1 m", "z", "zincr:z"),
            ("ZADD z 1 m", "z", "zadd:z"),
            ("HSET h f v", "h", "hset:h"),
            ("HDEL h f", "h!", "hdel:h del:h"),
            ("SINTERSTORE d a b", "d!", "del:d"),
            ("SUNIONSTORE d a b", "d", "sunionstore:d"),
            ("XADD s * f v", "s", "xadd:s"),
            ("LPUSH l x", "+l", "new:l lpush:l"),
            ("RENAME a b", "a! +b", "new:b rename_from:a rename_to:b"),
            ("GET k", "", ""),
            ("FLUSHDB", "", ""),
        ];
        for (cmd, writes, want) in cases {
            let a = args(cmd);
            let w: Vec<Write> = writes
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(|s| {
                    let created = s.starts_with('+');
                    let s = s.trim_start_matches('+');
                    match s.strip_suffix('!') {
                        Some(k) => Write {
                            key: b(k),
                            deleted: true,
                            created,
                        },
                        None => Write {
                            key: b(s),
                            deleted: false,
                            created,
                        },
                    }
                })
                .collect();
            let got: Vec<String> = events(
                &a[0]
                    .to_ascii_lowercase()
                    .iter()
                    .map(|&c| c as char)
                    .collect::<String>(),
                &a,
                &w,
            )
            .into_iter()
            .map(|e| format!("{}:{}", e.name, String::from_utf8_lossy(&e.key)))
            .collect();
            assert_eq!(got.join(" "), *want, "{cmd}");
        }
    }

    #[test]
    fn messages_follow_the_flags() {
        let e = [Event {
            class: LIST,
            name: "lpush",
            key: b("q"),
        }];
        let p = publishes(parse("KEl").unwrap(), &e);
        let got: Vec<(String, String)> = p
            .iter()
            .map(|p| {
                (
                    String::from_utf8_lossy(&p.channel).into_owned(),
                    String::from_utf8_lossy(&p.payload).into_owned(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("__keyspace@0__:q".to_string(), "lpush".to_string()),
                ("__keyevent@0__:lpush".to_string(), "q".to_string())
            ]
        );
        assert!(publishes(parse("KEh").unwrap(), &e).is_empty(), "class off");
        assert_eq!(publishes(parse("El").unwrap(), &e).len(), 1);
    }
}
