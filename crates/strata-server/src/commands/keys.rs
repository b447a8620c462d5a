//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME, SCAN (MATCH, COUNT, TYPE), KEYS,
//! OBJECT ENCODING.
//!
//! Invariants: DEL/UNLINK/RENAME read and write through `Ctx` (the executor holds the stripes of
//! all their keys; see `locks`); DEL of a collection deletes only its metadata (O(1); the
//! sub-keys are left to the compaction filter); RENAME moves the stored bytes, TTL included —
//! for a collection it copies the elements under the new key and a fresh version (O(N), as in
//! Kvrocks), so RENAME runs in a segment of its own; SCAN examines at most
//! COUNT keys per call and resumes through the cursor table (see `cursor`), so a full iteration
//! returns every key that existed throughout it; KEYS and SCAN with a pattern that starts with
//! literal bytes only visit that prefix's key range. Depends on `commands` helpers, `store`,
//! `glob`, `cursor`.

use std::collections::HashSet;

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::collections::access::Coll;
use crate::collections::meta::{next_version, Meta};
use crate::collections::subkey::ELEM;
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
    let Some(e) = ctx.entry(&a[1])? else {
        return Err(err(errors::NO_SUCH_KEY));
    };
    if a[1] == a[2] {
        return Ok(Reply::Ok);
    }
    match e.vtype.filter(|t| t.is_collection()) {
        Some(t) => {
            let from = ctx
                .coll(&a[1], t)?
                .ok_or_else(|| err(errors::NO_SUCH_KEY))?;
            let to = Coll {
                key: a[2].to_vec(),
                meta: Meta {
                    version: next_version(),
                    ..from.meta
                },
                ..from.clone()
            };
            ctx.elems_copy(&from, &to)?;
            ctx.delete(&a[1]);
            ctx.coll_save(&to)?;
        }
        None => {
            let raw = ctx.raw(&a[1])?.ok_or_else(|| err(errors::NO_SUCH_KEY))?;
            ctx.delete(&a[1]);
            ctx.put_raw(&a[2], raw)?;
        }
    }
    Ok(Reply::Ok)
}

/// OBJECT ENCODING (and HELP). Collections report the encoding Redis 7.0 would choose for the
/// same contents under its default thresholds (128 entries / 64 bytes for hashes and sorted
/// sets, 512 integers for intsets); the storage itself is always the LSM's.
pub fn object(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if is(&a[1], "HELP") && a.len() == 2 {
        return Ok(Reply::Array(
            [
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|l| Reply::simple(*l))
            .collect(),
        ));
    }
    if !is(&a[1], "ENCODING") {
        return Err(errors::unknown_subcommand(&a[1], "object"));
    }
    if a.len() != 3 {
        return Err(errors::wrong_args("object|encoding"));
    }
    let Some(e) = ctx.entry(&a[2])? else {
        return Ok(Reply::Null);
    };
    let Some(t) = e.vtype else {
        return Err(err(errors::WRONGTYPE));
    };
    let name = match t {
        ValueType::String => {
            if e.payload.len() <= 20 && crate::numbers::parse_i64(&e.payload).is_some() {
                "int"
            } else if e.payload.len() <= 44 {
                "embstr"
            } else {
                "raw"
            }
        }
        ValueType::List => "quicklist",
        _ => {
            let c = ctx
                .coll(&a[2], t)?
                .ok_or_else(|| err(errors::NO_SUCH_KEY))?;
            collection_encoding(ctx, &c)?
        }
    };
    Ok(Reply::bulk(Bytes::from_static(name.as_bytes())))
}

fn collection_encoding(ctx: &Ctx<'_>, c: &Coll) -> Result<&'static str, Reply> {
    let (small, big) = match c.vtype {
        ValueType::Hash => ("listpack", "hashtable"),
        ValueType::ZSet => ("listpack", "skiplist"),
        _ => ("intset", "hashtable"),
    };
    let limit = if c.vtype == ValueType::Set { 512 } else { 128 };
    if c.meta.size > limit {
        return Ok(big);
    }
    let mut fits = true;
    ctx.elems(c, ELEM, false, None, |k, v| {
        fits = match c.vtype {
            ValueType::Set => k.len() <= 20 && crate::numbers::parse_i64(k).is_some(),
            ValueType::Hash => k.len() <= 64 && v.len() <= 64,
            _ => k.len() <= 64,
        };
        Ok(fits)
    })?;
    Ok(if fits { small } else { big })
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
