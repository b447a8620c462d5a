//! Transaction commands: MULTI, DISCARD, WATCH, UNWATCH, and EXEC outside a transaction.
//!
//! What these handlers do is change the session's mode: queuing itself (commands answered
//! `QUEUED` in MULTI) and running EXEC happen in the executor (`executor`, `multi`), which
//! reaches [`exec`] here only for an EXEC without MULTI. WATCH runs holding the stripes of its
//! keys (`CommandSpec::lock_scope`), which the `watch` registry requires.
//! Depends on `commands` helpers, `session`, `multi`, `watch`; never touches the engine.

use bytes::Bytes;

use super::{CmdResult, Ctx};
use crate::multi::Multi;
use crate::resp::Reply;
use crate::watch::Watching;

pub fn multi(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Multi::default());
    Ok(Reply::Ok)
}

/// Reached only outside MULTI: in MULTI the executor runs the transaction.
pub fn exec(_ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    Err(Reply::error("ERR EXEC without MULTI"))
}

pub fn discard(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    if ctx.session.multi.take().is_none() {
        return Err(Reply::error("ERR DISCARD without MULTI"));
    }
    ctx.session.watching = None;
    Ok(Reply::Ok)
}

pub fn watch(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    let now = ctx.now;
    let watches = ctx.shared.store.watches().clone();
    let w = ctx
        .session
        .watching
        .get_or_insert_with(|| Watching::new(watches));
    for key in &a[1..] {
        w.watch(key, now);
    }
    Ok(Reply::Ok)
}

pub fn unwatch(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    ctx.session.watching = None;
    Ok(Reply::Ok)
}
