//! Stream commands without consumer groups: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM,
//! XSETID, and the helpers the group and read commands share (ID arguments, range reads,
//! entry replies, trimming).
//!
//! Invariants: a stream is a collection (see `collections`) whose entries are ELEM sub-keys
//! keyed by their ID (big-endian, so engine order is ID order) and whose metadata holds
//! redis' stream-wide state (`meta::StreamMeta`): last generated ID, first entry ID, largest
//! XDEL'd ID, entries ever added, group count. Every command that changes entries keeps those
//! in step and saves the metadata in the same batch; a range read seeks to its first ID and
//! stops at its last (or its COUNT), so it never loads the whole stream. Approximate trimming
//! (`~`) removes whole nodes from the head, as redis does: every entry records the node redis
//! would have put it in (`stream::place_entry`), so `MAXLEN ~ 0` empties a small stream and
//! `MAXLEN ~ 1000` keeps at least 1000 entries, as in redis.
//! Depends on `commands` helpers and `collections::{access, stream}`; must not depend on the
//! network layer or touch the engine except through `Ctx`.

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::stream::{self, IdArg, StreamId};
use crate::collections::subkey::ELEM;
use crate::resp::Reply;
use crate::store::StoreError;
use crate::value::ValueType;

pub(super) const STREAM: ValueType = ValueType::Stream;

/// The default LIMIT of an approximate trim (redis: 100 nodes' worth of entries).
const APPROX_LIMIT: u64 = 100 * stream::NODE_MAX_ENTRIES;

pub(super) fn invalid_id() -> Reply {
    err("ERR Invalid stream ID specified as stream command argument")
}

/// A strict ID argument (`ms-seq` or `ms`; no `-`, `+` or `*`).
pub(super) fn strict_id(a: &[u8]) -> Result<StreamId, Reply> {
    match stream::parse_id(a, 0, true, false) {
        Some(IdArg::Id(id)) => Ok(id),
        _ => Err(invalid_id()),
    }
}

/// An interval bound: `-`, `+`, `ms`, `ms-seq`, or `(` and a strict ID (exclusive). A start
/// (`missing_seq` 0) moves past an exclusive bound, an end (`u64::MAX`) before it.
pub(super) fn interval_id(a: &[u8], missing_seq: u64) -> Result<StreamId, Reply> {
    if a.len() > 1 && a[0] == b'(' {
        let id = match stream::parse_id(&a[1..], missing_seq, true, false) {
            Some(IdArg::Id(id)) => id,
            _ => return Err(invalid_id()),
        };
        let moved = if missing_seq == 0 {
            id.incr()
        } else {
            id.decr()
        };
        return moved.ok_or_else(|| {
            err(if missing_seq == 0 {
                "ERR invalid start ID for the interval"
            } else {
                "ERR invalid end ID for the interval"
            })
        });
    }
    match stream::parse_id(a, missing_seq, false, false) {
        Some(IdArg::Id(id)) => Ok(id),
        _ => Err(invalid_id()),
    }
}

pub(super) fn corrupt(e: crate::value::DecodeError) -> Reply {
    Reply::from(StoreError::from(e))
}

/// `[id, [field, value, ...]]`.
pub(super) fn entry_reply(id: StreamId, value: &[u8]) -> Result<Reply, Reply> {
    let (_, pairs) = stream::decode_entry(value).map_err(corrupt)?;
    Ok(Reply::Array(vec![
        Reply::Bulk(id.to_bytes()),
        Reply::Array(
            pairs
                .into_iter()
                .map(|p| Reply::Bulk(Bytes::copy_from_slice(p)))
                .collect(),
        ),
    ]))
}

/// Entries with IDs in `[start, end]` in ID order (from `end` down with `rev`), at most
/// `count` of them (0: all).
pub(super) fn range(
    ctx: &Ctx<'_>,
    c: &Coll,
    start: StreamId,
    end: StreamId,
    count: u64,
    rev: bool,
) -> Result<Vec<(StreamId, Bytes)>, Reply> {
    let mut out = Vec::new();
    if start > end || c.meta.size == 0 {
        return Ok(out);
    }
    let from = if rev { end.to_key() } else { start.to_key() };
    ctx.elems(c, ELEM, rev, Some(&from), |rest, v| {
        let id = StreamId::from_key(rest).map_err(corrupt)?;
        if (!rev && id > end) || (rev && id < start) {
            return Ok(false);
        }
        out.push((id, Bytes::copy_from_slice(v)));
        Ok(count == 0 || (out.len() as u64) < count)
    })?;
    Ok(out)
}

/// The entry with ID `id`, if it exists.
pub(super) fn entry_at(ctx: &Ctx<'_>, c: &Coll, id: StreamId) -> Result<Option<Bytes>, Reply> {
    ctx.elem_get(c, ELEM, &id.to_key())
}

/// The entries of `range` as a reply.
pub(super) fn entries_reply(entries: &[(StreamId, Bytes)]) -> Result<Reply, Reply> {
    Ok(Reply::Array(
        entries
            .iter()
            .map(|(id, v)| entry_reply(*id, v))
            .collect::<Result<_, _>>()?,
    ))
}

/// The first entry at or after `from`, for the metadata's first ID after deletions.
fn first_from(ctx: &Ctx<'_>, c: &Coll, from: StreamId) -> Result<StreamId, Reply> {
    Ok(range(ctx, c, from, StreamId::MAX, 1, false)?
        .first()
        .map_or(StreamId::MIN, |(id, _)| *id))
}

/// The stream at `key`: `None` if absent, WRONGTYPE for another type.
pub(super) fn load(ctx: &Ctx<'_>, key: &[u8]) -> Result<Option<Coll>, Reply> {
    ctx.coll(key, STREAM)
}

/// How XADD and XTRIM trim.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Trim {
    pub strategy: Option<Strategy>,
    pub approx: bool,
    /// Most entries removed (0: no limit).
    pub limit: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Strategy {
    MaxLen(u64),
    MinId(StreamId),
}

/// What XADD's options said besides trimming.
struct AddArgs {
    trim: Trim,
    nomkstream: bool,
    /// `None`: `*`.
    id: Option<IdArg>,
    /// Position of the ID argument.
    id_at: usize,
}

/// Parses XADD's or XTRIM's options from `a[2]` (redis' `streamParseAddOrTrimArgsOrReply`).
fn parse_add_or_trim(a: &[Bytes], xadd: bool) -> Result<AddArgs, Reply> {
    let mut t = Trim::default();
    let mut nomkstream = false;
    let mut limit_given = false;
    let mut id = None;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = &a[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "MAXLEN") || is(opt, "MINID")) && more > 0 {
            if t.strategy.is_some() {
                return Err(err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            t.approx = false;
            if more >= 2 && (a[i + 1][..] == b"~"[..] || a[i + 1][..] == b"="[..]) {
                t.approx = a[i + 1][..] == b"~"[..];
                i += 1;
            }
            let v = &a[i + 1];
            t.strategy = Some(if is(opt, "MAXLEN") {
                let n = int_arg(v)?;
                if n < 0 {
                    return Err(err("ERR The MAXLEN argument must be >= 0."));
                }
                Strategy::MaxLen(n as u64)
            } else {
                Strategy::MinId(strict_id(v)?)
            });
            i += 2;
            continue;
        } else if is(opt, "LIMIT") && more > 0 {
            let n = int_arg(&a[i + 1])?;
            if n < 0 {
                return Err(err("ERR The LIMIT argument must be >= 0."));
            }
            t.limit = n as u64;
            limit_given = true;
            i += 2;
            continue;
        } else if xadd && is(opt, "NOMKSTREAM") {
            nomkstream = true;
        } else if xadd {
            id = Some(stream::parse_id(opt, 0, true, true).ok_or_else(invalid_id)?);
            break;
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 1;
    }
    if t.limit > 0 && t.strategy.is_none() {
        return Err(err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && t.strategy.is_none() {
        return Err(err(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit_given {
        if !t.approx {
            return Err(err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if t.approx {
        t.limit = APPROX_LIMIT;
    }
    Ok(AddArgs {
        trim: t,
        nomkstream,
        id,
        id_at: i,
    })
}

/// Trims `c` from its head as `t` says; returns the entries removed. The caller saves `c`.
/// Exact trimming removes entries one by one while the strategy asks; approximate trimming
/// removes whole nodes only, stops at the first node that cannot go whole, and never removes
/// more than `t.limit` entries (redis' `streamTrim`).
pub(super) fn trim(ctx: &mut Ctx<'_>, c: &mut Coll, t: &Trim) -> Result<u64, Reply> {
    let Some(strategy) = t.strategy else {
        return Ok(0);
    };
    if let Strategy::MaxLen(max) = strategy {
        if c.meta.size <= max {
            return Ok(0);
        }
    }
    let mut len = c.meta.size;
    // Whether the head may lose `n` more entries, the last of them `last`.
    let may_go = |len: u64, n: u64, last: StreamId| match strategy {
        Strategy::MaxLen(max) => len >= max + n,
        Strategy::MinId(min) => last < min,
    };
    let mut gone: Vec<StreamId> = Vec::new();
    // Approximate: the current node's entries, decided when the node ends.
    let mut node: Option<(u64, Vec<StreamId>)> = None;
    let mut stopped = false;
    let decide =
        |node: &mut Option<(u64, Vec<StreamId>)>, gone: &mut Vec<StreamId>, len: &mut u64| {
            let Some((_, ids)) = node.take() else {
                return true;
            };
            let n = ids.len() as u64;
            let last = *ids.last().expect("a node has entries");
            let within_limit = t.limit == 0 || gone.len() as u64 + n <= t.limit;
            if within_limit && may_go(*len, n, last) {
                *len -= n;
                gone.extend(ids);
                true
            } else {
                false
            }
        };
    ctx.elems(c, ELEM, false, None, |rest, v| {
        let id = StreamId::from_key(rest).map_err(corrupt)?;
        if !t.approx {
            if !may_go(len, 1, id) {
                return Ok(false);
            }
            len -= 1;
            gone.push(id);
            return Ok(true);
        }
        let (n, _) = stream::decode_entry(v).map_err(corrupt)?;
        if node.as_ref().is_some_and(|(cur, _)| *cur != n)
            && !decide(&mut node, &mut gone, &mut len)
        {
            stopped = true;
            return Ok(false);
        }
        node.get_or_insert_with(|| (n, Vec::new())).1.push(id);
        Ok(true)
    })?;
    if t.approx && !stopped {
        decide(&mut node, &mut gone, &mut len);
    }
    for id in &gone {
        ctx.elem_del(c, ELEM, &id.to_key());
    }
    c.meta.size = len;
    if !gone.is_empty() {
        c.meta.stream.first_id = if len == 0 {
            StreamId::MIN
        } else {
            first_from(ctx, c, StreamId::MIN)?
        };
    }
    Ok(gone.len() as u64)
}

pub fn xadd(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let args = parse_add_or_trim(a, true)?;
    let fields = &a[(args.id_at + 1).min(a.len())..];
    if fields.len() < 2 || fields.len() % 2 == 1 {
        return Err(errors::wrong_args("xadd"));
    }
    if args.id == Some(IdArg::Id(StreamId::MIN)) {
        return Err(err("ERR The ID specified in XADD must be greater than 0-0"));
    }
    let mut c = match load(ctx, &a[1])? {
        Some(c) => c,
        None if args.nomkstream => return Ok(Reply::Null),
        None => ctx.coll_or_new(&a[1], STREAM)?,
    };
    let last = c.meta.stream.last_id;
    if last == StreamId::MAX {
        return Err(err(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let smaller =
        || err("ERR The ID specified in XADD is equal or smaller than the target stream top item");
    let id = match args.id {
        None if ctx.now > last.ms => StreamId::new(ctx.now, 0),
        None => last.incr().ok_or_else(smaller)?,
        Some(IdArg::Id(id)) => id,
        Some(IdArg::MsAny(ms)) if ms == last.ms => {
            StreamId::new(ms, last.seq.checked_add(1).ok_or_else(smaller)?)
        }
        Some(IdArg::MsAny(ms)) => StreamId::new(ms, 0),
    };
    if id <= last {
        return Err(smaller());
    }
    let payload = fields.iter().map(|f| f.len() as u64).sum();
    let node = stream::place_entry(
        &mut c.meta.stream,
        c.meta.size,
        payload,
        fields.len() as u64,
    );
    ctx.elem_put(&c, ELEM, &id.to_key(), &stream::encode_entry(node, fields))?;
    c.meta.size += 1;
    let s = &mut c.meta.stream;
    s.entries_added += 1;
    s.last_id = id;
    if c.meta.size == 1 {
        s.first_id = id;
    }
    if trim(ctx, &mut c, &args.trim)? > 0 {
        ctx.notify(crate::notify::STREAM, "xtrim", &a[1]);
    }
    ctx.coll_save(&c)?;
    Ok(Reply::Bulk(id.to_bytes()))
}

fn range_generic(ctx: &mut Ctx<'_>, a: &[Bytes], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
    let start = interval_id(start_arg, 0)?;
    let end = interval_id(end_arg, u64::MAX)?;
    let mut count: Option<u64> = None;
    let mut i = 4;
    while i < a.len() {
        if is(&a[i], "COUNT") && i + 1 < a.len() {
            count = Some(int_arg(&a[i + 1])?.max(0) as u64);
            i += 2;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    let Some(c) = load(ctx, &a[1])? else {
        return Ok(Reply::Array(vec![]));
    };
    if count == Some(0) {
        return Ok(Reply::NullArray);
    }
    entries_reply(&range(ctx, &c, start, end, count.unwrap_or(0), rev)?)
}

pub fn xrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(ctx, a, false)
}

pub fn xrevrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(ctx, a, true)
}

pub fn xlen(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(
        load(ctx, &a[1])?.map_or(0, |c| c.meta.size as i64),
    ))
}

pub fn xdel(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    // The key first: XDEL on a missing key answers 0 whatever its IDs, as in redis.
    let Some(mut c) = load(ctx, &a[1])? else {
        return Ok(Reply::Int(0));
    };
    let ids = a[2..]
        .iter()
        .map(|x| strict_id(x))
        .collect::<Result<Vec<_>, _>>()?;
    let mut deleted = 0;
    let mut first_gone = false;
    for id in ids {
        if entry_at(ctx, &c, id)?.is_none() {
            continue;
        }
        ctx.elem_del(&c, ELEM, &id.to_key());
        c.meta.size -= 1;
        deleted += 1;
        let s = &mut c.meta.stream;
        first_gone |= id == s.first_id;
        s.max_deleted = s.max_deleted.max(id);
    }
    if deleted > 0 {
        // Redis drops a node whose entries are all deleted: when that was the tail node, the
        // next entry starts a new one.
        if let Some((_, v)) = range(ctx, &c, StreamId::MIN, StreamId::MAX, 1, true)?.first() {
            let (node, _) = stream::decode_entry(v).map_err(corrupt)?;
            if node != c.meta.stream.node {
                c.meta.stream.node_entries = stream::NODE_MAX_ENTRIES;
            }
        }
        c.meta.stream.first_id = if c.meta.size == 0 {
            StreamId::MIN
        } else if first_gone {
            first_from(ctx, &c, c.meta.stream.first_id)?
        } else {
            c.meta.stream.first_id
        };
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(deleted))
}

pub fn xtrim(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let args = parse_add_or_trim(a, false)?;
    let Some(mut c) = load(ctx, &a[1])? else {
        return Ok(Reply::Int(0));
    };
    let n = trim(ctx, &mut c, &args.trim)?;
    if n > 0 {
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(n as i64))
}

pub fn xsetid(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let id = strict_id(&a[2])?;
    let mut entries_added = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < a.len() {
        if is(&a[i], "ENTRIESADDED") && i + 1 < a.len() {
            let n = int_arg(&a[i + 1])?;
            if n < 0 {
                return Err(err("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if is(&a[i], "MAXDELETEDID") && i + 1 < a.len() {
            max_deleted = strict_id(&a[i + 1])?;
            if id < max_deleted {
                return Err(err(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 2;
    }
    let Some(mut c) = load(ctx, &a[1])? else {
        return Err(err(errors::NO_SUCH_KEY));
    };
    if c.meta.size > 0 {
        // The last entry's ID (not the last generated one: XDEL may have removed that).
        let top = range(ctx, &c, StreamId::MIN, StreamId::MAX, 1, true)?;
        if top.first().is_some_and(|(top, _)| id < *top) {
            return Err(err(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| n < c.meta.size) {
            return Err(err(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    let s = &mut c.meta.stream;
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if !max_deleted.is_zero() {
        s.max_deleted = max_deleted;
    }
    ctx.coll_save(&c)?;
    Ok(Reply::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    fn msg(r: Reply) -> String {
        match r {
            Reply::Error(e) => e.into_owned(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn xadd_options_parse_as_redis_parses_them() {
        let p = |a: &[&str]| parse_add_or_trim(&args(a), true);
        let ok = p(&["xadd", "s", "MAXLEN", "~", "10", "*", "f", "v"]).unwrap();
        assert_eq!(ok.trim.strategy, Some(Strategy::MaxLen(10)));
        assert!(ok.trim.approx);
        assert_eq!(ok.trim.limit, APPROX_LIMIT, "the default LIMIT with ~");
        assert_eq!(ok.id, None);
        assert_eq!(ok.id_at, 5);
        let ok = p(&[
            "xadd",
            "s",
            "NOMKSTREAM",
            "MINID",
            "=",
            "5",
            "7-*",
            "f",
            "v",
        ])
        .unwrap();
        assert!(ok.nomkstream);
        assert_eq!(ok.trim.strategy, Some(Strategy::MinId(StreamId::new(5, 0))));
        assert_eq!(ok.id, Some(IdArg::MsAny(7)));
        let errors = [
            (
                &["xadd", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v"][..],
                "MAXLEN and MINID",
            ),
            (
                &["xadd", "s", "MAXLEN", "-1", "*", "f", "v"],
                "must be >= 0",
            ),
            (
                &["xadd", "s", "MAXLEN", "3", "LIMIT", "2", "*", "f", "v"],
                "without the special ~",
            ),
            (
                &["xadd", "s", "LIMIT", "2", "*", "f", "v"],
                "without specifying a trimming strategy",
            ),
            (&["xadd", "s", "bad", "f", "v"], "Invalid stream ID"),
        ];
        for (a, want) in errors {
            let got = msg(p(a).err().expect("an error"));
            assert!(got.contains(want), "{a:?}: {got}");
        }
        let got = msg(parse_add_or_trim(&args(&["xtrim", "s"]), false)
            .err()
            .unwrap());
        assert!(got.contains("XTRIM must be called with a trimming strategy"));
    }

    #[test]
    fn interval_bounds() {
        assert_eq!(interval_id(b"-", 0).unwrap(), StreamId::MIN);
        assert_eq!(interval_id(b"+", u64::MAX).unwrap(), StreamId::MAX);
        assert_eq!(
            interval_id(b"5", u64::MAX).unwrap(),
            StreamId::new(5, u64::MAX)
        );
        assert_eq!(interval_id(b"(5-1", 0).unwrap(), StreamId::new(5, 2));
        assert_eq!(
            interval_id(b"(5-0", u64::MAX).unwrap(),
            StreamId::new(4, u64::MAX)
        );
        assert!(msg(interval_id(b"(0-0", u64::MAX).unwrap_err()).contains("invalid end ID"));
        assert!(msg(interval_id(b"(-", 0).unwrap_err()).contains("Invalid stream ID"));
    }
}
