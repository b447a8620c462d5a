//! XREAD and XREADGROUP, with BLOCK.
//!
//! A read is served at once when any of its streams has something for it — XREAD: an entry
//! after the ID given; XREADGROUP `>`: an entry after the group's last-delivered ID;
//! XREADGROUP with an ID: always (the consumer's pending history). Otherwise, with BLOCK, the
//! client waits for a write to one of its streams (see `blocking`) and the command reruns when
//! one comes; XREAD's `$` is resolved once, when it blocks, and kept in the wait
//! (`Blocked::memo`), so the rerun reads what arrived after the block, as in redis.
//!
//! Invariants: XREADGROUP changes a group only through `stream_groups::GroupState`, in the
//! command's batch. Replies are redis': an array of `[key, entries]` in RESP2, a map of key to
//! entries in RESP3, the null array when nothing was served. Depends on `commands::{streams,
//! stream_groups, lists}` (the wait); must not depend on the network layer.

use bytes::Bytes;

use super::errors::{self, err};
use super::lists::wait_for_keys_for;
use super::stream_groups::{check_names, GroupState};
use super::stream_pending::{deliver_history, deliver_new};
use super::streams::{self, entries_reply, strict_id};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::stream::StreamId;
use crate::resp::{Protocol, Reply};

/// The COUNT of a blocked read served without one (redis' `XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: u64 = 1000;

struct ReadArgs<'a> {
    /// Milliseconds; `Some(0)`: forever.
    block: Option<u64>,
    count: u64,
    group: Option<(&'a Bytes, &'a Bytes)>,
    noack: bool,
    keys: &'a [Bytes],
    ids: &'a [Bytes],
}

fn parse(a: &[Bytes], grouped: bool) -> Result<ReadArgs<'_>, Reply> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: &[],
        ids: &[],
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - i - 1;
        let o = &a[i];
        if is(o, "BLOCK") && more > 0 {
            if crate::scripting::in_script() {
                return Err(Reply::error(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&a[0])
                )));
            }
            let ms = crate::numbers::parse_i64(&a[i + 1])
                .ok_or_else(|| err("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(err("ERR timeout is negative"));
            }
            r.block = Some(ms as u64);
            i += 2;
        } else if is(o, "COUNT") && more > 0 {
            r.count = int_arg(&a[i + 1])?.max(0) as u64;
            i += 2;
        } else if is(o, "STREAMS") && more > 0 {
            streams_at = Some(i + 1);
            break;
        } else if is(o, "GROUP") && more >= 2 {
            if !grouped {
                return Err(err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((&a[i + 1], &a[i + 2]));
            i += 3;
        } else if is(o, "NOACK") {
            if !grouped {
                return Err(err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
            i += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    let Some(at) = streams_at else {
        return Err(err(errors::SYNTAX));
    };
    let n = a.len() - at;
    if !n.is_multiple_of(2) {
        return Err(err(
            "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
        ));
    }
    if grouped && r.group.is_none() {
        return Err(err("ERR Missing GROUP option for XREADGROUP"));
    }
    r.keys = &a[at..at + n / 2];
    r.ids = &a[at + n / 2..];
    Ok(r)
}

/// The stream keys of an XREAD or XREADGROUP request (for its locks): the first half of what
/// follows STREAMS, found by skipping the options as [`parse`] does (a group or consumer may
/// be named `streams`).
pub fn stream_keys(a: &[Bytes]) -> Vec<&Bytes> {
    let mut i = 1;
    while i < a.len() {
        let o = &a[i];
        if is(o, "STREAMS") {
            let rest = &a[i + 1..];
            return rest[..rest.len() / 2].iter().collect();
        }
        i += if is(o, "BLOCK") || is(o, "COUNT") {
            2
        } else if is(o, "GROUP") {
            3
        } else if is(o, "NOACK") {
            1
        } else {
            return Vec::new();
        };
    }
    Vec::new()
}

/// What a read wants of one stream.
#[derive(Clone, Copy)]
enum Want {
    /// Entries after this ID (XREAD; XREADGROUP's history).
    After(StreamId),
    /// The group's new entries (`>`).
    New,
}

fn read(ctx: &mut Ctx<'_>, a: &[Bytes], grouped: bool) -> CmdResult {
    let r = parse(a, grouped)?;
    // A rerun after a wake reads from the IDs resolved when it blocked.
    let memo = ctx
        .session
        .blocked
        .as_ref()
        .map(|b| b.memo.clone())
        .filter(|m| m.len() == r.keys.len());
    // A rerun keeps waiting on a key deleted or retyped meanwhile, as redis 7.0 does.
    let rerun = ctx.session.blocked.is_some();
    let mut streams = Vec::with_capacity(r.keys.len());
    let mut wants = Vec::with_capacity(r.keys.len());
    for (i, (key, id)) in r.keys.iter().zip(r.ids).enumerate() {
        if let Some((g, cons)) = r.group {
            check_names(key, g, cons)?;
        }
        let c = match streams::load(ctx, key) {
            Err(_) if rerun => None,
            other => other?,
        };
        let group = match (r.group, &c) {
            (Some((g, _)), Some(c)) => GroupState::load(ctx, c, g)?,
            _ => None,
        };
        if let Some((g, _)) = r.group {
            if rerun && c.is_some() && group.is_none() {
                return Err(err(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ));
            }
            if group.is_none() && !rerun {
                return Err(Reply::error(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(g)
                )));
            }
        }
        let want = if &id[..] == b"$" {
            if grouped {
                return Err(err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
            }
            match memo.as_ref() {
                Some(m) => Want::After(strict_id(&m[i])?),
                None => Want::After(c.as_ref().map_or(StreamId::MIN, |c| c.meta.stream.last_id)),
            }
        } else if &id[..] == b">" {
            if !grouped {
                return Err(err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
            }
            Want::New
        } else {
            Want::After(strict_id(id)?)
        };
        streams.push((c, group));
        wants.push(want);
    }
    let count = match (r.count, ctx.session.blocked.is_some()) {
        (0, true) => BLOCKED_DEFAULT_COUNT,
        (n, _) => n,
    };
    let now = ctx.now;
    let mut served: Vec<(Bytes, Reply)> = Vec::new();
    for (i, ((key, (c, group)), want)) in r
        .keys
        .iter()
        .zip(streams.iter_mut())
        .zip(&wants)
        .enumerate()
    {
        let Some(c) = c else { continue };
        // A stream named twice: read its group again, as the first serving left it.
        if let Some(g) = group.as_mut().filter(|_| r.keys[..i].contains(key)) {
            match GroupState::load(ctx, c, &g.name)? {
                Some(fresh) => *g = fresh,
                None => continue,
            }
        }
        match (group, *want) {
            (None, Want::After(after)) => {
                let Some(start) = after.incr() else { continue };
                let entries = streams::range(ctx, c, start, StreamId::MAX, count, false)?;
                if !entries.is_empty() {
                    served.push((key.clone(), entries_reply(&entries)?));
                }
            }
            (Some(group), Want::After(after)) => {
                let consumer = r.group.map(|(_, cons)| cons).expect("grouped");
                if group.ensure_consumer(ctx, c, consumer, now, true)? {
                    ctx.notify(crate::notify::STREAM, "xgroup-createconsumer", key);
                }
                let entries = match after.incr() {
                    Some(start) => deliver_history(ctx, c, group, consumer, start, count)?,
                    None => Vec::new(),
                };
                group.save(ctx, c)?;
                served.push((key.clone(), Reply::Array(entries)));
            }
            (Some(group), Want::New) => {
                // Served only if an entry after the group's last-delivered ID exists (the
                // consumer is not created otherwise, as in redis).
                let entries = match group.g.last_id.incr() {
                    Some(s) if c.meta.size > 0 && c.meta.stream.last_id >= s => {
                        streams::range(ctx, c, s, StreamId::MAX, count, false)?
                    }
                    _ => Vec::new(),
                };
                if entries.is_empty() {
                    continue;
                }
                let consumer = r.group.map(|(_, cons)| cons).expect("grouped");
                if group.ensure_consumer(ctx, c, consumer, now, true)? {
                    ctx.notify(crate::notify::STREAM, "xgroup-createconsumer", key);
                }
                deliver_new(ctx, c, group, consumer, &entries, r.noack)?;
                group.save(ctx, c)?;
                served.push((key.clone(), entries_reply(&entries)?));
            }
            // `>` without a group: a rerun whose stream went away (it waits on).
            (None, Want::New) => continue,
        }
    }
    if !served.is_empty() {
        return Ok(if ctx.session.protocol == Protocol::Resp3 {
            Reply::Map(
                served
                    .into_iter()
                    .map(|(k, v)| (Reply::Bulk(k), v))
                    .collect(),
            )
        } else {
            Reply::Array(
                served
                    .into_iter()
                    .map(|(k, v)| Reply::Array(vec![Reply::Bulk(k), v]))
                    .collect(),
            )
        });
    }
    let Some(ms) = r.block else {
        return Ok(Reply::NullArray);
    };
    let timeout = (ms > 0).then(|| std::time::Duration::from_millis(ms));
    let kind = if grouped {
        crate::blocking::WaitKind::GroupRead
    } else {
        crate::blocking::WaitKind::Read
    };
    let reply = wait_for_keys_for(ctx, r.keys, timeout, Reply::NullArray, kind)?;
    if let Some(b) = ctx.pending.block.as_mut() {
        b.memo = wants
            .iter()
            .map(|w| match w {
                Want::After(id) => id.to_bytes(),
                Want::New => Bytes::from_static(b">"),
            })
            .collect();
    }
    Ok(reply)
}

pub fn xread(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    read(ctx, a, false)
}

pub fn xreadgroup(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    read(ctx, a, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn stream_keys_are_the_first_half_after_streams() {
        let a = args(&["XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "$"]);
        let keys: Vec<&[u8]> = stream_keys(&a).into_iter().map(|k| &k[..]).collect();
        assert_eq!(keys, [&b"a"[..], b"b"]);
        let a = args(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"]);
        assert_eq!(stream_keys(&a).len(), 1);
        let a = args(&[
            "XREADGROUP",
            "GROUP",
            "streams",
            "STREAMS",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ]);
        let keys: Vec<&[u8]> = stream_keys(&a).into_iter().map(|k| &k[..]).collect();
        assert_eq!(
            keys,
            [&b"s"[..]],
            "a group and a consumer named like the keyword"
        );
        assert!(stream_keys(&args(&["XREAD", "COUNT", "1"])).is_empty());
    }

    #[test]
    fn options_parse_as_redis_parses_them() {
        let a = args(&["XREAD", "BLOCK", "0", "COUNT", "5", "STREAMS", "s", "$"]);
        let r = parse(&a, false).unwrap();
        assert_eq!((r.block, r.count, r.keys.len()), (Some(0), 5, 1));
        for (bad, grouped, want) in [
            (
                &["XREAD", "STREAMS", "a", "b", "0"][..],
                false,
                "Unbalanced",
            ),
            (
                &["XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"],
                false,
                "only supported by XREADGROUP",
            ),
            (&["XREADGROUP", "STREAMS", "s", ">"], true, "Missing GROUP"),
            (
                &["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"],
                false,
                "negative",
            ),
            (&["XREAD", "COUNT", "1"], false, "syntax error"),
        ] {
            match parse(&args(bad), grouped) {
                Err(Reply::Error(e)) => assert!(e.contains(want), "{bad:?}: {e}"),
                _ => panic!("{bad:?} parsed"),
            }
        }
    }
}
