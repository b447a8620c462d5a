//! LCS (longest common subsequence of two string values) with LEN, IDX, MINMATCHLEN and
//! WITHMATCHLEN, following Redis 7's `lcsCommand` step for step (the same dynamic-programming
//! table and the same backward walk), so the match ranges it reports are Redis's.
//!
//! Invariants: absent keys count as empty strings; other types answer Redis's error; the
//! table's transient memory ((len(a)+1)·(len(b)+1)·4 bytes) is refused above
//! `proto-max-bulk-len`, as Redis refuses it. Depends on `commands` helpers; must not depend on
//! the network layer or touch the engine except through `Ctx`.

use bytes::Bytes;

use super::errors::{self, err};
use super::{int_arg, is, CmdResult, Ctx};
use crate::resp::Reply;
use crate::value::ValueType;

fn string_or_empty(ctx: &Ctx<'_>, key: &[u8]) -> Result<Bytes, Reply> {
    match ctx.entry(key)? {
        None => Ok(Bytes::new()),
        Some(e) if e.vtype == Some(ValueType::String) => Ok(e.payload),
        Some(_) => Err(err("ERR The specified keys must contain string values")),
    }
}

pub fn lcs(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: i64 = 0;
    let mut i = 3;
    while i < a.len() {
        if is(&a[i], "IDX") {
            getidx = true;
        } else if is(&a[i], "LEN") {
            getlen = true;
        } else if is(&a[i], "WITHMATCHLEN") {
            withmatchlen = true;
        } else if is(&a[i], "MINMATCHLEN") && i + 1 < a.len() {
            minmatchlen = int_arg(&a[i + 1])?.max(0);
            i += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
        i += 1;
    }
    let x = string_or_empty(ctx, &a[1])?;
    let y = string_or_empty(ctx, &a[2])?;
    if getidx && getlen {
        return Err(err(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let (alen, blen) = (x.len(), y.len());
    let cells = (alen as u128 + 1) * (blen as u128 + 1);
    if cells * 4 > u128::from(ctx.shared.limits.proto_max_bulk_len()) {
        return Err(err(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells as usize];
    for ii in 1..=alen {
        for jj in 1..=blen {
            t[ii * w + jj] = if x[ii - 1] == y[jj - 1] {
                t[(ii - 1) * w + jj - 1] + 1
            } else {
                t[(ii - 1) * w + jj].max(t[ii * w + jj - 1])
            };
        }
    }
    let total = t[alen * w + blen] as usize;
    if getlen {
        return Ok(Reply::Int(total as i64));
    }
    let mut result = vec![0u8; total];
    let mut matches = Vec::new();
    let (mut ai, mut bj, mut idx) = (alen, blen, total);
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0usize, 0usize, 0usize);
    while ai > 0 && bj > 0 {
        let mut emit = false;
        if x[ai - 1] == y[bj - 1] {
            result[idx - 1] = x[ai - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (ai - 1, ai - 1, bj - 1, bj - 1);
            } else if a_start == ai && b_start == bj {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            ai -= 1;
            bj -= 1;
        } else {
            if t[(ai - 1) * w + bj] > t[ai * w + bj - 1] {
                ai -= 1;
            } else {
                bj -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let match_len = a_end as i64 - a_start as i64 + 1;
            if getidx && (minmatchlen == 0 || match_len >= minmatchlen) {
                let mut m = vec![
                    Reply::Array(vec![Reply::Int(a_start as i64), Reply::Int(a_end as i64)]),
                    Reply::Array(vec![Reply::Int(b_start as i64), Reply::Int(b_end as i64)]),
                ];
                if withmatchlen {
                    m.push(Reply::Int(match_len));
                }
                matches.push(Reply::Array(m));
            }
            a_start = alen;
        }
    }
    if getidx {
        return Ok(Reply::Map(vec![
            (Reply::bulk_str("matches"), Reply::Array(matches)),
            (Reply::bulk_str("len"), Reply::Int(total as i64)),
        ]));
    }
    Ok(Reply::bulk(result))
}
