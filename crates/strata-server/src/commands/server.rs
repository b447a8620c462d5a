//! Server commands: DBSIZE, FLUSHDB, FLUSHALL, INFO, CONFIG (GET, SET, RESETSTAT, HELP), SHUTDOWN.
//!
//! CONFIG subset: `GET` knows every setting of `ServerConfig` (engine options as `strata-<name>`)
//! plus Redis's `appendonly`, `appendfsync`, `save` and `databases` so tools such as
//! redis-benchmark get sensible answers; `SET` changes `requirepass`, `maxclients`, `timeout`,
//! `proto-max-bulk-len`, `client-query-buffer-limit` and `max-multibulk-len`; every other known
//! name is immutable. Invariants: FLUSHDB/FLUSHALL are barriers that hold every key stripe (see
//! `locks`, `executor`), so no read-modify-write straddles them; SHUTDOWN only triggers the
//! server's shutdown sequence (see `server`) and closes its connection without a reply, as Redis
//! does. Depends on `commands` helpers, `info`, `limits`, `config`, `glob`.

use bytes::Bytes;

use super::connection::help_reply;
use super::errors::{self, err, unknown_subcommand, wrong_args};
use super::{is, CmdResult, Ctx};
use crate::config::ByteSize;
use crate::glob;
use crate::resp::Reply;
use crate::session::Close;

/// TIME: `[seconds, microseconds]` of the server clock, as bulk strings.
pub fn time(_ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Array(vec![
        Reply::bulk(d.as_secs().to_string().into_bytes()),
        Reply::bulk(d.subsec_micros().to_string().into_bytes()),
    ]))
}

pub fn dbsize(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let mut n = 0i64;
    ctx.scan_keys(None, usize::MAX, |_, _| n += 1)?;
    Ok(Reply::Int(n))
}

pub fn flushdb(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() > 2 || (a.len() == 2 && !is(&a[1], "ASYNC") && !is(&a[1], "SYNC")) {
        return Err(err(errors::SYNTAX));
    }
    ctx.delete_all();
    Ok(Reply::Ok)
}

pub fn info(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sections: Vec<String> = a[1..]
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let text = crate::info::render(ctx.shared, &sections, ctx.now)?;
    Ok(Reply::Verbatim("txt", Bytes::from(text)))
}

/// WAIT: strata serve has no replicas, so the count of replicas that acknowledged is 0 at once
/// (redis without replicas would wait out the timeout for a count it can never reach).
pub fn wait(_ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = super::int_arg(&a[1])?;
    let t = super::int_arg(&a[2])?;
    if n < 0 || t < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    Ok(Reply::Int(0))
}

pub fn shutdown(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    for w in &a[1..] {
        if is(w, "ABORT") {
            return Err(Reply::error("ERR No shutdown in progress."));
        }
        if !(is(w, "NOSAVE") || is(w, "SAVE") || is(w, "NOW") || is(w, "FORCE")) {
            return Err(err(errors::SYNTAX));
        }
    }
    tracing::info!(
        "SHUTDOWN requested by client {} ({})",
        ctx.session.client.id,
        ctx.session.client.addr
    );
    ctx.shared.shutdown.trigger();
    ctx.session.close = Close::Now;
    Ok(Reply::Ok)
}

/// Every CONFIG GET parameter with its current value.
fn parameters(ctx: &Ctx<'_>) -> Vec<(String, String)> {
    let c = &ctx.shared.config;
    let l = &ctx.shared.limits;
    let mut v: Vec<(String, String)> = vec![
        ("bind".into(), c.bind.clone()),
        ("port".into(), ctx.shared.local_addr.port().to_string()),
        ("dir".into(), c.dir.display().to_string()),
        ("requirepass".into(), l.requirepass().unwrap_or_default()),
        ("maxclients".into(), l.maxclients().to_string()),
        ("tcp-backlog".into(), c.tcp_backlog.to_string()),
        ("timeout".into(), l.timeout_secs().to_string()),
        (
            "lua-time-limit".into(),
            l.lua_time_limit().as_millis().to_string(),
        ),
        (
            "busy-reply-threshold".into(),
            l.lua_time_limit().as_millis().to_string(),
        ),
        (
            "client-output-buffer-limit".into(),
            format!(
                "normal 0 0 0 slave 0 0 0 pubsub {}",
                l.pubsub_output_limit()
            ),
        ),
        (
            "notify-keyspace-events".into(),
            crate::notify::format(ctx.shared.notify.flags()),
        ),
        ("appendonly".into(), "yes".into()),
        ("appendfsync".into(), c.sync.name().into()),
        ("save".into(), String::new()),
        ("backup-dir".into(), c.backup_dir().display().to_string()),
        (
            "backup-url".into(),
            c.backup_url.clone().unwrap_or_default(),
        ),
        ("backup-keep".into(), c.backup_keep.to_string()),
        (
            "replicaof".into(),
            ctx.shared
                .store
                .replica_status()
                .map(|(of, _)| of)
                .unwrap_or_default(),
        ),
        ("replica-read-only".into(), "yes".into()),
        (
            "replica-refresh-ms".into(),
            c.replica_refresh_ms.to_string(),
        ),
        ("databases".into(), "1".into()),
        ("loglevel".into(), c.log_level.clone()),
        (
            "proto-max-bulk-len".into(),
            l.proto_max_bulk_len().to_string(),
        ),
        (
            "client-query-buffer-limit".into(),
            l.query_buffer_limit().to_string(),
        ),
        (
            "max-multibulk-len".into(),
            l.max_multibulk_len().to_string(),
        ),
        ("engine-threads".into(), c.engine_threads.to_string()),
        ("io-threads".into(), c.io_threads.to_string()),
        ("key-lock-stripes".into(), c.key_lock_stripes.to_string()),
    ];
    v.extend(
        c.engine
            .entries()
            .into_iter()
            .map(|(k, val)| (format!("strata-{k}"), val)),
    );
    v
}

const CONFIG_HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "HELP",
    "    Print this help.",
];

fn set_failed(name: &str, why: &str) -> Reply {
    Reply::error(format!(
        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
    ))
}

fn apply(ctx: &Ctx<'_>, name: &str, value: &[u8]) -> Result<(), Reply> {
    let l = &ctx.shared.limits;
    let text = String::from_utf8_lossy(value);
    let int = || -> Result<u64, Reply> {
        text.parse::<u64>()
            .map_err(|_| set_failed(name, "argument couldn't be parsed into an integer"))
    };
    let size = || -> Result<u64, Reply> {
        text.parse::<ByteSize>()
            .map(|b| b.0)
            .map_err(|_| set_failed(name, "argument must be a memory value"))
    };
    match name {
        "requirepass" => l.set_requirepass(&text),
        "maxclients" => l
            .set_maxclients(usize::try_from(int()?).unwrap_or(usize::MAX))
            .map_err(|e| set_failed(name, &e))?,
        "timeout" => l.set_timeout_secs(int()?),
        "notify-keyspace-events" => ctx
            .shared
            .notify
            .set(crate::notify::parse(&text).ok_or_else(|| {
                set_failed(
                    name,
                    "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
                )
            })?),
        "lua-time-limit" | "busy-reply-threshold" => l.set_lua_time_limit_ms(int()?),
        "client-output-buffer-limit" => {
            set_output_limits(l, &text).map_err(|e| set_failed(name, &e))?
        }
        "proto-max-bulk-len" => l
            .set_proto_max_bulk_len(size()?)
            .map_err(|e| set_failed(name, &e))?,
        "client-query-buffer-limit" => l
            .set_query_buffer_limit(size()?)
            .map_err(|e| set_failed(name, &e))?,
        "max-multibulk-len" => l
            .set_max_multibulk_len(usize::try_from(int()?).unwrap_or(usize::MAX))
            .map_err(|e| set_failed(name, &e))?,
        _ => {
            return Err(if parameters(ctx).iter().any(|(k, _)| k == name) {
                set_failed(name, "can't set immutable config")
            } else {
                Reply::error(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                ))
            })
        }
    }
    Ok(())
}

/// `client-output-buffer-limit <class> <hard> <soft> <seconds> [<class> ...]`: the pubsub
/// class is applied; `normal 0 0 0` and `replica 0 0 0` are accepted as they are (strata's
/// normal clients are bounded by request batching, see `connection`, and it has no replicas).
fn set_output_limits(l: &crate::limits::Limits, text: &str) -> Result<(), String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut pubsub = None;
    for w in words.chunks(4) {
        let limit: crate::config::OutputLimit = w[1..]
            .join(" ")
            .parse()
            .map_err(|e: crate::config::ConfigError| e.0)?;
        match w[0].to_ascii_lowercase().as_str() {
            "pubsub" => pubsub = Some(limit),
            "normal" | "replica" | "slave" if limit.hard == 0 && limit.soft == 0 => {}
            "normal" | "replica" | "slave" => {
                return Err(format!(
                    "strata serve applies output buffer limits to the pubsub class only, not {}",
                    w[0]
                ))
            }
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        }
    }
    if let Some(p) = pubsub {
        l.set_pubsub_output_limit(p);
    }
    Ok(())
}

pub fn config(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = &a[1];
    if is(sub, "GET") {
        if a.len() < 3 {
            return Err(wrong_args("config|get"));
        }
        let params = parameters(ctx);
        let mut out = Vec::new();
        for (k, v) in &params {
            if a[2..].iter().any(|p| glob::matches(p, k.as_bytes(), true)) {
                out.push((Reply::bulk_str(k), Reply::bulk_str(v)));
            }
        }
        Ok(Reply::Map(out))
    } else if is(sub, "SET") {
        if a.len() < 4 {
            return Err(wrong_args("config|set"));
        }
        if a.len() % 2 == 1 {
            return Err(err(errors::SYNTAX));
        }
        for pair in a[2..].chunks_exact(2) {
            let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
            apply(ctx, &name, &pair[1])?;
        }
        Ok(Reply::Ok)
    } else if is(sub, "RESETSTAT") {
        if a.len() != 2 {
            return Err(wrong_args("config|resetstat"));
        }
        ctx.shared.stats.reset();
        ctx.shared.command_stats.reset();
        Ok(Reply::Ok)
    } else if is(sub, "HELP") {
        Ok(help_reply(CONFIG_HELP))
    } else {
        Err(unknown_subcommand(sub, "config"))
    }
}

/// Saves copy the writer's state: a replica has no database of its own to save.
const SAVE_ON_REPLICA: &str =
    "ERR a read replica cannot SAVE or BGSAVE: save on the writer (or promote this replica)";

/// `SAVE`: a checkpoint of the database into the backup directory (or a backup to
/// `backup-url`), now (see `saves`).
pub fn save(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let sh = ctx.shared;
    let Some(db) = sh.store.db() else {
        return Err(Reply::error(SAVE_ON_REPLICA));
    };
    sh.saves
        .save_now(&db, &sh.config.save_target(), sh.config.backup_keep)
        .map(|_| Reply::Ok)
        .map_err(|e| Reply::error(format!("ERR {e}")))
}

/// `BGSAVE [SCHEDULE]`: the same save on a thread of its own.
pub fn bgsave(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() > 2 || (a.len() == 2 && !is(&a[1], "SCHEDULE")) {
        return Err(Reply::error("ERR syntax error"));
    }
    let sh = ctx.shared;
    let Some(db) = sh.store.db() else {
        return Err(Reply::error(SAVE_ON_REPLICA));
    };
    if !sh.saves.bgsave(
        db,
        sh.config.save_target(),
        sh.config.backup_keep,
        a.len() == 2,
    ) {
        if a.len() == 2 {
            return Ok(Reply::Simple("Background saving scheduled".into()));
        }
        return Err(Reply::error("ERR Background save already in progress"));
    }
    Ok(Reply::Simple("Background saving started".into()))
}

/// `LASTSAVE`: Unix time of the last successful save (the start time before any).
pub fn lastsave(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.shared.saves.last_save_unix() as i64))
}
