//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HDEL, HLEN, HEXISTS, HKEYS, HVALS,
//! HINCRBY, HINCRBYFLOAT, HSTRLEN, HRANDFIELD, HSCAN.
//!
//! Invariants: a hash is a collection (see `collections`): one element sub-key per field, value
//! = the field's value; every write command loads the metadata, stages its element writes and
//! saves the metadata once (one batch); sizes always equal the number of live fields (new fields
//! are told apart from updates by reading them, and a field named twice in one command counts
//! once). Replies and error texts are Redis 7's. Depends on `commands` helpers,
//! `collections::access`, `numbers`, `glob`, `cursor`.
//! Must not depend on the network layer (`connection`, `server::Server`) or touch the engine
//! except through `Ctx` and `collections::access`.

use std::collections::HashMap;

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::subkey::ELEM;
use crate::glob;
use crate::numbers::{parse_i64, push_i64};
use crate::redis_float::LongDouble;
use crate::resp::Reply;
use crate::value::ValueType;

const HASH: ValueType = ValueType::Hash;

/// Sets fields (later pairs win); returns how many were new.
fn set_fields(ctx: &mut Ctx<'_>, key: &[u8], pairs: &[Bytes]) -> Result<i64, Reply> {
    let mut c = ctx.coll_or_new(key, HASH)?;
    let mut seen: HashMap<&[u8], ()> = HashMap::new();
    let mut added = 0;
    for p in pairs.chunks_exact(2) {
        let (f, v) = (&p[0], &p[1]);
        if seen.insert(f, ()).is_none() && ctx.elem_get(&c, ELEM, f)?.is_none() {
            added += 1;
        }
        ctx.elem_put(&c, ELEM, f, v)?;
    }
    c.meta.size += added as u64;
    ctx.coll_save(&c)?;
    Ok(added)
}

pub fn hset(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if !a.len().is_multiple_of(2) {
        return Err(errors::wrong_args("hset"));
    }
    Ok(Reply::Int(set_fields(ctx, &a[1], &a[2..])?))
}

pub fn hmset(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if !a.len().is_multiple_of(2) {
        return Err(errors::wrong_args("hmset"));
    }
    set_fields(ctx, &a[1], &a[2..])?;
    Ok(Reply::Ok)
}

pub fn hsetnx(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut c = ctx.coll_or_new(&a[1], HASH)?;
    if c.meta.size > 0 && ctx.elem_get(&c, ELEM, &a[2])?.is_some() {
        return Ok(Reply::Int(0));
    }
    ctx.elem_put(&c, ELEM, &a[2], &a[3])?;
    c.meta.size += 1;
    ctx.coll_save(&c)?;
    Ok(Reply::Int(1))
}

fn field(ctx: &Ctx<'_>, c: &Option<Coll>, f: &[u8]) -> Result<Option<Bytes>, Reply> {
    match c {
        Some(c) => ctx.elem_get(c, ELEM, f),
        None => Ok(None),
    }
}

pub fn hget(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], HASH)?;
    Ok(Reply::opt_bulk(field(ctx, &c, &a[2])?))
}

pub fn hmget(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], HASH)?;
    let mut out = Vec::with_capacity(a.len() - 2);
    for f in &a[2..] {
        out.push(Reply::opt_bulk(field(ctx, &c, f)?));
    }
    Ok(Reply::Array(out))
}

/// Every (field, value) of the hash at `key`, in field order.
fn all(ctx: &Ctx<'_>, key: &[u8]) -> Result<Vec<(Bytes, Bytes)>, Reply> {
    let Some(c) = ctx.coll(key, HASH)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(c.meta.size.min(1 << 16) as usize);
    ctx.elems(&c, ELEM, false, None, |f, v| {
        out.push((Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)));
        Ok(true)
    })?;
    Ok(out)
}

pub fn hgetall(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Map(
        all(ctx, &a[1])?
            .into_iter()
            .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)))
            .collect(),
    ))
}

pub fn hkeys(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(
        all(ctx, &a[1])?
            .into_iter()
            .map(|(f, _)| Reply::Bulk(f))
            .collect(),
    ))
}

pub fn hvals(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(
        all(ctx, &a[1])?
            .into_iter()
            .map(|(_, v)| Reply::Bulk(v))
            .collect(),
    ))
}

pub fn hdel(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(mut c) = ctx.coll(&a[1], HASH)? else {
        return Ok(Reply::Int(0));
    };
    let mut seen: HashMap<&[u8], ()> = HashMap::new();
    let mut n = 0;
    for f in &a[2..] {
        if seen.insert(f, ()).is_none() && ctx.elem_get(&c, ELEM, f)?.is_some() {
            ctx.elem_del(&c, ELEM, f);
            n += 1;
        }
    }
    c.meta.size = c.meta.size.saturating_sub(n);
    if n > 0 {
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(n as i64))
}

pub fn hlen(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(
        ctx.coll(&a[1], HASH)?.map_or(0, |c| c.meta.size as i64),
    ))
}

pub fn hexists(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], HASH)?;
    Ok(Reply::Int(field(ctx, &c, &a[2])?.is_some() as i64))
}

pub fn hstrlen(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], HASH)?;
    Ok(Reply::Int(
        field(ctx, &c, &a[2])?.map_or(0, |v| v.len() as i64),
    ))
}

pub fn hincrby(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = int_arg(&a[3])?;
    let mut c = ctx.coll_or_new(&a[1], HASH)?;
    let old = if c.meta.size > 0 {
        ctx.elem_get(&c, ELEM, &a[2])?
    } else {
        None
    };
    let cur = match &old {
        Some(v) => parse_i64(v).ok_or_else(|| err("ERR hash value is not an integer"))?,
        None => 0,
    };
    let new = cur.checked_add(by).ok_or_else(|| err(errors::OVERFLOW))?;
    let mut text = Vec::with_capacity(20);
    push_i64(&mut text, new);
    ctx.elem_put(&c, ELEM, &a[2], &text)?;
    if old.is_none() {
        c.meta.size += 1;
    }
    ctx.coll_save(&c)?;
    Ok(Reply::Int(new))
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = LongDouble::parse(&a[3]).ok_or_else(|| err(errors::NOT_FLOAT))?;
    if !by.is_finite() {
        return Err(err("ERR value is NaN or Infinity"));
    }
    let mut c = ctx.coll_or_new(&a[1], HASH)?;
    let old = if c.meta.size > 0 {
        ctx.elem_get(&c, ELEM, &a[2])?
    } else {
        None
    };
    let cur = match &old {
        Some(v) => LongDouble::parse(v).ok_or_else(|| err("ERR hash value is not a float"))?,
        None => LongDouble::from_i64(0),
    };
    // As redis: long double arithmetic, printed %.17Lf trimmed (see `redis_float`).
    let new = cur
        .checked_add(&by)
        .ok_or_else(|| err(errors::NAN_OR_INF))?;
    let text = new.to_human();
    ctx.elem_put(&c, ELEM, &a[2], text.as_bytes())?;
    if old.is_none() {
        c.meta.size += 1;
    }
    ctx.coll_save(&c)?;
    Ok(Reply::bulk(text.into_bytes()))
}

pub fn hrandfield(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (count, withvalues) = match a.len() {
        2 => (None, false),
        3 => (Some(int_arg(&a[2])?), false),
        4 if is(&a[3], "WITHVALUES") => (Some(int_arg(&a[2])?), true),
        _ => return Err(err(errors::SYNTAX)),
    };
    let items = all(ctx, &a[1])?;
    let picks = super::sets::random_picks(items.len(), count)?;
    let Some(picks) = picks else {
        return Ok(Reply::opt_bulk(
            super::sets::random_index(items.len()).map(|i| items[i].0.clone()),
        ));
    };
    let resp3 = ctx.session.protocol == crate::resp::Protocol::Resp3;
    let mut out = Vec::new();
    for i in picks {
        let (f, v) = (
            Reply::Bulk(items[i].0.clone()),
            Reply::Bulk(items[i].1.clone()),
        );
        match (withvalues, resp3) {
            (true, true) => out.push(Reply::Array(vec![f, v])),
            (true, false) => out.extend([f, v]),
            (false, _) => out.push(f),
        }
    }
    Ok(Reply::Array(out))
}

/// Parsed `cursor [MATCH pattern] [COUNT count]` (and NOVALUES for HSCAN).
pub struct ScanArgs<'a> {
    pub cursor: u64,
    pub pattern: Option<&'a Bytes>,
    pub count: usize,
    pub novalues: bool,
}

/// Parses the arguments of HSCAN/SSCAN/ZSCAN from `a[2]` (the cursor) on.
pub fn scan_args<'a>(a: &'a [Bytes], allow_novalues: bool) -> Result<ScanArgs<'a>, Reply> {
    let cursor = crate::numbers::parse_u64(&a[2]).ok_or_else(|| err(errors::INVALID_CURSOR))?;
    let mut s = ScanArgs {
        cursor,
        pattern: None,
        count: 10,
        novalues: false,
    };
    let mut i = 3;
    while i < a.len() {
        if is(&a[i], "COUNT") && i + 1 < a.len() {
            let c = int_arg(&a[i + 1])?;
            if c < 1 {
                return Err(err(errors::SYNTAX));
            }
            s.count = usize::try_from(c).unwrap_or(usize::MAX);
            i += 2;
        } else if is(&a[i], "MATCH") && i + 1 < a.len() {
            s.pattern = Some(&a[i + 1]);
            i += 2;
        } else if allow_novalues && is(&a[i], "NOVALUES") {
            s.novalues = true;
            i += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    Ok(s)
}

/// One page of an element scan of `c`: visits up to `count` elements from the cursor's
/// position, pushing replies through `emit(rest, value, out)` for those matching `pattern`
/// (matched against what `name(rest)` returns); returns the reply `[next cursor, items]`.
pub fn scan_page(
    ctx: &Ctx<'_>,
    c: Option<&Coll>,
    s: &ScanArgs<'_>,
    mut emit: impl FnMut(&[u8], &[u8], &mut Vec<Reply>) -> Result<(), Reply>,
) -> CmdResult {
    let mut out = Vec::new();
    let mut next = 0u64;
    if let Some(c) = c {
        let from = ctx.shared.cursors.resume(s.cursor);
        let mut seen = 0usize;
        let mut resume: Option<Vec<u8>> = None;
        ctx.elems(c, ELEM, false, from.as_deref(), |rest, v| {
            if seen >= s.count {
                resume = Some(rest.to_vec());
                return Ok(false);
            }
            seen += 1;
            if s.pattern.is_none_or(|p| glob::matches(p, rest, false)) {
                emit(rest, v, &mut out)?;
            }
            Ok(true)
        })?;
        if let Some(r) = resume {
            next = ctx.shared.cursors.issue(r);
        }
    }
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string().into_bytes()),
        Reply::Array(out),
    ]))
}

pub fn hscan(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let s = scan_args(a, true)?;
    let c = ctx.coll(&a[1], HASH)?;
    let novalues = s.novalues;
    scan_page(ctx, c.as_ref(), &s, |f, v, out| {
        out.push(Reply::Bulk(Bytes::copy_from_slice(f)));
        if !novalues {
            out.push(Reply::Bulk(Bytes::copy_from_slice(v)));
        }
        Ok(())
    })
}
