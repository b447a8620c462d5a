//! Stream consumer groups: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP),
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO (STREAM [FULL], GROUPS, CONSUMERS, HELP), and
//! [`GroupState`], through which XREADGROUP and these commands change a group.
//!
//! Invariants: a group's record counts its pending entries and consumers, and a consumer's
//! record counts its own pending entries; every change of the PEL goes through
//! [`GroupState::assign`] or [`GroupState::release`], which keep the three in step, and
//! [`GroupState::save`] writes the group and the consumers a command changed in the
//! command's batch — so a crash leaves all of a command or none, and the PEL after a restart
//! is exactly what was delivered and not acknowledged. The PEL is one ID-ordered run per group
//! (see `collections::stream`): XPENDING, XAUTOCLAIM and a consumer's history read scan it
//! from their first ID and stop at their COUNT; a consumer's own entries are found by
//! filtering that run by owner. Depends on `commands::streams` and `collections`; must not
//! depend on the network layer or touch the engine except through `Ctx`.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::errors::{self, err};
use super::streams::{self, corrupt, entry_at, entry_reply, interval_id, strict_id, STREAM};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::stream::{
    self as enc, consumer_rest, group_prefix, pel_rest, Consumer, Group, IdArg, Pending, StreamId,
};
use crate::collections::subkey::{CONSUMER, ELEM, GROUP, PEL};
use crate::notify::STREAM as STREAM_EVENTS;
use crate::resp::Reply;

fn subcommand_error(a: &[Bytes], cmd: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {cmd} HELP.",
        String::from_utf8_lossy(&a[1][..a[1].len().min(128)])
    ))
}

fn no_group(key: &[u8], group: &[u8], tail: &str) -> Reply {
    Reply::error(format!(
        "NOGROUP No such key '{}' or consumer group '{}'{tail}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

fn no_group_for_key(key: &[u8], group: &[u8]) -> Reply {
    Reply::error(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    ))
}

/// Refuses names whose sub-keys would pass the engine's key limit, before anything is
/// written (a command must not fail halfway through its writes).
pub(super) fn check_names(key: &[u8], group: &[u8], consumer: &[u8]) -> Result<(), Reply> {
    let rest = 4 + group.len() + consumer.len().max(16);
    if key.len() + rest + crate::collections::subkey::OVERHEAD > strata::MAX_KEY_SIZE {
        return Err(Reply::error(format!(
            "ERR key, group and consumer names together exceed {} bytes",
            strata::MAX_KEY_SIZE - crate::collections::subkey::OVERHEAD - 20
        )));
    }
    Ok(())
}

/// The PEL entry of `id` in `group`.
pub(super) fn pel_get(
    ctx: &Ctx<'_>,
    c: &Coll,
    group: &[u8],
    id: StreamId,
) -> Result<Option<Pending>, Reply> {
    ctx.elem_get(c, PEL, &pel_rest(group, id))?
        .map(|v| enc::decode_pending(&v).map_err(corrupt))
        .transpose()
}

/// Up to `max` PEL entries of `group` from `start` on, in ID order, for which `keep` holds
/// (`keep` sees every entry examined; 0: no limit).
pub(super) fn pel_scan(
    ctx: &Ctx<'_>,
    c: &Coll,
    group: &[u8],
    start: StreamId,
    end: StreamId,
    max: usize,
    mut keep: impl FnMut(StreamId, &Pending) -> bool,
) -> Result<Vec<(StreamId, Pending)>, Reply> {
    let prefix = group_prefix(group);
    let mut out = Vec::new();
    if start > end {
        return Ok(out);
    }
    ctx.elems(c, PEL, false, Some(&pel_rest(group, start)), |rest, v| {
        let Some(idk) = rest.strip_prefix(prefix.as_slice()) else {
            return Ok(false);
        };
        let id = StreamId::from_key(idk).map_err(corrupt)?;
        if id > end {
            return Ok(false);
        }
        let p = enc::decode_pending(v).map_err(corrupt)?;
        if keep(id, &p) {
            out.push((id, p));
        }
        Ok(max == 0 || out.len() < max)
    })?;
    Ok(out)
}

/// The consumers of `group`, by name.
fn consumers_of(ctx: &Ctx<'_>, c: &Coll, group: &[u8]) -> Result<Vec<(Bytes, Consumer)>, Reply> {
    let prefix = group_prefix(group);
    let mut out = Vec::new();
    ctx.elems(c, CONSUMER, false, Some(&prefix), |rest, v| {
        let Some(name) = rest.strip_prefix(prefix.as_slice()) else {
            return Ok(false);
        };
        out.push((
            Bytes::copy_from_slice(name),
            enc::decode_consumer(v).map_err(corrupt)?,
        ));
        Ok(true)
    })?;
    Ok(out)
}

/// The groups of a stream, by name.
fn groups_of(ctx: &Ctx<'_>, c: &Coll) -> Result<Vec<(Bytes, Group)>, Reply> {
    let mut out = Vec::new();
    ctx.elems(c, GROUP, false, None, |name, v| {
        out.push((
            Bytes::copy_from_slice(name),
            enc::decode_group(v).map_err(corrupt)?,
        ));
        Ok(true)
    })?;
    Ok(out)
}

/// A consumer group being read or changed by one command.
pub(super) struct GroupState {
    pub name: Bytes,
    pub g: Group,
    /// Consumers looked up so far (`None`: absent), and whether each changed.
    consumers: BTreeMap<Bytes, (Option<Consumer>, bool)>,
}

impl GroupState {
    /// The group `name` of stream `c`, or `None`.
    pub fn load(ctx: &Ctx<'_>, c: &Coll, name: &Bytes) -> Result<Option<GroupState>, Reply> {
        let Some(v) = ctx.elem_get(c, GROUP, name)? else {
            return Ok(None);
        };
        Ok(Some(GroupState {
            name: name.clone(),
            g: enc::decode_group(&v).map_err(corrupt)?,
            consumers: BTreeMap::new(),
        }))
    }

    fn slot(
        &mut self,
        ctx: &Ctx<'_>,
        c: &Coll,
        name: &[u8],
    ) -> Result<&mut (Option<Consumer>, bool), Reply> {
        if !self.consumers.contains_key(name) {
            let found = ctx
                .elem_get(c, CONSUMER, &consumer_rest(&self.name, name))?
                .map(|v| enc::decode_consumer(&v).map_err(corrupt))
                .transpose()?;
            self.consumers
                .insert(Bytes::copy_from_slice(name), (found, false));
        }
        Ok(self.consumers.get_mut(name).expect("just inserted"))
    }

    /// The consumer `name`, if it exists.
    pub fn consumer(
        &mut self,
        ctx: &Ctx<'_>,
        c: &Coll,
        name: &[u8],
    ) -> Result<Option<Consumer>, Reply> {
        Ok(self.slot(ctx, c, name)?.0)
    }

    /// Looks up the consumer `name`, creating it if absent; marks it seen at `now` when
    /// `seen` (redis refreshes a consumer's seen time when it reads or claims). Returns
    /// whether it was created.
    pub fn ensure_consumer(
        &mut self,
        ctx: &Ctx<'_>,
        c: &Coll,
        name: &[u8],
        now: u64,
        seen: bool,
    ) -> Result<bool, Reply> {
        let slot = self.slot(ctx, c, name)?;
        let created = slot.0.is_none();
        let cons = slot.0.get_or_insert(Consumer {
            seen_time: now,
            pending: 0,
        });
        if seen {
            cons.seen_time = now;
        }
        slot.1 |= created || seen;
        if created {
            self.g.consumers += 1;
        }
        Ok(created)
    }

    fn adjust(&mut self, ctx: &Ctx<'_>, c: &Coll, name: &[u8], up: bool) -> Result<(), Reply> {
        let slot = self.slot(ctx, c, name)?;
        if let Some(cons) = slot.0.as_mut() {
            cons.pending = if up {
                cons.pending + 1
            } else {
                cons.pending.saturating_sub(1)
            };
            slot.1 = true;
        }
        Ok(())
    }

    /// Makes `id` pending as `p` (a delivery or a claim), moving it from its previous owner
    /// (`prev`, its PEL entry before) if it had one.
    pub fn assign(
        &mut self,
        ctx: &mut Ctx<'_>,
        c: &Coll,
        id: StreamId,
        prev: Option<&Pending>,
        p: &Pending,
    ) -> Result<(), Reply> {
        match prev {
            Some(prev) if prev.consumer == p.consumer => {}
            Some(prev) => {
                self.adjust(ctx, c, &prev.consumer, false)?;
                self.adjust(ctx, c, &p.consumer, true)?;
            }
            None => {
                self.g.pending += 1;
                self.adjust(ctx, c, &p.consumer, true)?;
            }
        }
        ctx.elem_put(c, PEL, &pel_rest(&self.name, id), &enc::encode_pending(p))
    }

    /// Removes `id` (pending as `prev`) from the PEL.
    pub fn release(
        &mut self,
        ctx: &mut Ctx<'_>,
        c: &Coll,
        id: StreamId,
        prev: &Pending,
    ) -> Result<(), Reply> {
        self.g.pending = self.g.pending.saturating_sub(1);
        self.adjust(ctx, c, &prev.consumer, false)?;
        ctx.elem_del(c, PEL, &pel_rest(&self.name, id));
        Ok(())
    }

    /// Writes the group and the consumers this command changed.
    pub fn save(&self, ctx: &mut Ctx<'_>, c: &Coll) -> Result<(), Reply> {
        ctx.elem_put(c, GROUP, &self.name, &enc::encode_group(&self.g))?;
        for (name, (cons, changed)) in &self.consumers {
            let rest = consumer_rest(&self.name, name);
            match cons {
                Some(cons) if *changed => {
                    ctx.elem_put(c, CONSUMER, &rest, &enc::encode_consumer(cons))?
                }
                Some(_) => {}
                None if *changed => ctx.elem_del(c, CONSUMER, &rest),
                None => {}
            }
        }
        Ok(())
    }
}

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

/// Removes every PEL entry and consumer of `group` (XGROUP DESTROY).
fn drop_group_contents(ctx: &mut Ctx<'_>, c: &Coll, group: &[u8]) -> Result<(), Reply> {
    let pel = pel_scan(ctx, c, group, StreamId::MIN, StreamId::MAX, 0, |_, _| true)?;
    for (id, _) in pel {
        ctx.elem_del(c, PEL, &pel_rest(group, id));
    }
    for (name, _) in consumers_of(ctx, c, group)? {
        ctx.elem_del(c, CONSUMER, &consumer_rest(group, &name));
    }
    Ok(())
}

pub fn xgroup(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = &a[1];
    if is(sub, "HELP") && a.len() == 2 {
        return Ok(super::connection::help_reply(XGROUP_HELP));
    }
    let known = [
        "CREATE",
        "SETID",
        "DESTROY",
        "CREATECONSUMER",
        "DELCONSUMER",
    ];
    if a.len() < 4 || !known.iter().any(|k| is(sub, k)) {
        return Err(subcommand_error(a, "XGROUP"));
    }
    let (create, setid) = (is(sub, "CREATE"), is(sub, "SETID"));
    let arity_ok = match () {
        _ if create => (5..=8).contains(&a.len()),
        _ if setid => a.len() == 5 || a.len() == 7,
        _ if is(sub, "DESTROY") => a.len() == 4,
        _ => a.len() == 5,
    };
    let mut mkstream = false;
    let mut entries_read: Option<u64> = None;
    let mut i = 5;
    while i < a.len() {
        if create && is(&a[i], "MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(&a[i], "ENTRIESREAD") && i + 1 < a.len() {
            let n = int_arg(&a[i + 1])?;
            if n < -1 {
                return Err(err("ERR value for ENTRIESREAD must be positive or -1"));
            }
            entries_read = (n >= 0).then_some(n as u64);
            i += 2;
        } else {
            return Err(subcommand_error(a, "XGROUP"));
        }
    }
    let (key, name) = (&a[2], &a[3]);
    check_names(key, name, a.get(4).map_or(&b""[..], |c| &c[..]))?;
    let mut c =
        match streams::load(ctx, key)? {
            Some(c) => c,
            None if create && mkstream => ctx.coll_or_new(key, STREAM)?,
            None => return Err(err(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you \
                 may want to use the MKSTREAM option to create an empty stream automatically.",
            )),
        };
    let group = GroupState::load(ctx, &c, name)?;
    if group.is_none() && !create && !is(sub, "DESTROY") {
        return Err(no_group_for_key(key, name));
    }
    if !arity_ok {
        return Err(subcommand_error(a, "XGROUP"));
    }
    let parse_id = |c: &Coll, arg: &[u8], strict: bool| {
        if arg == b"$" {
            return Ok(c.meta.stream.last_id);
        }
        match enc::parse_id(arg, 0, strict, false) {
            Some(IdArg::Id(id)) => Ok(id),
            _ => Err(streams::invalid_id()),
        }
    };
    if create {
        let id = parse_id(&c, &a[4], true)?;
        if group.is_some() {
            return Err(err("BUSYGROUP Consumer Group name already exists"));
        }
        let g = GroupState {
            name: name.clone(),
            g: Group {
                last_id: id,
                entries_read,
                pending: 0,
                consumers: 0,
            },
            consumers: BTreeMap::new(),
        };
        g.save(ctx, &c)?;
        c.meta.stream.groups += 1;
        ctx.coll_save(&c)?;
        ctx.notify(STREAM_EVENTS, "xgroup-create", key);
        return Ok(Reply::Ok);
    }
    let Some(mut group) = group else {
        // DESTROY of a group that does not exist.
        return Ok(Reply::Int(0));
    };
    if setid {
        let id = parse_id(&c, &a[4], false)?;
        group.g.last_id = id;
        group.g.entries_read = entries_read;
        group.save(ctx, &c)?;
        ctx.coll_save(&c)?;
        ctx.notify(STREAM_EVENTS, "xgroup-setid", key);
        return Ok(Reply::Ok);
    }
    if is(sub, "DESTROY") {
        drop_group_contents(ctx, &c, name)?;
        ctx.elem_del(&c, GROUP, name);
        c.meta.stream.groups = c.meta.stream.groups.saturating_sub(1);
        // Saving the metadata also wakes XREADGROUP clients blocked on the group: they
        // rerun and answer NOGROUP.
        ctx.coll_save(&c)?;
        ctx.notify(STREAM_EVENTS, "xgroup-destroy", key);
        return Ok(Reply::Int(1));
    }
    let consumer = &a[4];
    if is(sub, "CREATECONSUMER") {
        let created = group.ensure_consumer(ctx, &c, consumer, ctx.now, false)?;
        if created {
            group.save(ctx, &c)?;
            ctx.notify(STREAM_EVENTS, "xgroup-createconsumer", key);
        }
        return Ok(Reply::Int(created as i64));
    }
    // DELCONSUMER: its pending entries leave the PEL with it.
    if group.consumer(ctx, &c, consumer)?.is_none() {
        return Ok(Reply::Int(0));
    }
    let owned = pel_scan(ctx, &c, name, StreamId::MIN, StreamId::MAX, 0, |_, p| {
        p.consumer == consumer[..]
    })?;
    for (id, p) in &owned {
        group.release(ctx, &c, *id, p)?;
    }
    group.consumers.insert(consumer.clone(), (None, true));
    group.g.consumers = group.g.consumers.saturating_sub(1);
    group.save(ctx, &c)?;
    ctx.notify(STREAM_EVENTS, "xgroup-delconsumer", key);
    Ok(Reply::Int(owned.len() as i64))
}

pub fn xack(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(c) = streams::load(ctx, &a[1])? else {
        return Ok(Reply::Int(0));
    };
    let Some(mut group) = GroupState::load(ctx, &c, &a[2])? else {
        return Ok(Reply::Int(0));
    };
    let ids = a[3..]
        .iter()
        .map(|x| strict_id(x))
        .collect::<Result<Vec<_>, _>>()?;
    let mut acked = 0;
    for id in ids {
        if let Some(p) = pel_get(ctx, &c, &group.name, id)? {
            group.release(ctx, &c, id, &p)?;
            acked += 1;
        }
    }
    if acked > 0 {
        group.save(ctx, &c)?;
    }
    Ok(Reply::Int(acked))
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

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

fn kv(k: &'static str, v: Reply) -> (Reply, Reply) {
    (Reply::bulk(Bytes::from_static(k.as_bytes())), v)
}

fn id_bulk(id: StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

fn lag_reply(c: &Coll, g: &Group) -> Reply {
    enc::group_lag(&c.meta.stream, c.meta.size, g).map_or(Reply::Null, Reply::Int)
}

fn entries_read_reply(g: &Group) -> Reply {
    g.entries_read.map_or(Reply::Null, |n| Reply::Int(n as i64))
}

pub fn xinfo(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = &a[1];
    if is(sub, "HELP") {
        if a.len() != 2 {
            return Err(subcommand_error(a, "XINFO"));
        }
        return Ok(super::connection::help_reply(XINFO_HELP));
    }
    let known = ["CONSUMERS", "GROUPS", "STREAM"];
    if a.len() < 3 || !known.iter().any(|k| is(sub, k)) {
        return Err(subcommand_error(a, "XINFO"));
    }
    let key = &a[2];
    let Some(c) = streams::load(ctx, key)? else {
        return Err(err(errors::NO_SUCH_KEY));
    };
    let now = ctx.now;
    if is(sub, "CONSUMERS") && a.len() == 4 {
        if GroupState::load(ctx, &c, &a[3])?.is_none() {
            return Err(no_group_for_key(key, &a[3]));
        }
        let list = consumers_of(ctx, &c, &a[3])?
            .into_iter()
            .map(|(n, cons)| {
                Reply::Map(vec![
                    kv("name", Reply::Bulk(n)),
                    kv("pending", Reply::Int(cons.pending as i64)),
                    kv(
                        "idle",
                        Reply::Int(now.saturating_sub(cons.seen_time) as i64),
                    ),
                ])
            })
            .collect();
        return Ok(Reply::Array(list));
    }
    if is(sub, "GROUPS") && a.len() == 3 {
        let list = groups_of(ctx, &c)?
            .into_iter()
            .map(|(n, g)| {
                Reply::Map(vec![
                    kv("name", Reply::Bulk(n)),
                    kv("consumers", Reply::Int(g.consumers as i64)),
                    kv("pending", Reply::Int(g.pending as i64)),
                    kv("last-delivered-id", id_bulk(g.last_id)),
                    kv("entries-read", entries_read_reply(&g)),
                    kv("lag", lag_reply(&c, &g)),
                ])
            })
            .collect();
        return Ok(Reply::Array(list));
    }
    if !is(sub, "STREAM") {
        return Err(subcommand_error(a, "XINFO"));
    }
    let opts = &a[3..];
    let (full, count) = match opts.len() {
        0 => (false, 0),
        1 if is(&opts[0], "FULL") => (true, 10),
        3 if is(&opts[0], "FULL") && is(&opts[1], "COUNT") => {
            let n = int_arg(&opts[2])?;
            (true, if n < 0 { 10 } else { n as u64 })
        }
        _ => return Err(subcommand_error(a, "XINFO")),
    };
    let s = c.meta.stream;
    // The emulated nodes from the first entry's to the tail node.
    let head = streams::range(ctx, &c, StreamId::MIN, StreamId::MAX, 1, false)?;
    let nodes = match head.first() {
        Some((_, v)) => {
            let (first_node, _) = enc::decode_entry(v).map_err(corrupt)?;
            s.node.saturating_sub(first_node).saturating_add(1)
        }
        None => 0,
    };
    let mut m = vec![
        kv("length", Reply::Int(c.meta.size as i64)),
        // Strata keeps one record per entry, not redis' radix tree of listpacks: these
        // report the emulated nodes (see `streams`), and about twice as many tree nodes.
        kv("radix-tree-keys", Reply::Int(nodes as i64)),
        kv(
            "radix-tree-nodes",
            Reply::Int(nodes.saturating_mul(2).max(1) as i64),
        ),
        kv("last-generated-id", id_bulk(s.last_id)),
        kv("max-deleted-entry-id", id_bulk(s.max_deleted)),
        kv("entries-added", Reply::Int(s.entries_added as i64)),
        kv("recorded-first-entry-id", id_bulk(s.first_id)),
    ];
    if !full {
        m.push(kv("groups", Reply::Int(s.groups as i64)));
        let first = streams::range(ctx, &c, StreamId::MIN, StreamId::MAX, 1, false)?;
        let last = streams::range(ctx, &c, StreamId::MIN, StreamId::MAX, 1, true)?;
        for (k, e) in [("first-entry", first), ("last-entry", last)] {
            let v = match e.first() {
                Some((id, v)) => entry_reply(*id, v)?,
                None => Reply::Null,
            };
            m.push(kv(k, v));
        }
        return Ok(Reply::Map(m));
    }
    let entries = streams::range(ctx, &c, StreamId::MIN, StreamId::MAX, count, false)?;
    m.push(kv("entries", streams::entries_reply(&entries)?));
    let mut groups = Vec::new();
    for (name, g) in groups_of(ctx, &c)? {
        let pel = pel_scan(
            ctx,
            &c,
            &name,
            StreamId::MIN,
            StreamId::MAX,
            count as usize,
            |_, _| true,
        )?;
        let pending = pel
            .iter()
            .map(|(id, p)| {
                Reply::Array(vec![
                    id_bulk(*id),
                    Reply::Bulk(Bytes::copy_from_slice(&p.consumer)),
                    Reply::Int(p.delivery_time as i64),
                    Reply::Int(p.delivery_count as i64),
                ])
            })
            .collect();
        let mut consumers = Vec::new();
        for (cname, cons) in consumers_of(ctx, &c, &name)? {
            let own = pel_scan(
                ctx,
                &c,
                &name,
                StreamId::MIN,
                StreamId::MAX,
                count as usize,
                |_, p| p.consumer == cname[..],
            )?;
            consumers.push(Reply::Map(vec![
                kv("name", Reply::Bulk(cname)),
                kv("seen-time", Reply::Int(cons.seen_time as i64)),
                kv("pel-count", Reply::Int(cons.pending as i64)),
                kv(
                    "pending",
                    Reply::Array(
                        own.into_iter()
                            .map(|(id, p)| {
                                Reply::Array(vec![
                                    id_bulk(id),
                                    Reply::Int(p.delivery_time as i64),
                                    Reply::Int(p.delivery_count as i64),
                                ])
                            })
                            .collect(),
                    ),
                ),
            ]));
        }
        groups.push(Reply::Map(vec![
            kv("name", Reply::Bulk(name)),
            kv("last-delivered-id", id_bulk(g.last_id)),
            kv("entries-read", entries_read_reply(&g)),
            kv("lag", lag_reply(&c, &g)),
            kv("pel-count", Reply::Int(g.pending as i64)),
            kv("pending", Reply::Array(pending)),
            kv("consumers", Reply::Array(consumers)),
        ]));
    }
    m.push(kv("groups", Reply::Array(groups)));
    Ok(Reply::Map(m))
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
