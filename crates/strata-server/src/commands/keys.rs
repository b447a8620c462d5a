//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME, SCAN (MATCH, COUNT, TYPE), KEYS.
//!
//! Invariants: DEL/UNLINK/RENAME hold the stripes of all their keys across read and write (see
//! `locks`); SCAN examines at most COUNT keys per call and resumes through the cursor table
//! (see `cursor`), so a full iteration returns every key that existed throughout it; KEYS and
//! SCAN with a pattern that starts with literal bytes only visit that prefix's key range.
//! Depends on `commands` helpers, `store`, `glob`, `cursor`.

use std::collections::HashSet;

use bytes::Bytes;
use strata::WriteBatch;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::glob;
use crate::numbers::parse_u64;
use crate::resp::Reply;
use crate::store::Store;
use crate::value::ValueType;

pub fn del(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let keys = &a[1..];
    let _g = ctx.store().locks().lock_keys(keys);
    let mut batch = WriteBatch::new();
    let mut seen: HashSet<&[u8]> = HashSet::with_capacity(keys.len());
    for k in keys {
        if !seen.insert(k.as_ref()) {
            continue;
        }
        if ctx.entry(k)?.is_some() {
            Store::delete(&mut batch, k);
        }
    }
    let n = batch.len();
    if n > 0 {
        ctx.store().write(batch)?;
    }
    Ok(Reply::Int(n as i64))
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
    let _g = ctx.store().locks().lock_keys(&a[1..3]);
    if ctx.store().rename(&a[1], &a[2], ctx.now)? {
        Ok(Reply::Ok)
    } else {
        Err(err(errors::NO_SUCH_KEY))
    }
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
    let prefix = pattern.map(|p| glob::literal_prefix(p)).unwrap_or_default();
    let mut keys = Vec::new();
    let next = ctx
        .store()
        .scan(&prefix, from.as_deref(), count, ctx.now, |k, vtype, _| {
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
    let prefix = glob::literal_prefix(pattern);
    let all = pattern.as_ref() == b"*";
    let mut keys = Vec::new();
    ctx.store()
        .scan(&prefix, None, usize::MAX, ctx.now, |k, _, _| {
            if all || glob::matches(pattern, k, false) {
                keys.push(Reply::Bulk(Bytes::copy_from_slice(k)));
            }
        })?;
    Ok(Reply::Array(keys))
}
