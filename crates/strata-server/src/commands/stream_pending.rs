//! The pending-entries list (PEL) of consumer groups: XPENDING (summary and extended), XCLAIM,
//! XAUTOCLAIM, and XREADGROUP's deliveries (new entries with `>`, a consumer's history with an
//! ID).
//!
//! Invariants: every change of a PEL goes through `stream_groups::GroupState` (`assign`,
//! `release`), which keeps the group's and the consumers' counts in step, in the command's
//! batch; a claim of an entry deleted since drops it from the PEL (redis 7.0's rule). Scans
//! of the PEL start at their first ID and stop at their COUNT. Depends on
//! `commands::{streams, stream_groups}` and `collections`; must not depend on the network
//! layer or touch the engine except through `Ctx`.

use bytes::Bytes;

use super::errors::{self, err};
use super::stream_groups::{
    check_names, consumers_of, no_group, pel_get, pel_scan, GroupState, STREAM_EVENTS,
};
use super::streams::{self, corrupt, entry_at, entry_reply, interval_id, strict_id};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::stream::{self as enc, group_prefix, pel_rest, IdArg, Pending, StreamId};
use crate::collections::subkey::{ELEM, PEL};
use crate::resp::Reply;

fn id_bulk(id: StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

pub fn xpending(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return Err(err(errors::SYNTAX));
    }
    let mut range = None;
    if a.len() >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if is(&a[3], "IDLE") {
            min_idle = int_arg(&a[4])?;
            if a.len() < 8 {
                return Err(err(errors::SYNTAX));
            }
            at += 2;
        }
        let count = int_arg(&a[at + 2])?.max(0) as usize;
        let start = interval_id(&a[at], 0)?;
        let end = interval_id(&a[at + 1], u64::MAX)?;
        let consumer = a.get(at + 3).cloned();
        range = Some((min_idle, start, end, count, consumer));
    }
    let (key, name) = (&a[1], &a[2]);
    let group = match streams::load(ctx, key)? {
        Some(c) => GroupState::load(ctx, &c, name)?.map(|g| (c, g)),
        None => None,
    };
    let Some((c, mut group)) = group else {
        return Err(no_group(key, name, ""));
    };
    let Some((min_idle, start, end, count, consumer)) = range else {
        // The summary.
        if group.g.pending == 0 {
            return Ok(Reply::Array(vec![
                Reply::Int(0),
                Reply::Null,
                Reply::Null,
                Reply::NullArray,
            ]));
        }
        let first = pel_scan(ctx, &c, name, StreamId::MIN, StreamId::MAX, 1, |_, _| true)?;
        let mut last = None;
        let hi = pel_rest(name, StreamId::MAX);
        let prefix = group_prefix(name);
        ctx.elems(&c, PEL, true, Some(&hi), |rest, _| {
            if let Some(idk) = rest.strip_prefix(prefix.as_slice()) {
                last = Some(StreamId::from_key(idk).map_err(corrupt)?);
            }
            Ok(false)
        })?;
        let id_reply =
            |id: Option<StreamId>| id.map_or(Reply::Null, |id| Reply::Bulk(id.to_bytes()));
        let owners = consumers_of(ctx, &c, name)?
            .into_iter()
            .filter(|(_, cons)| cons.pending > 0)
            .map(|(n, cons)| {
                Reply::Array(vec![
                    Reply::Bulk(n),
                    Reply::Bulk(Bytes::from(cons.pending.to_string())),
                ])
            })
            .collect();
        return Ok(Reply::Array(vec![
            Reply::Int(group.g.pending as i64),
            id_reply(first.first().map(|(id, _)| *id)),
            id_reply(last),
            Reply::Array(owners),
        ]));
    };
    if let Some(cons) = &consumer {
        if group.consumer(ctx, &c, cons)?.is_none() {
            return Ok(Reply::Array(vec![]));
        }
    }
    if count == 0 {
        return Ok(Reply::Array(vec![]));
    }
    let now = ctx.now;
    let rows = pel_scan(ctx, &c, name, start, end, count, |_, p| {
        consumer.as_ref().is_none_or(|n| p.consumer == n[..])
            && (min_idle <= 0 || now.saturating_sub(p.delivery_time) as i64 >= min_idle)
    })?;
    Ok(Reply::Array(
        rows.into_iter()
            .map(|(id, p)| {
                Reply::Array(vec![
                    Reply::Bulk(id.to_bytes()),
                    Reply::Bulk(Bytes::from(p.consumer)),
                    Reply::Int(now.saturating_sub(p.delivery_time) as i64),
                    Reply::Int(p.delivery_count as i64),
                ])
            })
            .collect(),
    ))
}

/// Loads the stream and group XCLAIM and XAUTOCLAIM work on.
fn claim_target(ctx: &Ctx<'_>, a: &[Bytes]) -> Result<(Coll, GroupState), Reply> {
    let group = match streams::load(ctx, &a[1])? {
        Some(c) => GroupState::load(ctx, &c, &a[2])?.map(|g| (c, g)),
        None => None,
    };
    group.ok_or_else(|| no_group(&a[1], &a[2], ""))
}

pub fn xclaim(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (c, mut group) = claim_target(ctx, a)?;
    check_names(&a[1], &a[2], &a[3])?;
    let min_idle = crate::numbers::parse_i64(&a[4])
        .ok_or_else(|| err("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0) as u64;
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match enc::parse_id(&a[j], 0, true, false) {
            Some(IdArg::Id(id)) => ids.push(id),
            _ => break,
        }
        j += 1;
    }
    let now = ctx.now;
    let (mut force, mut justid) = (false, false);
    let mut delivery_time: Option<i64> = None;
    let mut retry_count: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < a.len() {
        let more = j + 1 < a.len();
        let opt = &a[j];
        let num = |v: &[u8], what: &str| {
            crate::numbers::parse_i64(v).ok_or_else(|| {
                Reply::error(format!("ERR Invalid {what} option argument for XCLAIM"))
            })
        };
        if is(opt, "FORCE") {
            force = true;
        } else if is(opt, "JUSTID") {
            justid = true;
        } else if is(opt, "IDLE") && more {
            j += 1;
            delivery_time = Some((now as i64).saturating_sub(num(&a[j], "IDLE")?));
        } else if is(opt, "TIME") && more {
            j += 1;
            delivery_time = Some(num(&a[j], "TIME")?);
        } else if is(opt, "RETRYCOUNT") && more {
            j += 1;
            retry_count = Some(num(&a[j], "RETRYCOUNT")?);
        } else if is(opt, "LASTID") && more {
            j += 1;
            last_id = strict_id(&a[j])?;
        } else {
            return Err(Reply::error(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
        j += 1;
    }
    if last_id > group.g.last_id {
        group.g.last_id = last_id;
    }
    let delivery_time = match delivery_time {
        Some(t) if t >= 0 && (t as u64) <= now => t as u64,
        _ => now,
    };
    let name = &a[3];
    let mut out = Vec::new();
    for id in ids {
        let prev = pel_get(ctx, &c, &group.name, id)?;
        let Some(entry) = entry_at(ctx, &c, id)? else {
            // The entry is gone (XDEL, trimming): it leaves the PEL.
            if let Some(p) = &prev {
                group.release(ctx, &c, id, p)?;
            }
            continue;
        };
        if prev.is_none() && !force {
            continue;
        }
        if let Some(p) = &prev {
            if min_idle > 0 && now.saturating_sub(p.delivery_time) < min_idle {
                continue;
            }
        }
        if group.ensure_consumer(ctx, &c, name, now, true)? {
            ctx.notify(STREAM_EVENTS, "xgroup-createconsumer", &a[1]);
        }
        // An entry FORCEd into the PEL starts with one delivery, as in redis.
        let count = prev.as_ref().map_or(1, |p| p.delivery_count);
        let p = Pending {
            delivery_time,
            delivery_count: match retry_count {
                Some(n) if n >= 0 => n as u64,
                _ if justid => count,
                _ => count + 1,
            },
            consumer: name.to_vec(),
        };
        group.assign(ctx, &c, id, prev.as_ref(), &p)?;
        out.push(if justid {
            Reply::Bulk(id.to_bytes())
        } else {
            entry_reply(id, &entry)?
        });
    }
    group.save(ctx, &c)?;
    Ok(Reply::Array(out))
}

pub fn xautoclaim(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let min_idle = crate::numbers::parse_i64(&a[4])
        .ok_or_else(|| err("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0) as u64;
    let start = interval_id(&a[5], 0)?;
    let mut count: u64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        if is(&a[j], "COUNT") && j + 1 < a.len() {
            count = match crate::numbers::parse_i64(&a[j + 1]) {
                Some(n) if (1..=i64::MAX / 16).contains(&n) => n as u64,
                _ => return Err(err("ERR COUNT must be > 0")),
            };
            j += 2;
        } else if is(&a[j], "JUSTID") {
            justid = true;
            j += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    let (c, mut group) = claim_target(ctx, a)?;
    check_names(&a[1], &a[2], &a[3])?;
    let now = ctx.now;
    let attempts = count.saturating_mul(10);
    // The entries examined, and the one after them (the next cursor).
    let scanned = pel_scan(
        ctx,
        &c,
        &group.name,
        start,
        StreamId::MAX,
        (attempts + 1).min(usize::MAX as u64) as usize,
        |_, _| true,
    )?;
    let name = &a[3];
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    let mut examined = 0;
    let mut budget = count;
    for (id, prev) in &scanned {
        if examined == attempts || budget == 0 {
            break;
        }
        examined += 1;
        let Some(entry) = entry_at(ctx, &c, *id)? else {
            group.release(ctx, &c, *id, prev)?;
            deleted.push(Reply::Bulk(id.to_bytes()));
            budget -= 1;
            continue;
        };
        if min_idle > 0 && now.saturating_sub(prev.delivery_time) < min_idle {
            continue;
        }
        if group.ensure_consumer(ctx, &c, name, now, true)? {
            ctx.notify(STREAM_EVENTS, "xgroup-createconsumer", &a[1]);
        }
        let p = Pending {
            delivery_time: now,
            delivery_count: prev.delivery_count + u64::from(!justid),
            consumer: name.to_vec(),
        };
        group.assign(ctx, &c, *id, Some(prev), &p)?;
        claimed.push(if justid {
            Reply::Bulk(id.to_bytes())
        } else {
            entry_reply(*id, &entry)?
        });
        budget -= 1;
    }
    let next = scanned
        .get(examined as usize)
        .map_or(StreamId::MIN, |(id, _)| *id);
    group.save(ctx, &c)?;
    Ok(Reply::Array(vec![
        Reply::Bulk(next.to_bytes()),
        Reply::Array(claimed),
        Reply::Array(deleted),
    ]))
}

/// XREADGROUP's delivery of new entries (`>`, read after the group's last-delivered ID) to
/// `consumer`: each moves the group's last-delivered ID (and its read counter) and, unless
/// `noack`, becomes pending for the consumer (taking it from a previous owner after an XGROUP
/// SETID back).
pub(super) fn deliver_new(
    ctx: &mut Ctx<'_>,
    c: &Coll,
    group: &mut GroupState,
    consumer: &[u8],
    entries: &[(StreamId, Bytes)],
    noack: bool,
) -> Result<(), Reply> {
    let now = ctx.now;
    for (id, _) in entries {
        enc::advance_group(&c.meta.stream, c.meta.size, &mut group.g, *id);
        if noack {
            continue;
        }
        let prev = pel_get(ctx, c, &group.name, *id)?;
        let p = Pending {
            delivery_time: now,
            delivery_count: 1,
            consumer: consumer.to_vec(),
        };
        group.assign(ctx, c, *id, prev.as_ref(), &p)?;
    }
    Ok(())
}

/// XREADGROUP's history read (an explicit ID): the consumer's pending entries from `start`,
/// each delivered again (its delivery time and count move); an entry deleted since is
/// answered as `[id, nil]`, as redis does.
pub(super) fn deliver_history(
    ctx: &mut Ctx<'_>,
    c: &Coll,
    group: &mut GroupState,
    consumer: &[u8],
    start: StreamId,
    count: u64,
) -> Result<Vec<Reply>, Reply> {
    let own = pel_scan(
        ctx,
        c,
        &group.name,
        start,
        StreamId::MAX,
        count as usize,
        |_, p| p.consumer == consumer,
    )?;
    let now = ctx.now;
    let mut out = Vec::with_capacity(own.len());
    for (id, p) in own {
        match ctx.elem_get(c, ELEM, &id.to_key())? {
            Some(v) => {
                let again = Pending {
                    delivery_time: now,
                    delivery_count: p.delivery_count + 1,
                    consumer: p.consumer.clone(),
                };
                group.assign(ctx, c, id, Some(&p), &again)?;
                out.push(entry_reply(id, &v)?);
            }
            None => out.push(Reply::Array(vec![id_bulk(id), Reply::NullArray])),
        }
    }
    Ok(out)
}
