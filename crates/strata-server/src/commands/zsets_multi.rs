//! Sorted-set commands that pop, pick at random or combine keys: ZPOPMIN, ZPOPMAX, ZMPOP,
//! BZPOPMIN, BZPOPMAX, BZMPOP (blocking forms serve at once or answer a clear error),
//! ZRANDMEMBER, ZUNION, ZINTER, ZDIFF, ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZINTERCARD,
//! ZRANGESTORE.
//!
//! Invariants: as in `zsets` (element and index sub-keys change together); *STORE commands
//! replace the destination (any type) with a fresh version in one batch, or delete it when the
//! result is empty; inputs may be sets (every member scores 1), as in Redis. Depends on
//! `commands::{zsets, sets, lists}` helpers and `collections::access`.
//! Must not depend on the network layer (`connection`, `server::Server`) or touch the engine
//! except through `Ctx` and `collections::access`.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::errors::{self, err};
use super::lists::wait_for_keys;
use super::zsets::{all, del_member, pairs_reply, parse_range, put_member, select, walk, ZSET};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::meta::Meta;
use crate::numbers::parse_f64;
use crate::resp::Reply;
use crate::value::ValueType;

/// Pops up to `count` members from the low (or high) end.
fn pop(ctx: &mut Ctx<'_>, c: &mut Coll, max: bool, count: u64) -> Result<Vec<(f64, Bytes)>, Reply> {
    let mut got = Vec::new();
    if count == 0 {
        return Ok(got);
    }
    walk(ctx, c, max, None, |s, m| {
        got.push((s, Bytes::copy_from_slice(m)));
        Ok((got.len() as u64) < count)
    })?;
    for (s, m) in &got {
        del_member(ctx, c, m, *s);
    }
    c.meta.size = c.meta.size.saturating_sub(got.len() as u64);
    ctx.coll_save(c)?;
    Ok(got)
}

fn flat(items: Vec<(f64, Bytes)>) -> Vec<Reply> {
    let mut out = Vec::with_capacity(items.len() * 2);
    for (s, m) in items {
        out.push(Reply::Bulk(m));
        out.push(Reply::Double(s));
    }
    out
}

fn zpop(ctx: &mut Ctx<'_>, a: &[Bytes], max: bool) -> CmdResult {
    let count = match a.len() {
        2 => None,
        3 => {
            let c = int_arg(&a[2])?;
            if c < 0 {
                return Err(err("ERR value is out of range, must be positive"));
            }
            Some(c as u64)
        }
        _ => return Err(err(errors::SYNTAX)),
    };
    let Some(mut c) = ctx.coll(&a[1], ZSET)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let got = pop(ctx, &mut c, max, count.unwrap_or(1))?;
    if count.is_some() && ctx.session.protocol == crate::resp::Protocol::Resp3 {
        return Ok(Reply::Array(
            got.into_iter()
                .map(|(s, m)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]))
                .collect(),
        ));
    }
    Ok(Reply::Array(flat(got)))
}

pub fn zpopmin(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    zpop(ctx, a, false)
}
pub fn zpopmax(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    zpop(ctx, a, true)
}

fn check_timeout(a: &[u8]) -> Result<(), Reply> {
    match parse_f64(a) {
        Some(t) if t < 0.0 => Err(err("ERR timeout is negative")),
        Some(t) if t.is_finite() => Ok(()),
        _ => Err(err("ERR timeout is not a float or out of range")),
    }
}

fn bzpop(ctx: &mut Ctx<'_>, a: &[Bytes], max: bool) -> CmdResult {
    check_timeout(&a[a.len() - 1])?;
    for k in &a[1..a.len() - 1] {
        if let Some(mut c) = ctx.coll(k, ZSET)? {
            if let Some((s, m)) = pop(ctx, &mut c, max, 1)?.into_iter().next() {
                return Ok(Reply::Array(vec![
                    Reply::Bulk(k.clone()),
                    Reply::Bulk(m),
                    Reply::Double(s),
                ]));
            }
        }
    }
    wait_for_keys(ctx, &a[1..a.len() - 1], &a[a.len() - 1], Reply::NullArray)
}

pub fn bzpopmin(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bzpop(ctx, a, false)
}
pub fn bzpopmax(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bzpop(ctx, a, true)
}

fn mpop(ctx: &mut Ctx<'_>, a: &[Bytes], first: usize) -> Result<Option<Reply>, Reply> {
    let n = int_arg(&a[first])?;
    if n <= 0 {
        return Err(err("ERR numkeys should be greater than 0"));
    }
    let keys_end = first + 1 + n as usize;
    if keys_end >= a.len() {
        return Err(err(errors::SYNTAX));
    }
    let max = if is(&a[keys_end], "MIN") {
        false
    } else if is(&a[keys_end], "MAX") {
        true
    } else {
        return Err(err(errors::SYNTAX));
    };
    let rest = &a[keys_end + 1..];
    let count = match rest.len() {
        0 => 1,
        2 if is(&rest[0], "COUNT") => {
            let c = int_arg(&rest[1])?;
            if c <= 0 {
                return Err(err("ERR count should be greater than 0"));
            }
            c as u64
        }
        _ => return Err(err(errors::SYNTAX)),
    };
    for k in &a[first + 1..keys_end] {
        if let Some(mut c) = ctx.coll(k, ZSET)? {
            let got = pop(ctx, &mut c, max, count)?;
            let items = got
                .into_iter()
                .map(|(s, m)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]))
                .collect();
            return Ok(Some(Reply::Array(vec![
                Reply::Bulk(k.clone()),
                Reply::Array(items),
            ])));
        }
    }
    Ok(None)
}

pub fn zmpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(mpop(ctx, a, 1)?.unwrap_or(Reply::NullArray))
}

pub fn bzmpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    check_timeout(&a[1])?;
    match mpop(ctx, a, 2)? {
        Some(r) => Ok(r),
        None => {
            let n = int_arg(&a[2])? as usize;
            wait_for_keys(ctx, &a[3..3 + n], &a[1], Reply::NullArray)
        }
    }
}

pub fn zrandmember(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (count, withscores) = match a.len() {
        2 => (None, false),
        3 => (Some(int_arg(&a[2])?), false),
        4 if is(&a[3], "WITHSCORES") => (Some(int_arg(&a[2])?), true),
        _ => return Err(err(errors::SYNTAX)),
    };
    let items = match ctx.coll(&a[1], ZSET)? {
        Some(c) => all(ctx, &c)?,
        None => Vec::new(),
    };
    let Some(picks) = super::sets::random_picks(items.len(), count)? else {
        return Ok(Reply::opt_bulk(
            super::sets::random_index(items.len()).map(|i| items[i].1.clone()),
        ));
    };
    let chosen = picks.into_iter().map(|i| items[i].clone()).collect();
    Ok(pairs_reply(ctx, chosen, withscores))
}

/// The (member → score) of a sorted set or set (score 1) at `key`; WRONGTYPE otherwise.
fn load(ctx: &Ctx<'_>, key: &[u8]) -> Result<BTreeMap<Bytes, f64>, Reply> {
    match ctx.entry(key)? {
        None => Ok(BTreeMap::new()),
        Some(e) if e.vtype == Some(ZSET) => {
            let c = ctx.coll(key, ZSET)?.ok_or_else(|| err(errors::WRONGTYPE))?;
            Ok(all(ctx, &c)?.into_iter().map(|(s, m)| (m, s)).collect())
        }
        Some(e) if e.vtype == Some(ValueType::Set) => Ok(super::sets::members(ctx, key)?
            .into_iter()
            .map(|m| (m, 1.0))
            .collect()),
        Some(_) => Err(err(errors::WRONGTYPE)),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Agg {
    Sum,
    Min,
    Max,
}

struct Combine {
    result: Vec<(f64, Bytes)>,
    withscores: bool,
}

/// Parses `numkeys key... [WEIGHTS w...] [AGGREGATE ...] [WITHSCORES]` at `a[first]` and
/// computes the combination, sorted by (score, member).
fn combine(
    ctx: &Ctx<'_>,
    a: &[Bytes],
    first: usize,
    op: Op,
    store: bool,
    name: &str,
) -> Result<Combine, Reply> {
    let n = int_arg(&a[first])?;
    if n <= 0 {
        return Err(Reply::error(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let n = n as usize;
    if first + 1 + n > a.len() {
        return Err(err(errors::SYNTAX));
    }
    let keys = &a[first + 1..first + 1 + n];
    let mut weights = vec![1.0; n];
    let mut agg = Agg::Sum;
    let mut withscores = false;
    let mut j = first + 1 + n;
    while j < a.len() {
        if op != Op::Diff && is(&a[j], "WEIGHTS") && j + n < a.len() {
            for (w, arg) in weights.iter_mut().zip(&a[j + 1..j + 1 + n]) {
                *w = parse_f64(arg).ok_or_else(|| err("ERR weight value is not a float"))?;
            }
            j += n + 1;
        } else if op != Op::Diff && is(&a[j], "AGGREGATE") && j + 1 < a.len() {
            agg = if is(&a[j + 1], "SUM") {
                Agg::Sum
            } else if is(&a[j + 1], "MIN") {
                Agg::Min
            } else if is(&a[j + 1], "MAX") {
                Agg::Max
            } else {
                return Err(err(errors::SYNTAX));
            };
            j += 2;
        } else if !store && is(&a[j], "WITHSCORES") {
            withscores = true;
            j += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    let mut inputs = Vec::with_capacity(n);
    for k in keys {
        inputs.push(load(ctx, k)?);
    }
    let fold = |x: f64, y: f64| -> f64 {
        let r = match agg {
            Agg::Sum => x + y,
            Agg::Min => x.min(y),
            Agg::Max => x.max(y),
        };
        if r.is_nan() {
            0.0
        } else {
            r
        }
    };
    let weigh = |s: f64, w: f64| -> f64 {
        let r = s * w;
        if r.is_nan() {
            0.0
        } else {
            r
        }
    };
    let mut it = inputs.into_iter().zip(weights);
    let (first_set, w0) = it.next().unwrap_or_default();
    let mut acc: BTreeMap<Bytes, f64> = first_set
        .into_iter()
        .map(|(m, s)| (m, weigh(s, w0)))
        .collect();
    for (set, w) in it {
        match op {
            Op::Union => {
                for (m, s) in set {
                    let s = weigh(s, w);
                    acc.entry(m).and_modify(|x| *x = fold(*x, s)).or_insert(s);
                }
            }
            Op::Inter => {
                acc.retain(|m, _| set.contains_key(m));
                for (m, x) in acc.iter_mut() {
                    if let Some(s) = set.get(m) {
                        *x = fold(*x, weigh(*s, w));
                    }
                }
            }
            Op::Diff => acc.retain(|m, _| !set.contains_key(m)),
        }
    }
    let mut result: Vec<(f64, Bytes)> = acc.into_iter().map(|(m, s)| (s, m)).collect();
    result.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.cmp(&y.1)));
    Ok(Combine { result, withscores })
}

/// Replaces `dst` with a sorted set of `items` (fresh version), or deletes it when empty.
fn store_zset(ctx: &mut Ctx<'_>, dst: &[u8], items: &[(f64, Bytes)]) -> Result<(), Reply> {
    let c = Coll {
        key: dst.to_vec(),
        vtype: ZSET,
        expire_at: None,
        meta: Meta {
            size: items.len() as u64,
            ..Meta::fresh(ZSET)
        },
    };
    for (s, m) in items {
        put_member(ctx, &c, m, None, *s)?;
    }
    ctx.coll_save(&c)
}

fn read_cmd(ctx: &Ctx<'_>, a: &[Bytes], op: Op, name: &str) -> CmdResult {
    let c = combine(ctx, a, 1, op, false, name)?;
    Ok(pairs_reply(ctx, c.result, c.withscores))
}

fn store_cmd(ctx: &mut Ctx<'_>, a: &[Bytes], op: Op, name: &str) -> CmdResult {
    let c = combine(ctx, a, 2, op, true, name)?;
    store_zset(ctx, &a[1], &c.result)?;
    Ok(Reply::Int(c.result.len() as i64))
}

pub fn zunion(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    read_cmd(ctx, a, Op::Union, "zunion")
}
pub fn zinter(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    read_cmd(ctx, a, Op::Inter, "zinter")
}
pub fn zdiff(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    read_cmd(ctx, a, Op::Diff, "zdiff")
}
pub fn zunionstore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    store_cmd(ctx, a, Op::Union, "zunionstore")
}
pub fn zinterstore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    store_cmd(ctx, a, Op::Inter, "zinterstore")
}
pub fn zdiffstore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    store_cmd(ctx, a, Op::Diff, "zdiffstore")
}

pub fn zintercard(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (keys, limit) = super::sets::numkeys_limit(a, "zintercard")?;
    let mut acc: Option<BTreeMap<Bytes, f64>> = None;
    for k in keys {
        let s = load(ctx, k)?;
        acc = Some(match acc {
            None => s,
            Some(mut x) => {
                x.retain(|m, _| s.contains_key(m));
                x
            }
        });
    }
    let n = acc.map_or(0, |x| x.len());
    Ok(Reply::Int(if limit > 0 { n.min(limit) } else { n } as i64))
}

pub fn zrangestore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let r = parse_range(&a[1..], 2, true)?;
    let items = match ctx.coll(&a[2], ZSET)? {
        Some(c) => select(ctx, &c, &r)?,
        None => Vec::new(),
    };
    store_zset(ctx, &a[1], &items)?;
    Ok(Reply::Int(items.len() as i64))
}
