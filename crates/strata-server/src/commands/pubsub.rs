//! Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
//! SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS,
//! SHARDNUMSUB, HELP).
//!
//! Invariants: never touches the engine; a (un)subscribe command answers one confirmation per
//! name (a `Reply::Many` of pushes), each carrying the count after it, as redis does — channels
//! plus patterns for the plain and pattern kinds, shard channels for the shard kind; the
//! client's registry entry mirrors the counts (CLIENT LIST `sub=`/`psub=`/`ssub=`). Which
//! commands a RESP2 client may run while subscribed is decided in `commands::dispatch`
//! ([`allowed_when_subscribed`]). Depends on `pubsub`, `session`, `limits`.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::connection::help_reply;
use super::errors::{unknown_subcommand, wrong_args};
use super::{is, CmdResult, CommandSpec, Ctx};
use crate::pubsub::{Kind, Publish, Subscriptions};
use crate::resp::Reply;

fn word(w: &'static str) -> Reply {
    Reply::Bulk(Bytes::from_static(w.as_bytes()))
}

/// The commands a RESP2 client in subscribed mode may run (redis' list).
pub fn allowed_when_subscribed(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// The error a RESP2 client in subscribed mode gets for any other command.
pub fn not_allowed_when_subscribed(name: &str) -> Reply {
    Reply::error(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
         RESET are allowed in this context"
    ))
}

/// Mirrors the session's counts into its registry entry.
fn mirror(ctx: &Ctx<'_>) {
    let c = &ctx.session.client;
    let (s, p, h) = ctx.session.pubsub.as_ref().map_or((0, 0, 0), |s| {
        (
            s.len(Kind::Channel),
            s.len(Kind::Pattern),
            s.len(Kind::Shard),
        )
    });
    c.sub.store(s as u32, Relaxed);
    c.psub.store(p as u32, Relaxed);
    c.ssub.store(h as u32, Relaxed);
}

/// The messages already in the client's mailbox, as replies: they were published before the
/// command that takes them ran, so they go before its reply — after an UNSUBSCRIBE that leaves
/// subscribed mode, a RESP2 client reads no more pushes.
pub fn queued_messages(ctx: &Ctx<'_>) -> Vec<Reply> {
    let Some(subs) = &ctx.session.pubsub else {
        return Vec::new();
    };
    let (msgs, bytes) = subs.mailbox.take();
    subs.mailbox.written(bytes);
    msgs.iter().map(crate::pubsub::Message::reply).collect()
}

fn count_for(subs: &Subscriptions, kind: Kind) -> i64 {
    match kind {
        Kind::Shard => subs.len(Kind::Shard) as i64,
        _ => subs.count() as i64,
    }
}

fn subscribe_to(ctx: &mut Ctx<'_>, a: &[Bytes], kind: Kind, what: &'static str) -> CmdResult {
    let hub = ctx.shared.pubsub.clone();
    let id = ctx.session.client.id;
    let subs = ctx
        .session
        .pubsub
        .get_or_insert_with(|| Subscriptions::new(hub, id));
    let mut out = Vec::with_capacity(a.len() - 1);
    for name in &a[1..] {
        subs.subscribe(kind, name);
        out.push(Reply::Push(vec![
            word(what),
            Reply::Bulk(name.clone()),
            Reply::Int(count_for(subs, kind)),
        ]));
    }
    mirror(ctx);
    Ok(Reply::Many(out))
}

fn unsubscribe_from(ctx: &mut Ctx<'_>, a: &[Bytes], kind: Kind, what: &'static str) -> CmdResult {
    let mut out = Vec::new();
    let mut unsubscribed = false;
    if let Some(subs) = ctx.session.pubsub.as_mut() {
        let names = if a.len() == 1 {
            subs.names(kind)
        } else {
            a[1..].to_vec()
        };
        for name in names {
            unsubscribed |= subs.unsubscribe(kind, &name);
            out.push(Reply::Push(vec![
                word(what),
                Reply::Bulk(name),
                Reply::Int(count_for(subs, kind)),
            ]));
        }
    } else if a.len() > 1 {
        for name in &a[1..] {
            out.push(Reply::Push(vec![
                word(what),
                Reply::Bulk(name.clone()),
                Reply::Int(0),
            ]));
        }
    }
    if out.is_empty() {
        // Nothing to unsubscribe from: one confirmation with a null name.
        let n = ctx
            .session
            .pubsub
            .as_ref()
            .map_or(0, |s| count_for(s, kind));
        out.push(Reply::Push(vec![word(what), Reply::Null, Reply::Int(n)]));
    }
    mirror(ctx);
    if unsubscribed {
        let mut msgs = queued_messages(ctx);
        if !msgs.is_empty() {
            msgs.append(&mut out);
            out = msgs;
        }
    }
    Ok(Reply::Many(out))
}

pub fn subscribe(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    subscribe_to(ctx, a, Kind::Channel, "subscribe")
}

pub fn psubscribe(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    subscribe_to(ctx, a, Kind::Pattern, "psubscribe")
}

pub fn ssubscribe(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    subscribe_to(ctx, a, Kind::Shard, "ssubscribe")
}

pub fn unsubscribe(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    unsubscribe_from(ctx, a, Kind::Channel, "unsubscribe")
}

pub fn punsubscribe(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    unsubscribe_from(ctx, a, Kind::Pattern, "punsubscribe")
}

pub fn sunsubscribe(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    unsubscribe_from(ctx, a, Kind::Shard, "sunsubscribe")
}

/// PUBLISH and SPUBLISH answer how many deliveries there will be; the message goes out when
/// the segment is finished (`executor::finish_segment`), so a segment discarded and rerun (an
/// inline start that needed I/O, a retried commit) delivers it once.
fn stage(ctx: &mut Ctx<'_>, a: &[Bytes], kind: Kind) -> CmdResult {
    let n = ctx.shared.pubsub.receivers(kind, &a[1]);
    ctx.pending.publishes.push(Publish {
        kind,
        channel: a[1].clone(),
        payload: a[2].clone(),
    });
    Ok(Reply::Int(n as i64))
}

pub fn publish(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    stage(ctx, a, Kind::Channel)
}

pub fn spublish(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    stage(ctx, a, Kind::Shard)
}

const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Print this help.",
];

pub fn pubsub(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = &a[1];
    let hub = &ctx.shared.pubsub;
    let channels = |kind| {
        let names = hub.active(kind, a.get(2).map(|p| &p[..]));
        Reply::Array(names.into_iter().map(Reply::Bulk).collect())
    };
    // A flat array in RESP3 too (redis 7.0's reply).
    let numsub = |kind| {
        Reply::Array(
            a[2..]
                .iter()
                .flat_map(|c| {
                    [
                        Reply::Bulk(c.clone()),
                        Reply::Int(hub.subscribers(kind, c) as i64),
                    ]
                })
                .collect(),
        )
    };
    if is(sub, "CHANNELS") && a.len() <= 3 {
        Ok(channels(Kind::Channel))
    } else if is(sub, "SHARDCHANNELS") && a.len() <= 3 {
        Ok(channels(Kind::Shard))
    } else if is(sub, "NUMSUB") {
        Ok(numsub(Kind::Channel))
    } else if is(sub, "SHARDNUMSUB") {
        Ok(numsub(Kind::Shard))
    } else if is(sub, "NUMPAT") && a.len() == 2 {
        Ok(Reply::Int(hub.count(Kind::Pattern) as i64))
    } else if is(sub, "HELP") {
        if a.len() != 2 {
            return Err(wrong_args("pubsub|help"));
        }
        Ok(help_reply(PUBSUB_HELP))
    } else {
        Err(unknown_subcommand(sub, "pubsub"))
    }
}
