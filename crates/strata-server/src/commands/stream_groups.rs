//! Stream consumer groups: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP),
//! XACK, and [`GroupState`], through which XREADGROUP, XACK and the PEL commands
//! (`stream_pending`) change a group.
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

use super::errors::err;
use super::streams::{self, corrupt, strict_id, STREAM};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::stream::{
    self as enc, consumer_rest, group_prefix, pel_rest, Consumer, Group, IdArg, Pending, StreamId,
};
use crate::collections::subkey::{CONSUMER, GROUP, PEL};
pub(super) use crate::notify::STREAM as STREAM_EVENTS;
use crate::resp::Reply;

pub(super) fn subcommand_error(a: &[Bytes], cmd: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {cmd} HELP.",
        String::from_utf8_lossy(&a[1][..a[1].len().min(128)])
    ))
}

pub(super) fn no_group(key: &[u8], group: &[u8], tail: &str) -> Reply {
    Reply::error(format!(
        "NOGROUP No such key '{}' or consumer group '{}'{tail}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

pub(super) fn no_group_for_key(key: &[u8], group: &[u8]) -> Reply {
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
pub(super) fn consumers_of(
    ctx: &Ctx<'_>,
    c: &Coll,
    group: &[u8],
) -> Result<Vec<(Bytes, Consumer)>, Reply> {
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
pub(super) fn groups_of(ctx: &Ctx<'_>, c: &Coll) -> Result<Vec<(Bytes, Group)>, Reply> {
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

const NO_STREAM: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for \
     CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";

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
    let mut c = match streams::load(ctx, key)? {
        Some(c) => c,
        None if create && mkstream => ctx.coll_or_new(key, STREAM)?,
        None => return Err(err(NO_STREAM)),
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
