//! XINFO: STREAM [FULL [COUNT n]], GROUPS, CONSUMERS, HELP — redis 7.0's replies.
//!
//! Invariants: reads only; what it reports comes from the stream's metadata, the group and
//! consumer records and bounded scans (FULL lists at most COUNT entries and pending entries
//! per group and per consumer). `radix-tree-keys`/`-nodes` count the emulated nodes (see
//! `streams`). Depends on `commands::{streams, stream_groups}` and `collections`; must not
//! depend on the network layer or touch the engine except through `Ctx`.

use bytes::Bytes;

use super::errors::{self, err};
use super::stream_groups::{
    consumers_of, groups_of, no_group_for_key, pel_scan, subcommand_error, GroupState,
};
use super::streams::{self, corrupt, entry_reply};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::stream::{self as enc, Group, StreamId};
use crate::resp::Reply;

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
