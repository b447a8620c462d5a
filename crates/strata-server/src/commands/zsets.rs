//! Sorted-set commands, single key: ZADD, ZINCRBY, ZCARD, ZSCORE, ZMSCORE, ZREM, ZCOUNT,
//! ZLEXCOUNT, ZRANGE (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES), ZREVRANGE, ZRANGEBYSCORE,
//! ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANK, ZREVRANK, ZREMRANGEBYRANK,
//! ZREMRANGEBYSCORE, ZREMRANGEBYLEX, ZSCAN. Multi-key and popping commands are in
//! `zsets_multi`.
//!
//! Invariants: a sorted set is a collection (see `collections`) with two sub-keys per member:
//! the element (`ELEM`, rest = member, value = score as f64 little-endian) and the score index
//! entry (`SCORE`, rest = `score::encode(score)` ‖ member, empty value), written and deleted
//! together; the index gives (score, member) order, so score ranges seek straight to their
//! start. Scores are never NaN. Depends on `commands` helpers, `collections::{access, score}`.
//! Must not depend on the network layer (`connection`, `server::Server`) or touch the engine
//! except through `Ctx` and `collections::access`.

use bytes::Bytes;

use super::errors::{self, err};
use super::hashes::{scan_args, scan_page};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::{stored_score, Coll};
use crate::collections::score::{self, parse_bound, parse_lex, Bound, LexBound};
use crate::collections::subkey::{ELEM, SCORE};
use crate::numbers::parse_f64;
use crate::resp::Reply;
use crate::value::ValueType;

pub const ZSET: ValueType = ValueType::ZSet;

/// The score of `member`, if present.
pub fn score_of(ctx: &Ctx<'_>, c: &Coll, member: &[u8]) -> Result<Option<f64>, Reply> {
    match ctx.elem_get(c, ELEM, member)? {
        Some(v) => Ok(Some(stored_score(&v)?)),
        None => Ok(None),
    }
}

/// Stages `member` at `new` (removing its index entry at `old`, if any).
pub fn put_member(
    ctx: &mut Ctx<'_>,
    c: &Coll,
    member: &[u8],
    old: Option<f64>,
    new: f64,
) -> Result<(), Reply> {
    if let Some(o) = old {
        ctx.elem_del(c, SCORE, &index_rest(o, member));
    }
    // Stored -0 reads back as 0, as in redis-server (only an INCR reply shows "-0").
    let stored = if new == 0.0 { 0.0 } else { new };
    ctx.elem_put(c, ELEM, member, &stored.to_le_bytes())?;
    ctx.elem_put(c, SCORE, &index_rest(new, member), b"")
}

/// Stages the removal of `member` (at score `s`).
pub fn del_member(ctx: &mut Ctx<'_>, c: &Coll, member: &[u8], s: f64) {
    ctx.elem_del(c, ELEM, member);
    ctx.elem_del(c, SCORE, &index_rest(s, member));
}

fn index_rest(s: f64, member: &[u8]) -> Vec<u8> {
    let mut r = score::encode(s).to_vec();
    r.extend_from_slice(member);
    r
}

fn split_index(rest: &[u8]) -> Result<(f64, &[u8]), Reply> {
    if rest.len() < 8 {
        return Err(err("ERR storage error: sorted-set index entry too short"));
    }
    let (s, m) = rest.split_at(8);
    let s = score::decode(s.try_into().map_err(|_| err(errors::SYNTAX))?);
    if s.is_nan() {
        return Err(err("ERR storage error: sorted-set index holds NaN"));
    }
    Ok((s, m))
}

/// Visits (score, member) in order (reverse with `rev`), starting at score `from` (forward:
/// the first entry with score >= from; reverse: the last with score <= from), until `visit`
/// returns false.
pub fn walk(
    ctx: &Ctx<'_>,
    c: &Coll,
    rev: bool,
    from: Option<f64>,
    mut visit: impl FnMut(f64, &[u8]) -> Result<bool, Reply>,
) -> Result<(), Reply> {
    let seek: Option<Vec<u8>> = match (from, rev) {
        (None, _) => None,
        (Some(f), false) => Some(score::encode(f).to_vec()),
        (Some(f), true) => {
            // The last entry <= (f, any member): seek before the next score's encoding.
            let n = u64::from_be_bytes(score::encode(f)).checked_add(1);
            n.map(|n| n.to_be_bytes().to_vec())
        }
    };
    ctx.elems(c, SCORE, rev, seek.as_deref(), |rest, _| {
        let (s, m) = split_index(rest)?;
        visit(s, m)
    })
}

/// Every (score, member) in order.
pub fn all(ctx: &Ctx<'_>, c: &Coll) -> Result<Vec<(f64, Bytes)>, Reply> {
    let mut out = Vec::new();
    walk(ctx, c, false, None, |s, m| {
        out.push((s, Bytes::copy_from_slice(m)));
        Ok(true)
    })?;
    Ok(out)
}

fn float_arg(a: &[u8]) -> Result<f64, Reply> {
    parse_f64(a).ok_or_else(|| err(errors::NOT_FLOAT))
}

pub fn zadd(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < a.len() {
        let w = &a[i];
        if is(w, "NX") {
            nx = true;
        } else if is(w, "XX") {
            xx = true;
        } else if is(w, "GT") {
            gt = true;
        } else if is(w, "LT") {
            lt = true;
        } else if is(w, "CH") {
            ch = true;
        } else if is(w, "INCR") {
            incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &a[i..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(err(errors::SYNTAX));
    }
    if nx && xx {
        return Err(err(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err(err(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && pairs.len() > 2 {
        return Err(err(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks_exact(2) {
        scores.push((float_arg(&p[0])?, &p[1]));
    }
    let mut c = ctx.coll_or_new(&a[1], ZSET)?;
    let (mut added, mut changed) = (0u64, 0u64);
    let mut staged: std::collections::HashMap<&[u8], Option<f64>> = Default::default();
    let mut incr_result: Option<f64> = None;
    for (s, m) in scores {
        let old = match staged.get(m.as_ref()) {
            Some(o) => *o,
            None if c.meta.size == 0 && added == 0 => None,
            None => score_of(ctx, &c, m)?,
        };
        let mut new = s;
        if incr {
            // A new member takes the increment itself (redis: so `-0` replies "-0").
            new = old.map_or(s, |o| o + s);
            if new.is_nan() {
                return Err(err("ERR resulting score is not a number (NaN)"));
            }
        }
        let skip = match old {
            Some(o) => nx || (gt && new <= o) || (lt && new >= o),
            None => xx,
        };
        if skip {
            continue;
        }
        incr_result = Some(new);
        match old {
            None => {
                added += 1;
                put_member(ctx, &c, m, None, new)?;
            }
            Some(o) if o != new => {
                changed += 1;
                put_member(ctx, &c, m, Some(o), new)?;
            }
            Some(_) => {}
        }
        staged.insert(m.as_ref(), Some(new));
    }
    c.meta.size += added;
    if added + changed > 0 {
        ctx.coll_save(&c)?;
    }
    if incr {
        return Ok(incr_result.map_or(Reply::Null, Reply::Double));
    }
    Ok(Reply::Int((added + if ch { changed } else { 0 }) as i64))
}

pub fn zincrby(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = float_arg(&a[2])?;
    let mut c = ctx.coll_or_new(&a[1], ZSET)?;
    let old = if c.meta.size > 0 {
        score_of(ctx, &c, &a[3])?
    } else {
        None
    };
    let new = old.map_or(by, |o| o + by); // a new member takes `by` itself, as redis

    if new.is_nan() {
        return Err(err("ERR resulting score is not a number (NaN)"));
    }
    put_member(ctx, &c, &a[3], old, new)?;
    if old.is_none() {
        c.meta.size += 1;
    }
    ctx.coll_save(&c)?;
    Ok(Reply::Double(new))
}

pub fn zcard(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(
        ctx.coll(&a[1], ZSET)?.map_or(0, |c| c.meta.size as i64),
    ))
}

pub fn zscore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(c) = ctx.coll(&a[1], ZSET)? else {
        return Ok(Reply::Null);
    };
    Ok(score_of(ctx, &c, &a[2])?.map_or(Reply::Null, Reply::Double))
}

pub fn zmscore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let c = ctx.coll(&a[1], ZSET)?;
    let mut out = Vec::with_capacity(a.len() - 2);
    for m in &a[2..] {
        let s = match &c {
            Some(c) => score_of(ctx, c, m)?,
            None => None,
        };
        out.push(s.map_or(Reply::Null, Reply::Double));
    }
    Ok(Reply::Array(out))
}

pub fn zrem(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(mut c) = ctx.coll(&a[1], ZSET)? else {
        return Ok(Reply::Int(0));
    };
    let mut gone: std::collections::HashSet<&[u8]> = Default::default();
    for m in &a[2..] {
        if gone.contains(m.as_ref()) {
            continue;
        }
        if let Some(s) = score_of(ctx, &c, m)? {
            del_member(ctx, &c, m, s);
            gone.insert(m);
        }
    }
    c.meta.size = c.meta.size.saturating_sub(gone.len() as u64);
    if !gone.is_empty() {
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(gone.len() as i64))
}

/// What a range selects.
#[derive(Clone, Debug)]
pub enum RangeBy {
    Rank(i64, i64),
    Score(Bound, Bound),
    Lex(LexBound, LexBound),
}

/// A parsed range request (ZRANGE's full syntax; the legacy commands map onto it).
#[derive(Clone, Debug)]
pub struct RangeSpec {
    pub by: RangeBy,
    pub rev: bool,
    /// (offset, count); count < 0 means all.
    pub limit: Option<(i64, i64)>,
    pub withscores: bool,
}

fn score_bounds(min: &[u8], max: &[u8]) -> Result<(Bound, Bound), Reply> {
    match (parse_bound(min), parse_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(err("ERR min or max is not a float")),
    }
}

fn lex_bounds(min: &[u8], max: &[u8]) -> Result<(LexBound, LexBound), Reply> {
    match (parse_lex(min), parse_lex(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(err("ERR min or max not valid string range item")),
    }
}

/// Parses `start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]` from `a[i]`.
pub fn parse_range(a: &[Bytes], i: usize, store: bool) -> Result<RangeSpec, Reply> {
    let (mut byscore, mut bylex, mut rev, mut withscores) = (false, false, false, false);
    let mut limit = None;
    let mut j = i + 2;
    // As redis 7.0: REV, BYSCORE and BYLEX may each come once (and BYSCORE/BYLEX not both);
    // LIMIT with a rank range is an error unless its count is -1 (then it is ignored).
    while j < a.len() {
        let w = &a[j];
        if is(w, "BYSCORE") && !byscore && !bylex {
            byscore = true;
        } else if is(w, "BYLEX") && !byscore && !bylex {
            bylex = true;
        } else if is(w, "REV") && !rev {
            rev = true;
        } else if is(w, "WITHSCORES") && !store {
            withscores = true;
        } else if is(w, "LIMIT") && j + 2 < a.len() {
            limit = Some((int_arg(&a[j + 1])?, int_arg(&a[j + 2])?));
            j += 2;
        } else {
            return Err(err(errors::SYNTAX));
        }
        j += 1;
    }
    if !byscore && !bylex {
        if matches!(limit, Some((_, n)) if n != -1) {
            return Err(err(
                "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
            ));
        }
        limit = None;
    }
    if withscores && bylex {
        return Err(err(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (lo, hi) = if rev && (byscore || bylex) {
        (&a[i + 1], &a[i])
    } else {
        (&a[i], &a[i + 1])
    };
    let by = if byscore {
        let (a, b) = score_bounds(lo, hi)?;
        RangeBy::Score(a, b)
    } else if bylex {
        let (a, b) = lex_bounds(lo, hi)?;
        RangeBy::Lex(a, b)
    } else {
        RangeBy::Rank(int_arg(lo)?, int_arg(hi)?)
    };
    Ok(RangeSpec {
        by,
        rev,
        limit,
        withscores,
    })
}

/// The (score, member) pairs a range selects, in reply order.
pub fn select(ctx: &Ctx<'_>, c: &Coll, r: &RangeSpec) -> Result<Vec<(f64, Bytes)>, Reply> {
    let mut out = Vec::new();
    let (mut skip, mut take) = match r.limit {
        Some((o, n)) => {
            if o < 0 {
                return Ok(out);
            }
            (o as u64, if n < 0 { u64::MAX } else { n as u64 })
        }
        None => (0, u64::MAX),
    };
    if take == 0 {
        return Ok(out);
    }
    match &r.by {
        RangeBy::Rank(s, e) => {
            let n = c.meta.size as i64;
            let mut s = if *s < 0 { s.saturating_add(n) } else { *s };
            let mut e = if *e < 0 { e.saturating_add(n) } else { *e };
            s = s.max(0);
            if e >= n {
                e = n - 1;
            }
            if s > e || s >= n {
                return Ok(out);
            }
            e = e.max(0);
            let mut rank = 0i64;
            walk(ctx, c, r.rev, None, |sc, m| {
                if rank >= s {
                    out.push((sc, Bytes::copy_from_slice(m)));
                }
                rank += 1;
                Ok(rank <= e)
            })?;
        }
        RangeBy::Score(min, max) => {
            let from = if r.rev { max.value } else { min.value };
            walk(ctx, c, r.rev, Some(from), |sc, m| {
                let (inside_far, inside_near) = if r.rev {
                    (min.admits_min(sc), max.admits_max(sc))
                } else {
                    (max.admits_max(sc), min.admits_min(sc))
                };
                if !inside_far {
                    return Ok(false);
                }
                if !inside_near {
                    return Ok(true);
                }
                if skip > 0 {
                    skip -= 1;
                    return Ok(true);
                }
                out.push((sc, Bytes::copy_from_slice(m)));
                take -= 1;
                Ok(take > 0)
            })?;
        }
        RangeBy::Lex(min, max) => {
            walk(ctx, c, r.rev, None, |sc, m| {
                let (far, near) = if r.rev {
                    (min.admits_min(m), max.admits_max(m))
                } else {
                    (max.admits_max(m), min.admits_min(m))
                };
                if !far {
                    return Ok(false);
                }
                if !near {
                    return Ok(true);
                }
                if skip > 0 {
                    skip -= 1;
                    return Ok(true);
                }
                out.push((sc, Bytes::copy_from_slice(m)));
                take -= 1;
                Ok(take > 0)
            })?;
        }
    }
    Ok(out)
}

/// The reply for selected pairs (RESP3: WITHSCORES gives [member, score] pairs).
pub fn pairs_reply(ctx: &Ctx<'_>, items: Vec<(f64, Bytes)>, withscores: bool) -> Reply {
    let resp3 = ctx.session.protocol == crate::resp::Protocol::Resp3;
    let mut out = Vec::with_capacity(items.len() * if withscores { 2 } else { 1 });
    for (s, m) in items {
        if withscores && resp3 {
            out.push(Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]));
        } else {
            out.push(Reply::Bulk(m));
            if withscores {
                out.push(Reply::Double(s));
            }
        }
    }
    Reply::Array(out)
}

fn range_reply(ctx: &Ctx<'_>, key: &[u8], r: &RangeSpec) -> CmdResult {
    let Some(c) = ctx.coll(key, ZSET)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let items = select(ctx, &c, r)?;
    Ok(pairs_reply(ctx, items, r.withscores))
}

pub fn zrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let r = parse_range(a, 2, false)?;
    range_reply(ctx, &a[1], &r)
}

/// ZREVRANGE / ZRANGEBYSCORE / ZREVRANGEBYSCORE / ZRANGEBYLEX / ZREVRANGEBYLEX: the legacy
/// syntax `key a b [WITHSCORES] [LIMIT offset count]`.
fn legacy(ctx: &Ctx<'_>, a: &[Bytes], kind: u8, rev: bool) -> CmdResult {
    let (mut withscores, mut limit) = (false, None);
    let mut j = 4;
    while j < a.len() {
        if is(&a[j], "WITHSCORES") && kind != b'l' {
            withscores = true;
            j += 1;
        } else if is(&a[j], "LIMIT") && kind != b'r' && j + 2 < a.len() {
            limit = Some((int_arg(&a[j + 1])?, int_arg(&a[j + 2])?));
            j += 3;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    let (lo, hi) = if rev && kind != b'r' {
        (&a[3], &a[2])
    } else {
        (&a[2], &a[3])
    };
    let by = match kind {
        b'r' => RangeBy::Rank(int_arg(lo)?, int_arg(hi)?),
        b's' => {
            let (x, y) = score_bounds(lo, hi)?;
            RangeBy::Score(x, y)
        }
        _ => {
            let (x, y) = lex_bounds(lo, hi)?;
            RangeBy::Lex(x, y)
        }
    };
    range_reply(
        ctx,
        &a[1],
        &RangeSpec {
            by,
            rev,
            limit,
            withscores,
        },
    )
}

pub fn zrevrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    legacy(ctx, a, b'r', true)
}
pub fn zrangebyscore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    legacy(ctx, a, b's', false)
}
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    legacy(ctx, a, b's', true)
}
pub fn zrangebylex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    legacy(ctx, a, b'l', false)
}
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    legacy(ctx, a, b'l', true)
}

fn count_in(ctx: &Ctx<'_>, key: &[u8], by: RangeBy) -> CmdResult {
    let Some(c) = ctx.coll(key, ZSET)? else {
        return Ok(Reply::Int(0));
    };
    let r = RangeSpec {
        by,
        rev: false,
        limit: None,
        withscores: false,
    };
    Ok(Reply::Int(select(ctx, &c, &r)?.len() as i64))
}

pub fn zcount(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (x, y) = score_bounds(&a[2], &a[3])?;
    count_in(ctx, &a[1], RangeBy::Score(x, y))
}

pub fn zlexcount(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (x, y) = lex_bounds(&a[2], &a[3])?;
    count_in(ctx, &a[1], RangeBy::Lex(x, y))
}

fn rank_generic(ctx: &Ctx<'_>, a: &[Bytes], rev: bool) -> CmdResult {
    let withscore = match a.len() {
        3 => false,
        4 if is(&a[3], "WITHSCORE") => true,
        _ => return Err(err(errors::SYNTAX)),
    };
    let nil = if withscore {
        Reply::NullArray
    } else {
        Reply::Null
    };
    let Some(c) = ctx.coll(&a[1], ZSET)? else {
        return Ok(nil);
    };
    let Some(s) = score_of(ctx, &c, &a[2])? else {
        return Ok(nil);
    };
    let mut rank = 0i64;
    let mut found = false;
    walk(ctx, &c, rev, None, |_, m| {
        if m == a[2].as_ref() {
            found = true;
            return Ok(false);
        }
        rank += 1;
        Ok(true)
    })?;
    if !found {
        return Err(err("ERR storage error: sorted-set index misses a member"));
    }
    Ok(if withscore {
        Reply::Array(vec![Reply::Int(rank), Reply::Double(s)])
    } else {
        Reply::Int(rank)
    })
}

pub fn zrank(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    rank_generic(ctx, a, false)
}
pub fn zrevrank(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    rank_generic(ctx, a, true)
}

fn remrange(ctx: &mut Ctx<'_>, key: &[u8], by: RangeBy) -> CmdResult {
    let Some(mut c) = ctx.coll(key, ZSET)? else {
        return Ok(Reply::Int(0));
    };
    let r = RangeSpec {
        by,
        rev: false,
        limit: None,
        withscores: false,
    };
    let items = select(ctx, &c, &r)?;
    for (s, m) in &items {
        del_member(ctx, &c, m, *s);
    }
    c.meta.size = c.meta.size.saturating_sub(items.len() as u64);
    if !items.is_empty() {
        ctx.coll_save(&c)?;
    }
    Ok(Reply::Int(items.len() as i64))
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = RangeBy::Rank(int_arg(&a[2])?, int_arg(&a[3])?);
    remrange(ctx, &a[1], by)
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (x, y) = score_bounds(&a[2], &a[3])?;
    remrange(ctx, &a[1], RangeBy::Score(x, y))
}

pub fn zremrangebylex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (x, y) = lex_bounds(&a[2], &a[3])?;
    remrange(ctx, &a[1], RangeBy::Lex(x, y))
}

pub fn zscan(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let s = scan_args(a, false)?;
    let c = ctx.coll(&a[1], ZSET)?;
    scan_page(ctx, c.as_ref(), &s, |m, v, out| {
        out.push(Reply::Bulk(Bytes::copy_from_slice(m)));
        out.push(Reply::Double(stored_score(v)?));
        Ok(())
    })
}
