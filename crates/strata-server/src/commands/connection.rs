//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, CLIENT (ID, GETNAME, SETNAME,
//! SETINFO, LIST, INFO, HELP).
//!
//! Invariants: these handlers never touch the engine (they may run on async threads); only
//! HELLO, AUTH and QUIT run before authentication; HELLO switches the protocol before its own
//! reply is encoded (its reply is in the new protocol, as in Redis). Only database 0 exists.
//! Depends on `commands` helpers, `session`, `clients`, `limits`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::errors::{self, err, unknown_subcommand, wrong_args};
use super::{is, CmdResult, Ctx};
use crate::clients::ClientHandle;
use crate::resp::{Protocol, Reply};
use crate::session::Close;

/// The Redis version reported to clients (the command set and replies follow 7.0).
pub const REDIS_VERSION: &str = "7.0.15";

pub fn ping(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if ctx.session.resp2_subscribed() {
        // In subscribed mode a RESP2 client gets a push-shaped pong (redis' reply there).
        return match a.len() {
            1 | 2 => Ok(Reply::Array(vec![
                Reply::bulk_str("pong"),
                Reply::Bulk(a.get(1).cloned().unwrap_or_default()),
            ])),
            _ => Err(wrong_args("ping")),
        };
    }
    match a.len() {
        1 => Ok(Reply::simple("PONG")),
        2 => Ok(Reply::Bulk(a[1].clone())),
        _ => Err(wrong_args("ping")),
    }
}

pub fn echo(_ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Bulk(a[1].clone()))
}

pub fn select(_ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match crate::numbers::parse_i64(&a[1]) {
        None => Err(err(errors::NOT_INTEGER)),
        Some(0) => Ok(Reply::Ok),
        Some(_) => Err(err(errors::DB_RANGE)),
    }
}

pub fn quit(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    ctx.session.close = Close::AfterReply;
    Ok(Reply::Ok)
}

/// RESET: leaves MULTI, forgets WATCHed keys, unsubscribes from everything, goes back to
/// RESP2 and no client name, and (with a password configured) back to unauthenticated.
pub fn reset(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    if let Some(p) = ctx.session.pubsub.as_mut() {
        p.clear();
    }
    // Messages that arrived before the unsubscription go before the reply.
    let msgs = super::pubsub::queued_messages(ctx);
    let s = &mut *ctx.session;
    s.multi = None;
    s.watching = None;
    for c in [&s.client.sub, &s.client.psub, &s.client.ssub] {
        c.store(0, Relaxed);
    }
    s.set_protocol(Protocol::Resp2);
    *s.client.name.lock() = None;
    s.authenticated = !ctx.shared.limits.auth_required();
    if msgs.is_empty() {
        return Ok(Reply::simple("RESET"));
    }
    let mut out = msgs;
    out.push(Reply::simple("RESET"));
    Ok(Reply::Many(out))
}

/// Checks `user`/`pass` for the only user, `default`. With no password configured, `default`
/// accepts any password (Redis's `nopass`).
fn check_user(ctx: &Ctx<'_>, user: &[u8], pass: &[u8]) -> bool {
    user == b"default" && ctx.shared.limits.check_password(pass).unwrap_or(true)
}

pub fn auth(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() > 3 {
        return Err(err(errors::SYNTAX));
    }
    let ok = if a.len() == 2 {
        match ctx.shared.limits.check_password(&a[1]) {
            None => return Err(err(errors::NO_PASSWORD)),
            Some(ok) => ok,
        }
    } else {
        check_user(ctx, &a[1], &a[2])
    };
    if ok {
        ctx.session.authenticated = true;
        Ok(Reply::Ok)
    } else {
        Err(err(errors::WRONGPASS))
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

pub fn hello(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut proto = None;
    let mut i = 1;
    if a.len() >= 2 {
        let v = crate::numbers::parse_i64(&a[1]).ok_or_else(|| {
            Reply::error("ERR Protocol version is not an integer or out of range")
        })?;
        proto = Some(match v {
            2 => Protocol::Resp2,
            3 => Protocol::Resp3,
            _ => return Err(Reply::error("NOPROTO unsupported protocol version")),
        });
        i = 2;
    }
    let mut auth: Option<(&Bytes, &Bytes)> = None;
    let mut setname: Option<&Bytes> = None;
    while i < a.len() {
        let more = a.len() - i - 1;
        if is(&a[i], "AUTH") && more >= 2 {
            auth = Some((&a[i + 1], &a[i + 2]));
            i += 3;
        } else if is(&a[i], "SETNAME") && more >= 1 {
            setname = Some(&a[i + 1]);
            i += 2;
        } else {
            return Err(Reply::error(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&a[i])
            )));
        }
    }
    if let Some((user, pass)) = auth {
        if !check_user(ctx, user, pass) {
            return Err(err(errors::WRONGPASS));
        }
        ctx.session.authenticated = true;
    }
    if !ctx.session.authenticated && ctx.shared.limits.auth_required() {
        return Err(Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = setname {
        if !valid_name(name) {
            return Err(err(errors::BAD_CLIENT_NAME));
        }
        set_name(&ctx.session.client, name);
    }
    if let Some(p) = proto {
        ctx.session.set_protocol(p);
    }
    let s = |v: &str| Reply::bulk_str(v);
    Ok(Reply::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(REDIS_VERSION)),
        (s("proto"), Reply::Int(ctx.session.protocol.number())),
        (s("id"), Reply::Int(ctx.session.client.id as i64)),
        (s("mode"), s("standalone")),
        (
            s("role"),
            s(if ctx.shared.store.is_replica() {
                "replica"
            } else {
                "master"
            }),
        ),
        (s("modules"), Reply::Array(vec![])),
    ]))
}

fn set_name(client: &ClientHandle, name: &[u8]) {
    *client.name.lock() = (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned());
}

/// CLIENT KILL: the old form (`ip:port`, answers OK or an error) and the filter form (answers
/// how many clients it killed; SKIPME defaults to yes). A killed connection closes once its
/// current batch is answered, so a client that kills itself still gets its reply.
fn client_kill(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let me = ctx.session.client.id;
    if a.len() == 3 {
        let addr = String::from_utf8_lossy(&a[2]);
        let found = ctx
            .shared
            .clients
            .list()
            .into_iter()
            .find(|c| c.addr.to_string() == addr);
        return match found {
            Some(c) => {
                c.kill();
                Ok(Reply::Ok)
            }
            None => Err(Reply::error("ERR No such client")),
        };
    }
    if !a.len().is_multiple_of(2) {
        return Err(err(errors::SYNTAX));
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut kind: Option<bool> = None; // Some(true): normal; Some(false): pubsub
    let mut none = false;
    let mut skipme = true;
    for pair in a[2..].chunks(2) {
        let (opt, v) = (&pair[0], &pair[1]);
        if is(opt, "ID") {
            match crate::numbers::parse_i64(v) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return Err(Reply::error("ERR client-id should be greater than 0")),
            }
        } else if is(opt, "ADDR") {
            addr = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(opt, "LADDR") {
            laddr = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(opt, "TYPE") {
            if is(v, "normal") {
                kind = Some(true);
            } else if is(v, "pubsub") {
                kind = Some(false);
            } else if is(v, "master") || is(v, "replica") || is(v, "slave") {
                none = true;
            } else {
                return Err(Reply::error(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(v)
                )));
            }
        } else if is(opt, "USER") {
            // `default` is the only user, and every client is authenticated as it.
            if &v[..] != b"default" {
                return Err(Reply::error(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(v)
                )));
            }
        } else if is(opt, "SKIPME") {
            if is(v, "yes") {
                skipme = true;
            } else if is(v, "no") {
                skipme = false;
            } else {
                return Err(err(errors::SYNTAX));
            }
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    let mut killed = 0;
    if !none {
        for c in ctx.shared.clients.list() {
            let hit = id.is_none_or(|i| i == c.id)
                && addr.as_ref().is_none_or(|x| *x == c.addr.to_string())
                && laddr.as_ref().is_none_or(|x| *x == c.laddr.to_string())
                && kind.is_none_or(|n| n != c.is_subscriber())
                && !(skipme && c.id == me);
            if hit {
                c.kill();
                killed += 1;
            }
        }
    }
    Ok(Reply::Int(killed))
}

/// One CLIENT LIST line (without the trailing newline), with Redis 7's fields; fields Strata
/// does not track are reported as Redis reports an idle client.
pub fn client_line(c: &ClientHandle, blocked: bool) -> String {
    let mut s = String::with_capacity(256);
    let opt = |m: &parking_lot::Mutex<Option<String>>| m.lock().clone().unwrap_or_default();
    let _ = write!(
        s,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db=0 sub={} psub={} \
         ssub={} multi=-1 qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 \
         tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        opt(&c.name),
        c.age_secs(),
        c.idle_secs(),
        match (c.is_subscriber(), blocked) {
            (true, _) => "P",
            (false, true) => "b",
            (false, false) => "N",
        },
        c.sub.load(Relaxed),
        c.psub.load(Relaxed),
        c.ssub.load(Relaxed),
        c.qbuf.load(Relaxed),
        super::name_of(c.last_cmd.load(Relaxed)),
        c.resp.load(Relaxed),
        opt(&c.lib_name),
        opt(&c.lib_ver),
    );
    s
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "LIST [TYPE <normal|master|replica|pubsub>] [ID <id> [<id> ...]]",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "    Return information about client connections.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Set client library name or version.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "HELP",
    "    Print this help.",
];

pub fn help_reply(lines: &[&str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::simple(l.to_string())).collect())
}

pub fn client(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = &a[1];
    let arity = |n: usize, name: &str| {
        if a.len() == n {
            Ok(())
        } else {
            Err(wrong_args(name))
        }
    };
    let client = ctx.session.client.clone();
    if is(sub, "ID") {
        arity(2, "client|id")?;
        Ok(Reply::Int(client.id as i64))
    } else if is(sub, "GETNAME") {
        arity(2, "client|getname")?;
        Ok(match client.name.lock().clone() {
            Some(n) => Reply::bulk(n.into_bytes()),
            None => Reply::Null,
        })
    } else if is(sub, "SETNAME") {
        arity(3, "client|setname")?;
        if !valid_name(&a[2]) {
            return Err(err(errors::BAD_CLIENT_NAME));
        }
        set_name(&client, &a[2]);
        Ok(Reply::Ok)
    } else if is(sub, "SETINFO") {
        arity(4, "client|setinfo")?;
        let (attr, v) = (&a[2], &a[3]);
        let slot = if is(attr, "LIB-NAME") {
            &client.lib_name
        } else if is(attr, "LIB-VER") {
            &client.lib_ver
        } else {
            return Err(Reply::error(format!(
                "ERR Unrecognized option '{}'",
                String::from_utf8_lossy(attr)
            )));
        };
        if !valid_name(v) || (is(attr, "LIB-NAME") && v.iter().any(|&c| c == b'(' || c == b')')) {
            return Err(Reply::error(format!(
                "ERR {} cannot contain spaces, newlines or special characters.",
                String::from_utf8_lossy(attr).to_ascii_lowercase()
            )));
        }
        *slot.lock() = (!v.is_empty()).then(|| String::from_utf8_lossy(v).into_owned());
        Ok(Reply::Ok)
    } else if is(sub, "INFO") {
        arity(2, "client|info")?;
        let mut line = client_line(&client, false);
        line.push('\n');
        Ok(Reply::Verbatim("txt", Bytes::from(line)))
    } else if is(sub, "LIST") {
        let mut ids: Option<Vec<u64>> = None;
        // None: every client; Some(true): those not subscribed; Some(false): subscribers.
        let mut normal: Option<bool> = None;
        let mut none = false;
        let mut i = 2;
        while i < a.len() {
            if is(&a[i], "TYPE") && i + 1 < a.len() {
                let t = &a[i + 1];
                if is(t, "normal") {
                    normal = Some(true);
                } else if is(t, "pubsub") {
                    normal = Some(false);
                } else if is(t, "master") || is(t, "replica") || is(t, "slave") {
                    none = true;
                } else {
                    return Err(Reply::error(format!(
                        "ERR Unknown client type '{}'",
                        String::from_utf8_lossy(t)
                    )));
                }
                i += 2;
            } else if is(&a[i], "ID") && i + 1 < a.len() {
                let mut v = Vec::new();
                for x in &a[i + 1..] {
                    match crate::numbers::parse_i64(x) {
                        Some(id) if id > 0 => v.push(id as u64),
                        _ => return Err(Reply::error("ERR Invalid client ID")),
                    }
                }
                ids = Some(v);
                i = a.len();
            } else {
                return Err(err(errors::SYNTAX));
            }
        }
        let mut text = String::new();
        if !none {
            for c in ctx.shared.clients.list() {
                if ids.as_ref().is_none_or(|v| v.contains(&c.id))
                    && normal.is_none_or(|n| n != c.is_subscriber())
                {
                    text.push_str(&client_line(&c, ctx.shared.blocking.is_blocked(c.id)));
                    text.push('\n');
                }
            }
        }
        Ok(Reply::Verbatim("txt", Bytes::from(text)))
    } else if is(sub, "KILL") {
        client_kill(ctx, a)
    } else if is(sub, "UNBLOCK") {
        if a.len() != 3 && a.len() != 4 {
            return Err(wrong_args("client|unblock"));
        }
        let id = match crate::numbers::parse_i64(&a[2]) {
            Some(id) => u64::try_from(id).unwrap_or(0),
            None => return Err(err(errors::NOT_INTEGER)),
        };
        let how = match a.get(3) {
            None => crate::blocking::Unblock::Timeout,
            Some(w) if is(w, "TIMEOUT") => crate::blocking::Unblock::Timeout,
            Some(w) if is(w, "ERROR") => crate::blocking::Unblock::Error,
            Some(_) => {
                return Err(Reply::error(
                    "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
                ))
            }
        };
        Ok(Reply::Int(i64::from(ctx.shared.blocking.unblock(id, how))))
    } else if is(sub, "HELP") {
        arity(2, "client|help")?;
        Ok(help_reply(CLIENT_HELP))
    } else {
        Err(unknown_subcommand(sub, "client"))
    }
}
