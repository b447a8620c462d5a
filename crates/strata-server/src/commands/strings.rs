//! String commands: GET, SET (NX, XX, EX, PX, EXAT, PXAT, KEEPTTL, GET), SETNX, SETEX, PSETEX,
//! GETSET, GETDEL, GETEX, MGET, MSET, MSETNX, INCR, INCRBY, DECR, DECRBY, INCRBYFLOAT, APPEND,
//! STRLEN, GETRANGE, SETRANGE.
//!
//! Invariants: handlers read through `Ctx` and add writes to the segment (the executor holds the
//! stripes of the keys named in the command table and commits; see `locks`); TTLs follow Redis:
//! SET/GETSET/MSET/SETEX drop or replace the TTL, INCR*/APPEND/SETRANGE keep it; results never
//! exceed `proto-max-bulk-len`. Depends on `commands` helpers, `store`, `value`, `expiry`,
//! `numbers`.

use bytes::Bytes;

use super::errors::{self, err, invalid_expire};
use super::{int_arg, is, CmdResult, Ctx};
use crate::expiry::{absolute_ms, Unit};
use crate::numbers::{parse_i64, push_i64};
use crate::redis_float::LongDouble;
use crate::resp::Reply;
use crate::store::StoreError;
use crate::value::{self, ValueType};

const STRING: ValueType = ValueType::String;

/// Counts a keyspace hit or miss (applied when the segment completes; see `Pending`).
fn hit(ctx: &Ctx<'_>, found: bool) {
    let c = if found {
        &ctx.pending.hits
    } else {
        &ctx.pending.misses
    };
    c.set(c.get() + 1);
}

fn check_len(ctx: &Ctx<'_>, len: u64) -> Result<(), Reply> {
    if len > ctx.shared.limits.proto_max_bulk_len() {
        Err(err(errors::STRING_TOO_LONG))
    } else {
        Ok(())
    }
}

pub fn get(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let e = ctx.string(&a[1])?;
    hit(ctx, e.is_some());
    Ok(Reply::opt_bulk(e.map(|e| e.payload)))
}

/// An expiry option as SET, GETEX and friends parse it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireOpt {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute expiry in ms for an option value.
fn expire_ms(opt: ExpireOpt, arg: &[u8], now: u64, cmd: &str) -> Result<u64, Reply> {
    let v = int_arg(arg)?;
    if v <= 0 {
        return Err(invalid_expire(cmd));
    }
    let (unit, relative) = match opt {
        ExpireOpt::Ex => (Unit::Seconds, true),
        ExpireOpt::Px => (Unit::Millis, true),
        ExpireOpt::ExAt => (Unit::Seconds, false),
        ExpireOpt::PxAt => (Unit::Millis, false),
    };
    absolute_ms(v, unit, relative, now)
        .filter(|&at| at > 0 && at <= i64::MAX as u64)
        .ok_or_else(|| invalid_expire(cmd))
}

fn expire_opt(word: &[u8]) -> Option<ExpireOpt> {
    if is(word, "EX") {
        Some(ExpireOpt::Ex)
    } else if is(word, "PX") {
        Some(ExpireOpt::Px)
    } else if is(word, "EXAT") {
        Some(ExpireOpt::ExAt)
    } else if is(word, "PXAT") {
        Some(ExpireOpt::PxAt)
    } else {
        None
    }
}

/// Redis lets an expiry option repeat (the last one wins) but not mix with another kind.
fn compatible(current: Option<(ExpireOpt, &Bytes)>, opt: ExpireOpt) -> bool {
    current.is_none_or(|(c, _)| c == opt)
}

pub fn set(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (key, value) = (&a[1], &a[2]);
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(ExpireOpt, &Bytes)> = None;
    let mut i = 3;
    while i < a.len() {
        let w = &a[i];
        let has_next = i + 1 < a.len();
        if is(w, "NX") && !xx {
            nx = true;
        } else if is(w, "XX") && !nx {
            xx = true;
        } else if is(w, "GET") {
            get = true;
        } else if is(w, "KEEPTTL") && expire.is_none() {
            keepttl = true;
        } else if let Some(opt) =
            expire_opt(w).filter(|o| has_next && !keepttl && compatible(expire, *o))
        {
            expire = Some((opt, &a[i + 1]));
            i += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 1;
    }
    let new_expiry = match expire {
        Some((opt, arg)) => Some(expire_ms(opt, arg, ctx.now, "set")?),
        None => None,
    };
    let old = if nx || xx || get || keepttl {
        if get {
            ctx.string(key)?
        } else {
            ctx.entry(key)?
        }
    } else {
        None
    };
    let exists = old.is_some();
    let old_value = || Reply::opt_bulk(old.as_ref().map(|e| e.payload.clone()));
    if (nx && exists) || (xx && !exists) {
        return Ok(if get { old_value() } else { Reply::Null });
    }
    let expire_at = if keepttl {
        old.as_ref().and_then(|e| e.expire_at)
    } else {
        new_expiry
    };
    ctx.put(key, STRING, expire_at, value)?;
    Ok(if get { old_value() } else { Reply::Ok })
}

pub fn setnx(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if ctx.entry(&a[1])?.is_some() {
        return Ok(Reply::Int(0));
    }
    ctx.put(&a[1], STRING, None, &a[2])?;
    Ok(Reply::Int(1))
}

fn setex_generic(ctx: &mut Ctx<'_>, a: &[Bytes], opt: ExpireOpt, name: &str) -> CmdResult {
    let at = expire_ms(opt, &a[2], ctx.now, name)?;
    ctx.put(&a[1], STRING, Some(at), &a[3])?;
    Ok(Reply::Ok)
}

pub fn setex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setex_generic(ctx, a, ExpireOpt::Ex, "setex")
}

pub fn psetex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setex_generic(ctx, a, ExpireOpt::Px, "psetex")
}

pub fn getset(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let old = ctx.string(&a[1])?;
    ctx.put(&a[1], STRING, None, &a[2])?;
    Ok(Reply::opt_bulk(old.map(|e| e.payload)))
}

pub fn getdel(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let old = ctx.string(&a[1])?;
    if old.is_some() {
        ctx.delete(&a[1]);
    }
    hit(ctx, old.is_some());
    Ok(Reply::opt_bulk(old.map(|e| e.payload)))
}

pub fn getex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut expire: Option<(ExpireOpt, &Bytes)> = None;
    let mut persist = false;
    let mut i = 2;
    while i < a.len() {
        let w = &a[i];
        if is(w, "PERSIST") && expire.is_none() {
            persist = true;
        } else if let Some(opt) =
            expire_opt(w).filter(|o| i + 1 < a.len() && !persist && compatible(expire, *o))
        {
            expire = Some((opt, &a[i + 1]));
            i += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 1;
    }
    let new_expiry = match expire {
        Some((opt, arg)) => Some(expire_ms(opt, arg, ctx.now, "getex")?),
        None => None,
    };
    let Some(e) = ctx.string(&a[1])? else {
        hit(ctx, false);
        return Ok(Reply::Null);
    };
    hit(ctx, true);
    if let Some(at) = new_expiry {
        ctx.put(&a[1], STRING, Some(at), &e.payload)?;
    } else if persist && e.expire_at.is_some() {
        ctx.put(&a[1], STRING, None, &e.payload)?;
    }
    Ok(Reply::Bulk(e.payload))
}

pub fn mget(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut out = Vec::with_capacity(a.len() - 1);
    for raw in ctx.raw_many(&a[1..])? {
        let e = raw
            .map(|r| value::decode(r).map_err(StoreError::from))
            .transpose()?;
        hit(ctx, e.is_some());
        out.push(match e {
            Some(e) if e.vtype == Some(STRING) => Reply::Bulk(e.payload),
            _ => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}

fn mset_generic(ctx: &mut Ctx<'_>, a: &[Bytes], nx: bool) -> CmdResult {
    if a.len().is_multiple_of(2) {
        return Err(errors::wrong_args(if nx { "msetnx" } else { "mset" }));
    }
    if nx {
        for k in a[1..].iter().step_by(2) {
            if ctx.entry(k)?.is_some() {
                return Ok(Reply::Int(0));
            }
        }
    }
    for pair in a[1..].chunks_exact(2) {
        ctx.put(&pair[0], STRING, None, &pair[1])?;
    }
    Ok(if nx { Reply::Int(1) } else { Reply::Ok })
}

pub fn mset(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    mset_generic(ctx, a, false)
}

pub fn msetnx(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    mset_generic(ctx, a, true)
}

fn incr_generic(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> CmdResult {
    let old = ctx.string(key)?;
    let (cur, expire_at) = match &old {
        Some(e) => (
            parse_i64(&e.payload).ok_or_else(|| err(errors::NOT_INTEGER))?,
            e.expire_at,
        ),
        None => (0, None),
    };
    let new = cur.checked_add(by).ok_or_else(|| err(errors::OVERFLOW))?;
    let mut text = Vec::with_capacity(20);
    push_i64(&mut text, new);
    ctx.put(key, STRING, expire_at, &text)?;
    Ok(Reply::Int(new))
}

pub fn incr(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    incr_generic(ctx, &a[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    incr_generic(ctx, &a[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = int_arg(&a[2])?;
    incr_generic(ctx, &a[1], by)
}

pub fn decrby(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = int_arg(&a[2])?;
    if by == i64::MIN {
        return Err(err(errors::DECR_OVERFLOW));
    }
    incr_generic(ctx, &a[1], -by)
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let key = &a[1];
    let old = ctx.string(key)?;
    let (cur, expire_at) = match &old {
        Some(e) => (
            LongDouble::parse(&e.payload).ok_or_else(|| err(errors::NOT_FLOAT))?,
            e.expire_at,
        ),
        None => (LongDouble::from_i64(0), None),
    };
    let by = LongDouble::parse(&a[2]).ok_or_else(|| err(errors::NOT_FLOAT))?;
    // As redis: long double arithmetic, printed %.17Lf trimmed (see `redis_float`).
    let new = cur
        .checked_add(&by)
        .ok_or_else(|| err(errors::NAN_OR_INF))?;
    let text = new.to_human();
    ctx.put(key, STRING, expire_at, text.as_bytes())?;
    Ok(Reply::bulk(text.into_bytes()))
}

pub fn append(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let key = &a[1];
    let old = ctx.string(key)?;
    let (mut v, expire_at) = match old {
        Some(e) => {
            check_len(ctx, (e.payload.len() + a[2].len()) as u64)?;
            (e.payload.to_vec(), e.expire_at)
        }
        None => (Vec::new(), None),
    };
    v.extend_from_slice(&a[2]);
    ctx.put(key, STRING, expire_at, &v)?;
    Ok(Reply::Int(v.len() as i64))
}

pub fn strlen(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let e = ctx.string(&a[1])?;
    Ok(Reply::Int(e.map_or(0, |e| e.payload.len() as i64)))
}

pub fn getrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut start = int_arg(&a[2])?;
    let mut end = int_arg(&a[3])?;
    let Some(e) = ctx.string(&a[1])? else {
        return Ok(Reply::Bulk(Bytes::new()));
    };
    let len = e.payload.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    Ok(Reply::Bulk(
        e.payload.slice(start as usize..(end + 1) as usize),
    ))
}

pub fn setrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let key = &a[1];
    let offset = int_arg(&a[2])?;
    if offset < 0 {
        return Err(err(errors::OFFSET_RANGE));
    }
    let patch = &a[3];
    let old = ctx.string(key)?;
    let Some(e) = old else {
        if patch.is_empty() {
            return Ok(Reply::Int(0));
        }
        check_len(ctx, offset as u64 + patch.len() as u64)?;
        let mut v = vec![0u8; offset as usize];
        v.extend_from_slice(patch);
        ctx.put(key, STRING, None, &v)?;
        return Ok(Reply::Int(v.len() as i64));
    };
    if patch.is_empty() {
        return Ok(Reply::Int(e.payload.len() as i64));
    }
    check_len(ctx, offset as u64 + patch.len() as u64)?;
    let off = offset as usize;
    let mut v = e.payload.to_vec();
    if v.len() < off + patch.len() {
        v.resize(off + patch.len(), 0);
    }
    v[off..off + patch.len()].copy_from_slice(patch);
    ctx.put(key, STRING, e.expire_at, &v)?;
    Ok(Reply::Int(v.len() as i64))
}
