//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME, RENAMENX, COPY, SCAN (MATCH, COUNT, TYPE), KEYS,
//! OBJECT ENCODING.
//!
//! Invariants: DEL/UNLINK/RENAME read and write through `Ctx` (the executor holds the stripes of
//! all their keys; see `locks`); DEL of a collection deletes only its metadata (O(1); the
//! sub-keys are left to the compaction filter); RENAME/RENAMENX move and COPY copies the stored
//! bytes, TTL included —
//! for a collection it copies the elements under the new key and a fresh version (O(N), as in
//! Kvrocks), so these run in a segment of their own; SCAN examines at most
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

/// RANDOMKEY: the first live key at or after a random point of the key space (wrapping to the
/// start). Keys are laid out by a 32-bit hash of the name (see `keyspace`), so a key's chance
/// is the share of hash space between it and the key before it: near uniform, and like redis'
/// own pick not exactly so. Expired keys are skipped within a bounded walk.
pub fn randomkey(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let mut point = vec![crate::keyspace::NS_DB0];
    point.extend_from_slice(&(super::sets::random_u64() as u32).to_be_bytes());
    let mut from = Some(point);
    let mut wrapped = false;
    let mut found = None;
    for _ in 0..64 {
        let next = ctx.scan_keys(from.as_deref(), 16, |k, _| {
            if found.is_none() {
                found = Some(Bytes::copy_from_slice(k));
            }
        })?;
        if found.is_some() {
            break;
        }
        match next {
            Some(n) => from = Some(n),
            None if !wrapped => {
                wrapped = true;
                from = None;
            }
            None => break,
        }
    }
    Ok(found.map_or(Reply::Null, Reply::Bulk))
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
    copy_value(ctx, &a[1], &a[2], e.vtype)?;
    ctx.delete(&a[1]);
    Ok(Reply::Ok)
}

/// RENAMENX: RENAME unless the destination exists (0 then, and for a key renamed to itself).
pub fn renamenx(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(e) = ctx.entry(&a[1])? else {
        return Err(err(errors::NO_SUCH_KEY));
    };
    if a[1] == a[2] || ctx.entry(&a[2])?.is_some() {
        return Ok(Reply::Int(0));
    }
    copy_value(ctx, &a[1], &a[2], e.vtype)?;
    ctx.delete(&a[1]);
    Ok(Reply::Int(1))
}

/// COPY source destination [DB db] [REPLACE]: 1 when copied, 0 when the source is missing or
/// the destination exists without REPLACE. There is one database, so `DB` must name 0 (the
/// error SELECT gives otherwise).
pub fn copy(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut replace = false;
    let mut i = 3;
    while i < a.len() {
        if is(&a[i], "REPLACE") {
            replace = true;
            i += 1;
        } else if is(&a[i], "DB") && i + 1 < a.len() {
            match crate::numbers::parse_i64(&a[i + 1]) {
                None => return Err(err(errors::NOT_INTEGER)),
                Some(0) => {}
                Some(_) => return Err(err(errors::DB_RANGE)),
            }
            i += 2;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    if a[1] == a[2] {
        return Err(err(errors::SAME_OBJECT));
    }
    let Some(e) = ctx.entry(&a[1])? else {
        return Ok(Reply::Int(0));
    };
    if ctx.entry(&a[2])?.is_some() {
        if !replace {
            return Ok(Reply::Int(0));
        }
        ctx.delete(&a[2]);
    }
    copy_value(ctx, &a[1], &a[2], e.vtype)?;
    Ok(Reply::Int(1))
}

/// Writes `src`'s value (TTL included) under `dst`, replacing whatever `dst` held; a
/// collection's elements are copied under a fresh version of `dst` (O(N), as in Kvrocks), so
/// the stale elements of an older `dst` are never read and the compaction filter drops them.
fn copy_value(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    vtype: Option<ValueType>,
) -> Result<(), Reply> {
    match vtype.filter(|t| t.is_collection()) {
        Some(t) => {
            let from = ctx.coll(src, t)?.ok_or_else(|| err(errors::NO_SUCH_KEY))?;
            let to = Coll {
                key: dst.to_vec(),
                meta: Meta {
                    version: next_version(),
                    ..from.meta
                },
                ..from.clone()
            };
            ctx.elems_copy(&from, &to)?;
            ctx.coll_save(&to)?;
        }
        None => {
            let raw = ctx.raw(src)?.ok_or_else(|| err(errors::NO_SUCH_KEY))?;
            ctx.put_raw(dst, raw)?;
        }
    }
    Ok(())
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
        ValueType::Stream => "stream",
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
    let next = ctx.scan_keys(from.as_deref(), count, |k, vtype| {
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
    ctx.scan_keys(None, usize::MAX, |k, _| {
        if all || glob::matches(pattern, k, false) {
            keys.push(Reply::Bulk(Bytes::copy_from_slice(k)));
        }
    })?;
    Ok(Reply::Array(keys))
}
