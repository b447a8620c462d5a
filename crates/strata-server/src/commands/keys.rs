//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME, SCAN (MATCH, COUNT, TYPE), KEYS.
//!
//! Invariants: DEL/UNLINK/RENAME read and write through `Ctx` (the executor holds the stripes of
//! all their keys; see `locks`); RENAME moves the stored bytes, TTL included; SCAN examines at most
//! COUNT keys per call and resumes through the cursor table (see `cursor`), so a full iteration
//! returns every key that existed throughout it; KEYS and SCAN with a pattern that starts with
//! literal bytes only visit that prefix's key range. Depends on `commands` helpers, `store`,
//! `glob`, `cursor`.

use std::collections::HashSet;

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::glob;
use crate::numbers::parse_u64;
use crate::resp::Reply;
use crate::value::ValueType;

pub fn del(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let keys = &a[1..];
    let mut n = 0;
    let mut seen: HashSet<&[u8]> = HashSet::with_capacity(keys.len());
    for k in keys {
        if !seen.insert(k.as_ref()) {
            continue;
        }
        if ctx.entry(k)?.is_some() {
            ctx.delete(k);
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

pub fn exists(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut n = 0;
    for k in &a[1..] {
        if ctx.entry(k)?.is_some() {
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

pub fn type_(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    Ok(Reply::simple(match ctx.entry(&a[1])? {
        None => "none",
        Some(e) => e.vtype.map_or("unknown", ValueType::name),
    }))
}

pub fn rename(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(raw) = ctx.raw(&a[1])? else {
        return Err(err(errors::NO_SUCH_KEY));
    };
    if a[1] != a[2] {
        ctx.delete(&a[1]);
        ctx.put_raw(&a[2], raw)?;
    }
    Ok(Reply::Ok)
}

pub fn scan(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let cursor = parse_u64(&a[1]).ok_or_else(|| err(errors::INVALID_CURSOR))?;
    let mut count: usize = 10;
    let mut pattern: Option<&Bytes> = None;
    let mut type_filter: Option<&Bytes> = None;
    let mut i = 2;
    while i < a.len() {
        let remaining = a.len() - i;
        if is(&a[i], "COUNT") && remaining >= 2 {
            let c = int_arg(&a[i + 1])?;
            if c < 1 {
                return Err(err(errors::SYNTAX));
            }
            count = usize::try_from(c).unwrap_or(usize::MAX);
        } else if is(&a[i], "MATCH") && remaining >= 2 {
            pattern = Some(&a[i + 1]);
        } else if is(&a[i], "TYPE") && remaining >= 2 {
            type_filter = Some(&a[i + 1]);
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 2;
    }
    let from = ctx.shared.cursors.resume(cursor);
    let mut keys = Vec::new();
    let next = ctx
        .store()
        .scan(from.as_deref(), count, ctx.now, |k, vtype, _| {
            if pattern.is_some_and(|p| !glob::matches(p, k, false)) {
                return;
            }
            if let Some(t) = type_filter {
                if vtype.is_none_or(|v| !is(t, v.name())) {
                    return;
                }
            }
            keys.push(Reply::Bulk(Bytes::copy_from_slice(k)));
        })?;
    let next_cursor = match next {
        Some(resume) => ctx.shared.cursors.issue(resume),
        None => 0,
    };
    Ok(Reply::Array(vec![
        Reply::bulk(next_cursor.to_string().into_bytes()),
        Reply::Array(keys),
    ]))
}

pub fn keys(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let pattern = &a[1];
    let all = pattern.as_ref() == b"*";
    let mut keys = Vec::new();
    ctx.store().scan(None, usize::MAX, ctx.now, |k, _, _| {
        if all || glob::matches(pattern, k, false) {
            keys.push(Reply::Bulk(Bytes::copy_from_slice(k)));
        }
    })?;
    Ok(Reply::Array(keys))
}
