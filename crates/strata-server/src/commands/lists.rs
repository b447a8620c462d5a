//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LINDEX, LRANGE, LSET, LTRIM,
//! LREM, LINSERT, LPOS, RPOPLPUSH, LMOVE, LMPOP; the blocking forms (BLPOP, BRPOP, BRPOPLPUSH,
//! BLMOVE, BLMPOP) serve a non-empty list at once and otherwise wait ([`wait_for_keys`], see
//! `blocking`).
//!
//! Invariants: a list is a collection (see `collections`) whose elements sit at sub-keys
//! `head..tail` (u64 big-endian indices, contiguous: `tail - head == size`); pushes move
//! `head` down or `tail` up, pops the reverse; LREM and LINSERT rewrite the list under a fresh
//! version (O(N), as in Kvrocks), so indices stay contiguous. Depends on `commands` helpers,
//! `collections::access`.
//! Must not depend on the network layer (`connection`, `server::Server`) or touch the engine
//! except through `Ctx` and `collections::access`.

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::{list_index, Coll};
use crate::collections::meta::Meta;
use crate::collections::subkey::ELEM;
use crate::resp::Reply;
use crate::value::ValueType;

const LIST: ValueType = ValueType::List;

fn idx(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn push(ctx: &mut Ctx<'_>, c: &mut Coll, left: bool, v: &[u8]) -> Result<(), Reply> {
    let exhausted =
        || err("ERR list index space exhausted at this end (LREM or LINSERT rewrites it)");
    if left {
        c.meta.head = c.meta.head.checked_sub(1).ok_or_else(exhausted)?;
        ctx.elem_put(c, ELEM, &idx(c.meta.head), v)?;
    } else {
        ctx.elem_put(c, ELEM, &idx(c.meta.tail), v)?;
        c.meta.tail = c.meta.tail.checked_add(1).ok_or_else(exhausted)?;
    }
    c.meta.size += 1;
    Ok(())
}

/// `count` elements from the left (or right) end, in pop order: point reads of the indexes
/// the metadata names (a list's elements are contiguous, `head..tail`), so they see the
/// segment's pending writes (see `CommandSpec::alone`).
fn peek_end(ctx: &Ctx<'_>, c: &Coll, left: bool, count: u64) -> Result<Vec<(u64, Bytes)>, Reply> {
    let mut out = Vec::with_capacity(count.min(1024) as usize);
    for n in 0..count.min(c.meta.size) {
        let i = if left {
            c.meta.head + n
        } else {
            c.meta.tail - 1 - n
        };
        match ctx.elem_get(c, ELEM, &idx(i))? {
            Some(v) => out.push((i, v)),
            None => {
                return Err(err(
                    "ERR storage error: list elements do not match the list's metadata",
                ))
            }
        }
    }
    Ok(out)
}

fn pop_n(ctx: &mut Ctx<'_>, c: &mut Coll, left: bool, count: u64) -> Result<Vec<Bytes>, Reply> {
    let got = peek_end(ctx, c, left, count.min(c.meta.size))?;
    for (i, _) in &got {
        ctx.elem_del(c, ELEM, &idx(*i));
    }
    let n = got.len() as u64;
    if left {
        c.meta.head += n;
    } else {
        c.meta.tail -= n;
    }
    c.meta.size -= n;
    Ok(got.into_iter().map(|(_, v)| v).collect())
}

fn push_generic(ctx: &mut Ctx<'_>, a: &[Bytes], left: bool, only_existing: bool) -> CmdResult {
    let mut c = match ctx.coll(&a[1], LIST)? {
        Some(c) => c,
        None if only_existing => return Ok(Reply::Int(0)),
        None => ctx.coll_or_new(&a[1], LIST)?,
    };
    for v in &a[2..] {
        push(ctx, &mut c, left, v)?;
    }
    ctx.coll_save(&c)?;
    Ok(Reply::Int(c.meta.size as i64))
}

pub fn lpush(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push_generic(ctx, a, true, false)
}
pub fn rpush(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push_generic(ctx, a, false, false)
}
pub fn lpushx(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push_generic(ctx, a, true, true)
}
pub fn rpushx(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push_generic(ctx, a, false, true)
}

fn pop_generic(ctx: &mut Ctx<'_>, a: &[Bytes], left: bool) -> CmdResult {
    let count = match a.len() {
        2 => None,
        3 => {
            let c =
                int_arg(&a[2]).map_err(|_| err("ERR value is out of range, must be positive"))?;
            if c < 0 {
                return Err(err("ERR value is out of range, must be positive"));
            }
            Some(c as u64)
        }
        _ => return Err(errors::wrong_args(if left { "lpop" } else { "rpop" })),
    };
    let Some(mut c) = ctx.coll(&a[1], LIST)? else {
        return Ok(if count.is_some() {
            Reply::NullArray
        } else {
            Reply::Null
        });
    };
    let vals = pop_n(ctx, &mut c, left, count.unwrap_or(1))?;
    ctx.coll_save(&c)?;
    Ok(match count {
        Some(_) => Reply::Array(vals.into_iter().map(Reply::Bulk).collect()),
        None => Reply::opt_bulk(vals.into_iter().next()),
    })
}

pub fn lpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop_generic(ctx, a, true)
}
pub fn rpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop_generic(ctx, a, false)
}

pub fn llen(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(
        ctx.coll(&a[1], LIST)?.map_or(0, |c| c.meta.size as i64),
    ))
}

/// Resolves a Redis list index (negative from the end) to an offset from the head.
fn offset(i: i64, size: u64) -> Option<u64> {
    let i = if i < 0 {
        i.checked_add(size as i64)?
    } else {
        i
    };
    (i >= 0 && (i as u64) < size).then_some(i as u64)
}

pub fn lindex(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let i = int_arg(&a[2])?;
    let Some(c) = ctx.coll(&a[1], LIST)? else {
        return Ok(Reply::Null);
    };
    let Some(off) = offset(i, c.meta.size) else {
        return Ok(Reply::Null);
    };
    let v = ctx.elem_get(&c, ELEM, &idx(c.meta.head + off))?;
    if v.is_none() {
        return Err(err("ERR storage error: list element missing"));
    }
    Ok(Reply::opt_bulk(v))
}

/// The elements at offsets `start..=end` (already clamped, `start <= end < size`).
fn range(ctx: &Ctx<'_>, c: &Coll, start: u64, end: u64) -> Result<Vec<Bytes>, Reply> {
    let mut out = Vec::with_capacity((end - start + 1).min(1 << 16) as usize);
    let want = end - start + 1;
    let mut expect = c.meta.head + start;
    ctx.elems(c, ELEM, false, Some(&idx(c.meta.head + start)), |r, v| {
        if list_index(r)? != expect {
            return Err(err(
                "ERR storage error: list elements do not match the list's metadata",
            ));
        }
        expect += 1;
        out.push(Bytes::copy_from_slice(v));
        Ok((out.len() as u64) < want)
    })?;
    if out.len() as u64 != want {
        return Err(err("ERR storage error: list elements missing"));
    }
    Ok(out)
}

/// Redis's start/end clamping for LRANGE/LTRIM: `None` for an empty range.
fn clamp(start: i64, end: i64, size: u64) -> Option<(u64, u64)> {
    let n = size as i64;
    let mut s = if start < 0 {
        start.saturating_add(n)
    } else {
        start
    };
    let mut e = if end < 0 { end.saturating_add(n) } else { end };
    s = s.max(0);
    if s > e || s >= n {
        return None;
    }
    if e >= n {
        e = n - 1;
    }
    e = e.max(0);
    Some((s as u64, e as u64))
}

pub fn lrange(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (s, e) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let Some(c) = ctx.coll(&a[1], LIST)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let Some((s, e)) = clamp(s, e, c.meta.size) else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(Reply::Array(
        range(ctx, &c, s, e)?.into_iter().map(Reply::Bulk).collect(),
    ))
}

pub fn lset(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let i = int_arg(&a[2])?;
    let Some(c) = ctx.coll(&a[1], LIST)? else {
        return Err(err(errors::NO_SUCH_KEY));
    };
    let Some(off) = offset(i, c.meta.size) else {
        return Err(err("ERR index out of range"));
    };
    ctx.elem_put(&c, ELEM, &idx(c.meta.head + off), &a[3])?;
    ctx.coll_save(&c)?;
    Ok(Reply::Ok)
}

pub fn ltrim(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (s, e) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let Some(mut c) = ctx.coll(&a[1], LIST)? else {
        return Ok(Reply::Ok);
    };
    let (keep_from, keep_to) = match clamp(s, e, c.meta.size) {
        Some((s, e)) => (c.meta.head + s, c.meta.head + e + 1),
        None => (c.meta.tail, c.meta.tail),
    };
    for i in (c.meta.head..keep_from).chain(keep_to..c.meta.tail) {
        ctx.elem_del(&c, ELEM, &idx(i));
    }
    c.meta.head = keep_from;
    c.meta.tail = keep_to;
    c.meta.size = keep_to - keep_from;
    ctx.coll_save(&c)?;
    Ok(Reply::Ok)
}

fn all(ctx: &Ctx<'_>, c: &Coll) -> Result<Vec<Bytes>, Reply> {
    range(ctx, c, 0, c.meta.size - 1)
}

/// Replaces the list with `elems` under a fresh version (keeping the expiry).
fn rewrite(ctx: &mut Ctx<'_>, c: &Coll, elems: &[Bytes]) -> Result<(), Reply> {
    let mut n = Coll {
        meta: Meta::fresh(LIST),
        ..c.clone()
    };
    for v in elems {
        push(ctx, &mut n, false, v)?;
    }
    ctx.coll_save(&n)
}

pub fn lrem(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let count = int_arg(&a[2])?;
    let Some(c) = ctx.coll(&a[1], LIST)? else {
        return Ok(Reply::Int(0));
    };
    let mut elems = all(ctx, &c)?;
    let target = &a[3];
    let limit = if count == 0 {
        u64::MAX
    } else {
        count.unsigned_abs()
    };
    let mut removed = 0u64;
    let mut keep = vec![true; elems.len()];
    let order: Box<dyn Iterator<Item = usize>> = if count < 0 {
        Box::new((0..elems.len()).rev())
    } else {
        Box::new(0..elems.len())
    };
    for i in order {
        if removed >= limit {
            break;
        }
        if elems[i] == *target {
            keep[i] = false;
            removed += 1;
        }
    }
    if removed > 0 {
        let mut k = keep.into_iter();
        elems.retain(|_| k.next().unwrap_or(true));
        rewrite(ctx, &c, &elems)?;
    }
    Ok(Reply::Int(removed as i64))
}

pub fn linsert(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let before = if is(&a[2], "BEFORE") {
        true
    } else if is(&a[2], "AFTER") {
        false
    } else {
        return Err(err(errors::SYNTAX));
    };
    let Some(c) = ctx.coll(&a[1], LIST)? else {
        return Ok(Reply::Int(0));
    };
    let mut elems = all(ctx, &c)?;
    let Some(pos) = elems.iter().position(|e| *e == a[3]) else {
        return Ok(Reply::Int(-1));
    };
    elems.insert(if before { pos } else { pos + 1 }, a[4].clone());
    rewrite(ctx, &c, &elems)?;
    Ok(Reply::Int(elems.len() as i64))
}

pub fn lpos(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut i = 3;
    while i < a.len() {
        if i + 1 >= a.len() {
            return Err(err(errors::SYNTAX));
        }
        let v = int_arg(&a[i + 1])?;
        if is(&a[i], "RANK") {
            if v == 0 || v == i64::MIN {
                return Err(err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"));
            }
            rank = v;
        } else if is(&a[i], "COUNT") {
            if v < 0 {
                return Err(err("ERR COUNT can't be negative"));
            }
            count = Some(v);
        } else if is(&a[i], "MAXLEN") {
            if v < 0 {
                return Err(err("ERR MAXLEN can't be negative"));
            }
            maxlen = v;
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 2;
    }
    let Some(c) = ctx.coll(&a[1], LIST)? else {
        return Ok(if count.is_some() {
            Reply::Array(Vec::new())
        } else {
            Reply::Null
        });
    };
    let elems = all(ctx, &c)?;
    let n = elems.len();
    let order: Box<dyn Iterator<Item = usize>> = if rank < 0 {
        Box::new((0..n).rev())
    } else {
        Box::new(0..n)
    };
    let mut skip = rank.unsigned_abs() - 1;
    let want = match count {
        Some(0) => u64::MAX,
        Some(c) => c as u64,
        None => 1,
    };
    let mut found = Vec::new();
    for (examined, i) in order.enumerate() {
        if maxlen > 0 && examined as i64 >= maxlen {
            break;
        }
        if elems[i] == a[2] {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(Reply::Int(i as i64));
            if found.len() as u64 >= want {
                break;
            }
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found),
        None => found.pop().unwrap_or(Reply::Null),
    })
}

fn side(w: &[u8]) -> Result<bool, Reply> {
    if is(w, "LEFT") {
        Ok(true)
    } else if is(w, "RIGHT") {
        Ok(false)
    } else {
        Err(err(errors::SYNTAX))
    }
}

/// Moves one element from `src`'s `from_left` end to `dst`'s `to_left` end.
fn move_generic(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> CmdResult {
    let Some(mut s) = ctx.coll(src, LIST)? else {
        return Ok(Reply::Null);
    };
    if src != dst {
        ctx.coll(dst, LIST)?;
    }
    let v = pop_n(ctx, &mut s, from_left, 1)?;
    let Some(v) = v.into_iter().next() else {
        return Ok(Reply::Null);
    };
    if src == dst {
        push(ctx, &mut s, to_left, &v)?;
        ctx.coll_save(&s)?;
    } else {
        ctx.coll_save(&s)?;
        let mut d = ctx.coll_or_new(dst, LIST)?;
        push(ctx, &mut d, to_left, &v)?;
        ctx.coll_save(&d)?;
    }
    Ok(Reply::Bulk(v))
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    move_generic(ctx, &a[1], &a[2], false, true)
}

pub fn lmove(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (f, t) = (side(&a[3])?, side(&a[4])?);
    move_generic(ctx, &a[1], &a[2], f, t)
}

/// Parses `numkeys key... LEFT|RIGHT [COUNT n]` from `a[first]`.
fn mpop_args(a: &[Bytes], first: usize) -> Result<(&[Bytes], bool, u64), Reply> {
    let n = int_arg(&a[first])?;
    if n <= 0 {
        return Err(err("ERR numkeys should be greater than 0"));
    }
    let n = n as usize;
    let keys_end = first + 1 + n;
    if keys_end >= a.len() {
        return Err(err(errors::SYNTAX));
    }
    let left = side(&a[keys_end])?;
    let mut count = 1u64;
    let rest = &a[keys_end + 1..];
    match rest.len() {
        0 => {}
        2 if is(&rest[0], "COUNT") => {
            let c = int_arg(&rest[1])?;
            if c <= 0 {
                return Err(err("ERR count should be greater than 0"));
            }
            count = c as u64;
        }
        _ => return Err(err(errors::SYNTAX)),
    }
    Ok((&a[first + 1..keys_end], left, count))
}

fn mpop(ctx: &mut Ctx<'_>, keys: &[Bytes], left: bool, count: u64) -> Result<Option<Reply>, Reply> {
    for k in keys {
        if let Some(mut c) = ctx.coll(k, LIST)? {
            let vals = pop_n(ctx, &mut c, left, count)?;
            ctx.coll_save(&c)?;
            return Ok(Some(Reply::Array(vec![
                Reply::Bulk(k.clone()),
                Reply::Array(vals.into_iter().map(Reply::Bulk).collect()),
            ])));
        }
    }
    Ok(None)
}

pub fn lmpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (keys, left, count) = mpop_args(a, 1)?;
    Ok(mpop(ctx, keys, left, count)?.unwrap_or(Reply::NullArray))
}

/// A blocking command found every key in `keys` empty. Inside EXEC or a script it answers
/// `timed_out` at once — the reply of a timeout, as redis gives there (it never blocks in
/// them). Otherwise the client waits (see `blocking`): registered now, while the segment holds
/// the keys' stripes (so no write to them is missed), or left in its place if this is a rerun
/// after a wake; the executor discards the returned reply and parks the client until a write
/// to one of the keys wakes it, `timeout` seconds pass (0: forever), or CLIENT UNBLOCK.
pub fn wait_for_keys(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    timeout: &[u8],
    timed_out: Reply,
) -> CmdResult {
    let secs = crate::numbers::parse_f64(timeout).unwrap_or(0.0);
    let timeout = (secs > 0.0)
        .then(|| std::time::Duration::try_from_secs_f64(secs).ok())
        .flatten();
    wait_for_keys_for(
        ctx,
        keys,
        timeout,
        timed_out,
        crate::blocking::WaitKind::Pop,
    )
}

/// [`wait_for_keys`] with the timeout as a duration (`None`: forever), for a waiter of kind
/// `kind` (how writes wake it, see `blocking`).
pub fn wait_for_keys_for(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    timeout: Option<std::time::Duration>,
    timed_out: Reply,
    kind: crate::blocking::WaitKind,
) -> CmdResult {
    if ctx.pending.in_exec || crate::scripting::in_script() {
        return Ok(timed_out);
    }
    if ctx.session.blocked.is_some() {
        ctx.pending.blocks_again = true;
        return Ok(timed_out);
    }
    let deadline = timeout.and_then(|d| std::time::Instant::now().checked_add(d));
    let registration = ctx
        .shared
        .blocking
        .register_as(ctx.session.client.id, keys, kind);
    // After a real wait redis answers every list and sorted-set form's timeout with the null
    // array (BLMOVE and BRPOPLPUSH too, whose immediate form in MULTI answers a null bulk).
    ctx.pending.block = Some(crate::blocking::Blocked {
        registration,
        deadline,
        timed_out: Reply::NullArray,
        memo: Vec::new(),
    });
    Ok(timed_out)
}

fn check_timeout(a: &[u8]) -> Result<(), Reply> {
    match crate::numbers::parse_f64(a) {
        Some(t) if t < 0.0 => Err(err("ERR timeout is negative")),
        Some(t) if t.is_finite() => Ok(()),
        _ => Err(err("ERR timeout is not a float or out of range")),
    }
}

fn bpop(ctx: &mut Ctx<'_>, a: &[Bytes], left: bool) -> CmdResult {
    check_timeout(&a[a.len() - 1])?;
    let keys = &a[1..a.len() - 1];
    for k in keys {
        if let Some(mut c) = ctx.coll(k, LIST)? {
            let v = pop_n(ctx, &mut c, left, 1)?;
            ctx.coll_save(&c)?;
            if let Some(v) = v.into_iter().next() {
                return Ok(Reply::Array(vec![Reply::Bulk(k.clone()), Reply::Bulk(v)]));
            }
        }
    }
    wait_for_keys(ctx, keys, &a[a.len() - 1], Reply::NullArray)
}

pub fn blpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bpop(ctx, a, true)
}
pub fn brpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bpop(ctx, a, false)
}

pub fn brpoplpush(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    check_timeout(&a[3])?;
    match move_generic(ctx, &a[1], &a[2], false, true)? {
        Reply::Null => wait_for_keys(ctx, &a[1..2], &a[3], Reply::Null),
        r => Ok(r),
    }
}

pub fn blmove(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (f, t) = (side(&a[3])?, side(&a[4])?);
    check_timeout(&a[5])?;
    match move_generic(ctx, &a[1], &a[2], f, t)? {
        Reply::Null => wait_for_keys(ctx, &a[1..2], &a[5], Reply::Null),
        r => Ok(r),
    }
}

pub fn blmpop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    check_timeout(&a[1])?;
    let (keys, left, count) = mpop_args(a, 2)?;
    match mpop(ctx, keys, left, count)? {
        Some(r) => Ok(r),
        None => wait_for_keys(ctx, keys, &a[1], Reply::NullArray),
    }
}
