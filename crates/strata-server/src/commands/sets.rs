//! Set commands: SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SPOP, SRANDMEMBER, SMOVE,
//! SUNION, SINTER, SDIFF, SUNIONSTORE, SINTERSTORE, SDIFFSTORE, SINTERCARD, SSCAN; and the
//! random picks HRANDFIELD, SRANDMEMBER and ZRANDMEMBER share.
//!
//! Invariants: a set is a collection (see `collections`): one element sub-key per member with
//! an empty value; sizes equal the number of members; *STORE commands replace the destination
//! (any type) with a fresh version in one batch, or delete it when the result is empty.
//! Depends on `commands` helpers, `commands::hashes` (scan arguments), `collections::access`.
//! Must not depend on the network layer (`connection`, `server::Server`) or touch the engine
//! except through `Ctx` and `collections::access`.

use std::cell::Cell;
use std::collections::BTreeSet;

use bytes::Bytes;

use super::errors::{self, err};
use super::hashes::{scan_args, scan_page};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::meta::Meta;
use crate::collections::subkey::ELEM;
use crate::resp::Reply;
use crate::value::ValueType;

const SET: ValueType = ValueType::Set;

thread_local! {
    static RNG: Cell<u64> = Cell::new(
        crate::expiry::now_ms() ^ 0x9e37_79b9_7f4a_7c15 ^ (std::process::id() as u64) << 32
    );
}

/// A pseudo-random number (SplitMix64 per thread; not for cryptography).
pub fn random_u64() -> u64 {
    RNG.with(|s| {
        let mut z = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        s.set(z);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// A random index below `n`, or `None` for `n == 0`.
pub fn random_index(n: usize) -> Option<usize> {
    (n > 0).then(|| (random_u64() % n as u64) as usize)
}

/// Redis's count semantics for *RANDMEMBER/HRANDFIELD: `None` count → `Ok(None)` (single
/// reply); a positive count → that many distinct indices (at most `n`); a negative count →
/// `|count|` indices with repetition.
pub fn random_picks(n: usize, count: Option<i64>) -> Result<Option<Vec<usize>>, Reply> {
    let Some(count) = count else { return Ok(None) };
    if count == i64::MIN || count.unsigned_abs() > (i64::MAX as u64) / 2 {
        return Err(err("ERR value is out of range"));
    }
    if n == 0 || count == 0 {
        return Ok(Some(Vec::new()));
    }
    if count < 0 {
        let want = count.unsigned_abs();
        if want > 1 << 24 {
            return Err(err("ERR value is out of range"));
        }
        return Ok(Some(
            (0..want)
                .map(|_| (random_u64() % n as u64) as usize)
                .collect(),
        ));
    }
    let want = (count as u64).min(n as u64) as usize;
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..want {
        let j = i + (random_u64() % (n - i) as u64) as usize;
        idx.swap(i, j);
    }
    idx.truncate(want);
    Ok(Some(idx))
}

/// The members of the set at `key` (empty if absent), in member order.
pub fn members(ctx: &Ctx<'_>, key: &[u8]) -> Result<Vec<Bytes>, Reply> {
    let Some(c) = ctx.coll(key, SET)? else {
        return Ok(Vec::new());
    };
    members_of(ctx, &c)
}

fn members_of(ctx: &Ctx<'_>, c: &Coll) -> Result<Vec<Bytes>, Reply> {
    let mut out = Vec::new();
    ctx.elems(c, ELEM, false, None, |m, _| {
        out.push(Bytes::copy_from_slice(m));
        Ok(true)
    })?;
    Ok(out)
}

pub fn sadd(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut c = ctx.coll_or_new(&a[1], SET)?;
    let mut seen = BTreeSet::new();
    let mut n = 0u64;
    for m in &a[2..] {
        if seen.insert(m) && (c.meta.size == 0 || ctx.elem_get(&c, ELEM, m)?.is_none()) {
            ctx.elem_put(&c, ELEM, m, b"")?;
            n += 1;
        }
    }
    c.meta.size += n;
    if n > 0 {
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(n as i64))
}

pub fn srem(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(mut c) = ctx.coll(&a[1], SET)? else {
        return Ok(Reply::Int(0));
    };
    let mut seen = BTreeSet::new();
    let mut n = 0u64;
    for m in &a[2..] {
        if seen.insert(m) && ctx.elem_get(&c, ELEM, m)?.is_some() {
            ctx.elem_del(&c, ELEM, m);
            n += 1;
        }
    }
    c.meta.size = c.meta.size.saturating_sub(n);
    if n > 0 {
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(n as i64))
}

pub fn scard(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(
        ctx.coll(&a[1], SET)?.map_or(0, |c| c.meta.size as i64),
    ))
}

fn is_member(ctx: &Ctx<'_>, c: &Option<Coll>, m: &[u8]) -> Result<bool, Reply> {
    Ok(match c {
        Some(c) => ctx.elem_get(c, ELEM, m)?.is_some(),
        None => false,
    })
}

pub fn sismember(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], SET)?;
    Ok(Reply::Int(is_member(ctx, &c, &a[2])? as i64))
}

pub fn smismember(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], SET)?;
    let mut out = Vec::with_capacity(a.len() - 2);
    for m in &a[2..] {
        out.push(Reply::Int(is_member(ctx, &c, m)? as i64));
    }
    Ok(Reply::Array(out))
}

pub fn smembers(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Set(
        members(ctx, &a[1])?.into_iter().map(Reply::Bulk).collect(),
    ))
}

pub fn spop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let count = match a.len() {
        2 => None,
        3 => {
            let c = int_arg(&a[2])?;
            if c < 0 {
                return Err(err("ERR value is out of range, must be positive"));
            }
            Some(c)
        }
        _ => return Err(err(errors::SYNTAX)),
    };
    let Some(mut c) = ctx.coll(&a[1], SET)? else {
        return Ok(if count.is_some() {
            Reply::Set(Vec::new())
        } else {
            Reply::Null
        });
    };
    let all = members_of(ctx, &c)?;
    let picks = random_picks(all.len(), Some(count.unwrap_or(1)))?.unwrap_or_default();
    let mut out = Vec::with_capacity(picks.len());
    for i in picks {
        ctx.elem_del(&c, ELEM, &all[i]);
        out.push(Reply::Bulk(all[i].clone()));
    }
    c.meta.size = c.meta.size.saturating_sub(out.len() as u64);
    ctx.coll_save(&c)?;
    Ok(match count {
        Some(_) => Reply::Set(out),
        None => out.pop().unwrap_or(Reply::Null),
    })
}

pub fn srandmember(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let count = match a.len() {
        2 => None,
        3 => Some(int_arg(&a[2])?),
        _ => return Err(err(errors::SYNTAX)),
    };
    let all = members(ctx, &a[1])?;
    match random_picks(all.len(), count)? {
        None => Ok(Reply::opt_bulk(
            random_index(all.len()).map(|i| all[i].clone()),
        )),
        Some(p) => Ok(Reply::Array(
            p.into_iter().map(|i| Reply::Bulk(all[i].clone())).collect(),
        )),
    }
}

pub fn smove(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (src, dst, m) = (&a[1], &a[2], &a[3]);
    // As redis: a missing source answers 0 before the destination's type is checked.
    let Some(mut s) = ctx.coll(src, SET)? else {
        return Ok(Reply::Int(0));
    };
    let mut d = ctx.coll_or_new(dst, SET)?;
    if ctx.elem_get(&s, ELEM, m)?.is_none() {
        return Ok(Reply::Int(0));
    }
    if src == dst {
        return Ok(Reply::Int(1));
    }
    ctx.elem_del(&s, ELEM, m);
    s.meta.size -= 1;
    ctx.coll_save(&s)?;
    if d.meta.size == 0 || ctx.elem_get(&d, ELEM, m)?.is_none() {
        ctx.elem_put(&d, ELEM, m, b"")?;
        d.meta.size += 1;
        ctx.coll_save(&d)?;
    }
    Ok(Reply::Int(1))
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

fn combine(ctx: &Ctx<'_>, keys: &[Bytes], op: Op) -> Result<BTreeSet<Bytes>, Reply> {
    let mut sets = Vec::with_capacity(keys.len());
    for k in keys {
        sets.push(members(ctx, k)?);
    }
    let mut it = sets.into_iter();
    let mut acc: BTreeSet<Bytes> = it.next().unwrap_or_default().into_iter().collect();
    for s in it {
        match op {
            Op::Union => acc.extend(s),
            Op::Inter => {
                let s: BTreeSet<Bytes> = s.into_iter().collect();
                acc.retain(|m| s.contains(m));
            }
            Op::Diff => {
                for m in s {
                    acc.remove(&m);
                }
            }
        }
    }
    Ok(acc)
}

fn set_reply(s: BTreeSet<Bytes>) -> Reply {
    Reply::Set(s.into_iter().map(Reply::Bulk).collect())
}

pub fn sunion(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(set_reply(combine(ctx, &a[1..], Op::Union)?))
}

pub fn sinter(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(set_reply(combine(ctx, &a[1..], Op::Inter)?))
}

pub fn sdiff(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(set_reply(combine(ctx, &a[1..], Op::Diff)?))
}

/// Replaces `dst` (any type) with a set of `members`, or deletes it when empty.
pub fn store_set(ctx: &mut Ctx<'_>, dst: &[u8], members: &BTreeSet<Bytes>) -> Result<(), Reply> {
    let c = Coll {
        key: dst.to_vec(),
        vtype: SET,
        expire_at: None,
        meta: Meta {
            size: members.len() as u64,
            ..Meta::fresh(SET)
        },
    };
    for m in members {
        ctx.elem_put(&c, ELEM, m, b"")?;
    }
    ctx.coll_save(&c)
}

fn store(ctx: &mut Ctx<'_>, a: &[Bytes], op: Op) -> CmdResult {
    let r = combine(ctx, &a[2..], op)?;
    store_set(ctx, &a[1], &r)?;
    Ok(Reply::Int(r.len() as i64))
}

pub fn sunionstore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    store(ctx, a, Op::Union)
}

pub fn sinterstore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    store(ctx, a, Op::Inter)
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    store(ctx, a, Op::Diff)
}

/// Parses `numkeys key... [LIMIT n]` (SINTERCARD, ZINTERCARD): the keys and the limit (0 = none).
pub fn numkeys_limit<'a>(a: &'a [Bytes], cmd: &str) -> Result<(&'a [Bytes], usize), Reply> {
    let n = int_arg(&a[1])?;
    if n <= 0 {
        return Err(err("ERR numkeys should be greater than 0"));
    }
    let n = n as usize;
    if n > a.len() - 2 {
        return Err(err(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = &a[2..2 + n];
    let mut limit = 0usize;
    let mut i = 2 + n;
    while i < a.len() {
        if is(&a[i], "LIMIT") && i + 1 < a.len() {
            let l = int_arg(&a[i + 1])?;
            if l < 0 {
                return Err(err("ERR LIMIT can't be negative"));
            }
            limit = l as usize;
            i += 2;
        } else {
            let _ = cmd;
            return Err(err(errors::SYNTAX));
        }
    }
    Ok((keys, limit))
}

pub fn sintercard(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (keys, limit) = numkeys_limit(a, "sintercard")?;
    let n = combine(ctx, keys, Op::Inter)?.len();
    Ok(Reply::Int(if limit > 0 { n.min(limit) } else { n } as i64))
}

pub fn sscan(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let s = scan_args(a, false)?;
    let c = ctx.coll(&a[1], SET)?;
    scan_page(ctx, c.as_ref(), &s, |m, _, out| {
        out.push(Reply::Bulk(Bytes::copy_from_slice(m)));
        Ok(())
    })
}
