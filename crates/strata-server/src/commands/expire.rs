//! Expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME, PERSIST. A collection's expiry lives in its metadata record, so
//! these are O(1) for every type.
//!
//! Invariants: the expiry is part of the stored value, so changing it rewrites the value (the
//! executor holds the key's stripe; see `locks`); an expiry at or before the command time deletes
//! the key at once (as Redis does); overflow checks and error wording follow Redis's
//! `expireGenericCommand`. Depends on `commands` helpers, `store`, `expiry`.

use bytes::Bytes;

use super::errors::{self, err, invalid_expire};
use super::{int_arg, is, CmdResult, Ctx};
use crate::resp::Reply;

#[derive(Default)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_flags(a: &[Bytes]) -> Result<Flags, Reply> {
    let mut f = Flags::default();
    for w in a {
        if is(w, "NX") {
            f.nx = true;
        } else if is(w, "XX") {
            f.xx = true;
        } else if is(w, "GT") {
            f.gt = true;
        } else if is(w, "LT") {
            f.lt = true;
        } else {
            return Err(Reply::error(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(w)
            )));
        }
    }
    if f.nx && (f.xx || f.gt || f.lt) {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if f.gt && f.lt {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(f)
}

fn expire_generic(
    ctx: &mut Ctx<'_>,
    a: &[Bytes],
    seconds: bool,
    relative: bool,
    name: &str,
) -> CmdResult {
    let flags = parse_flags(&a[3..])?;
    let mut when = int_arg(&a[2])?;
    if seconds {
        when = when.checked_mul(1000).ok_or_else(|| invalid_expire(name))?;
    }
    let base = if relative { ctx.now as i64 } else { 0 };
    let when = when.checked_add(base).ok_or_else(|| invalid_expire(name))?;
    let key = &a[1];
    let Some(e) = ctx.entry(key)? else {
        return Ok(Reply::Int(0));
    };
    let current = e.expire_at.map(|c| c as i64);
    let refused = (flags.nx && current.is_some())
        || (flags.xx && current.is_none())
        || (flags.gt && current.is_none_or(|c| when <= c))
        || (flags.lt && current.is_some_and(|c| when >= c));
    if refused {
        return Ok(Reply::Int(0));
    }
    if when <= ctx.now as i64 {
        ctx.delete(key);
    } else {
        let vtype = e.vtype.ok_or_else(|| err(errors::WRONGTYPE))?;
        ctx.put(key, vtype, Some(when as u64), &e.payload)?;
    }
    Ok(Reply::Int(1))
}

pub fn expire(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(ctx, a, true, true, "expire")
}

pub fn pexpire(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(ctx, a, false, true, "pexpire")
}

pub fn expireat(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(ctx, a, true, false, "expireat")
}

pub fn pexpireat(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(ctx, a, false, false, "pexpireat")
}

fn ttl_generic(ctx: &mut Ctx<'_>, a: &[Bytes], ms: bool) -> CmdResult {
    Ok(Reply::Int(match ctx.entry(&a[1])? {
        None => -2,
        Some(e) => match e.expire_at {
            None => -1,
            Some(at) => {
                let left = at.saturating_sub(ctx.now) as i64;
                if ms {
                    left
                } else {
                    (left + 500) / 1000
                }
            }
        },
    }))
}

fn expiretime_generic(ctx: &mut Ctx<'_>, a: &[Bytes], ms: bool) -> CmdResult {
    Ok(Reply::Int(match ctx.entry(&a[1])? {
        None => -2,
        Some(e) => match e.expire_at {
            None => -1,
            Some(at) if ms => at as i64,
            Some(at) => (at / 1000) as i64,
        },
    }))
}

pub fn expiretime(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expiretime_generic(ctx, a, false)
}

pub fn pexpiretime(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expiretime_generic(ctx, a, true)
}

pub fn ttl(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, a, false)
}

pub fn pttl(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, a, true)
}

pub fn persist(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let key = &a[1];
    match ctx.entry(key)? {
        Some(e) if e.expire_at.is_some() => {
            let vtype = e.vtype.ok_or_else(|| err(errors::WRONGTYPE))?;
            ctx.put(key, vtype, None, &e.payload)?;
            Ok(Reply::Int(1))
        }
        _ => Ok(Reply::Int(0)),
    }
}
