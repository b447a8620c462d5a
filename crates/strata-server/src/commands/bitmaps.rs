//! Bitmap commands over string values, as in Redis: GETBIT, SETBIT, BITCOUNT (BYTE|BIT),
//! BITPOS (BYTE|BIT), BITOP (AND, OR, XOR, NOT).
//!
//! Invariants: bitmaps are strings (TYPE says `string`); bit 0 is the most significant bit of
//! byte 0; SETBIT grows the string with zero bytes and keeps its TTL; results never exceed
//! `proto-max-bulk-len`; BITOP replaces the destination (and its TTL) or deletes it when the
//! result is empty. Depends on `commands` helpers.
//! Must not depend on the network layer (`connection`, `server::Server`) or touch the engine
//! except through `Ctx` and `collections::access`.

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::resp::Reply;
use crate::value::ValueType;

const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";

fn string_bytes(ctx: &Ctx<'_>, key: &[u8]) -> Result<Option<Bytes>, Reply> {
    Ok(ctx.string(key)?.map(|e| e.payload))
}

fn bit_offset(ctx: &Ctx<'_>, a: &[u8]) -> Result<u64, Reply> {
    let o = crate::numbers::parse_i64(a).ok_or_else(|| err(BIT_OFFSET))?;
    if o < 0 || (o as u64 >> 3) >= ctx.shared.limits.proto_max_bulk_len() {
        return Err(err(BIT_OFFSET));
    }
    Ok(o as u64)
}

pub fn getbit(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let off = bit_offset(ctx, &a[2])?;
    let v = string_bytes(ctx, &a[1])?.unwrap_or_default();
    let byte = (off >> 3) as usize;
    let bit = v.get(byte).map_or(0, |b| (b >> (7 - (off & 7))) & 1);
    Ok(Reply::Int(i64::from(bit)))
}

pub fn setbit(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let off = bit_offset(ctx, &a[2])?;
    let on = match a[3].as_ref() {
        b"1" => true,
        b"0" => false,
        _ => return Err(err("ERR bit is not an integer or out of range")),
    };
    let e = ctx.string(&a[1])?;
    let expire_at = e.as_ref().and_then(|e| e.expire_at);
    let mut v = e.map(|e| e.payload.to_vec()).unwrap_or_default();
    let byte = (off >> 3) as usize;
    if v.len() <= byte {
        v.resize(byte + 1, 0);
    }
    let mask = 1u8 << (7 - (off & 7));
    let old = (v[byte] & mask != 0) as i64;
    if on {
        v[byte] |= mask;
    } else {
        v[byte] &= !mask;
    }
    ctx.put(&a[1], ValueType::String, expire_at, &v)?;
    Ok(Reply::Int(old))
}

/// Resolves Redis's (start, end) byte or bit range over `len` units; `None` if empty.
fn resolve(start: i64, end: i64, len: i64) -> Option<(i64, i64)> {
    let mut s = if start < 0 {
        start.saturating_add(len)
    } else {
        start
    };
    let mut e = if end < 0 {
        end.saturating_add(len)
    } else {
        end
    };
    s = s.max(0);
    e = e.max(0);
    if e >= len {
        e = len - 1;
    }
    (s <= e && len > 0).then_some((s, e))
}

fn unit(a: Option<&Bytes>) -> Result<bool, Reply> {
    match a {
        None => Ok(false),
        Some(w) if is(w, "BYTE") => Ok(false),
        Some(w) if is(w, "BIT") => Ok(true),
        Some(_) => Err(err(errors::SYNTAX)),
    }
}

fn bit_at(v: &[u8], i: i64) -> u8 {
    (v[(i >> 3) as usize] >> (7 - (i & 7))) & 1
}

pub fn bitcount(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let range = match a.len() {
        2 => None,
        4 | 5 => Some((int_arg(&a[2])?, int_arg(&a[3])?, unit(a.get(4))?)),
        _ => return Err(err(errors::SYNTAX)),
    };
    let v = string_bytes(ctx, &a[1])?.unwrap_or_default();
    let n: u64 = match range {
        // As redis: two negative indexes in reverse order count nothing, even where clamping
        // both to 0 would select the first byte.
        Some((s, e, _)) if s < 0 && e < 0 && s > e => 0,
        None => v.iter().map(|b| u64::from(b.count_ones())).sum(),
        Some((s, e, false)) => match resolve(s, e, v.len() as i64) {
            Some((s, e)) => v[s as usize..=e as usize]
                .iter()
                .map(|b| u64::from(b.count_ones()))
                .sum(),
            None => 0,
        },
        Some((s, e, true)) => match resolve(s, e, v.len() as i64 * 8) {
            Some((s, e)) => (s..=e).map(|i| u64::from(bit_at(&v, i))).sum(),
            None => 0,
        },
    };
    Ok(Reply::Int(n as i64))
}

pub fn bitpos(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let bit = match a[2].as_ref() {
        b"1" => 1u8,
        b"0" => 0u8,
        _ => return Err(err("ERR The bit argument must be 1 or 0.")),
    };
    if a.len() > 6 {
        return Err(err(errors::SYNTAX));
    }
    let start = a.get(3).map(|s| int_arg(s)).transpose()?;
    let end_given = a.len() >= 5;
    let end = a.get(4).map(|s| int_arg(s)).transpose()?;
    let bits = unit(a.get(5))?;
    let Some(v) = string_bytes(ctx, &a[1])? else {
        return Ok(Reply::Int(if bit == 1 { -1 } else { 0 }));
    };
    let len = v.len() as i64 * if bits { 8 } else { 1 };
    let Some((s, e)) = resolve(start.unwrap_or(0), end.unwrap_or(-1), len) else {
        return Ok(Reply::Int(-1));
    };
    let (first_bit, last_bit) = if bits { (s, e) } else { (s * 8, e * 8 + 7) };
    for i in first_bit..=last_bit {
        if bit_at(&v, i) == bit {
            return Ok(Reply::Int(i));
        }
    }
    // Looking for a clear bit without an explicit end: the string is padded with zeros.
    if bit == 0 && !end_given {
        return Ok(Reply::Int(last_bit + 1));
    }
    Ok(Reply::Int(-1))
}

pub fn bitop(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let op = &a[1];
    let srcs = &a[3..];
    let not = is(op, "NOT");
    if !(not || is(op, "AND") || is(op, "OR") || is(op, "XOR")) {
        return Err(err(errors::SYNTAX));
    }
    if not && srcs.len() != 1 {
        return Err(err(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let mut vals = Vec::with_capacity(srcs.len());
    for k in srcs {
        vals.push(string_bytes(ctx, k)?.unwrap_or_default());
    }
    let maxlen = vals.iter().map(|v| v.len()).max().unwrap_or(0);
    let mut out = vec![0u8; maxlen];
    for (i, o) in out.iter_mut().enumerate() {
        let byte = |v: &Bytes| v.get(i).copied().unwrap_or(0);
        *o = if not {
            !byte(&vals[0])
        } else if is(op, "AND") {
            vals.iter().fold(0xff, |acc, v| acc & byte(v))
        } else if is(op, "OR") {
            vals.iter().fold(0, |acc, v| acc | byte(v))
        } else {
            vals.iter().fold(0, |acc, v| acc ^ byte(v))
        };
    }
    if out.is_empty() {
        ctx.delete(&a[2]);
    } else {
        ctx.put(&a[2], ValueType::String, None, &out)?;
    }
    Ok(Reply::Int(out.len() as i64))
}
