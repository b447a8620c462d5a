//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (LOAD, EXISTS, FLUSH,
//! KILL, HELP). The interpreter, the script environment and the reply conversions live in
//! `scripting`; these handlers parse arguments and find the script.
//! Invariant: a script runs only in a segment that holds the stripes of its declared keys
//! (`CommandSpec::lock_scope`: the keys after `numkeys`), or every stripe.
//! Depends on `commands` helpers and `scripting`.

use bytes::Bytes;

use super::errors::{err, unknown_subcommand, wrong_args};
use super::{int_arg, is, CmdResult, Ctx};
use crate::resp::Reply;
use crate::scripting;

/// The keys and arguments after `numkeys` (`a[2]`).
pub(crate) fn keys_and_args(a: &[Bytes]) -> Result<(&[Bytes], &[Bytes]), Reply> {
    let n = int_arg(&a[2])?;
    if n < 0 {
        return Err(Reply::error("ERR Number of keys can't be negative"));
    }
    let n = n as usize;
    if n > a.len() - 3 {
        return Err(Reply::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok((&a[3..3 + n], &a[3 + n..]))
}

fn eval_body(ctx: &mut Ctx<'_>, a: &[Bytes], read_only: bool) -> CmdResult {
    let (keys, args) = keys_and_args(a)?;
    let body = a[1].clone();
    // A script that does not compile is not cached (as in redis).
    let sha = scripting::sha1_hex(&body);
    scripting::compile(ctx.shared, &sha, &body)?;
    ctx.shared.scripts.load_as(&sha, &body);
    Ok(scripting::run(ctx, &sha, &body, keys, args, read_only))
}

fn eval_sha(ctx: &mut Ctx<'_>, a: &[Bytes], read_only: bool) -> CmdResult {
    let (keys, args) = keys_and_args(a)?;
    let Some(sha) = scripting::Sha::parse(&a[1]) else {
        return Err(Reply::error(scripting::NOSCRIPT));
    };
    Ok(scripting::run_cached(ctx, &sha, keys, args, read_only))
}

pub fn eval(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    eval_body(ctx, a, false)
}

pub fn eval_ro(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    eval_body(ctx, a, true)
}

pub fn evalsha(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    eval_sha(ctx, a, false)
}

pub fn evalsha_ro(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    eval_sha(ctx, a, true)
}

pub fn script(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let scripts = &ctx.shared.scripts;
    let sub = &a[1];
    if is(sub, "LOAD") {
        if a.len() != 3 {
            return Err(wrong_args("script|load"));
        }
        let sha = scripting::sha1_hex(&a[2]);
        scripting::compile(ctx.shared, &sha, &a[2])?;
        scripts.load_as(&sha, &a[2]);
        return Ok(Reply::bulk(sha.into_bytes()));
    }
    if is(sub, "EXISTS") {
        if a.len() < 3 {
            return Err(wrong_args("script|exists"));
        }
        let found = a[2..]
            .iter()
            .map(|sha| Reply::Int(i64::from(scripts.exists(sha))))
            .collect();
        return Ok(Reply::Array(found));
    }
    if is(sub, "FLUSH") {
        if a.len() > 3 || (a.len() == 3 && !is(&a[2], "ASYNC") && !is(&a[2], "SYNC")) {
            return Err(err(super::errors::SYNTAX));
        }
        scripts.flush();
        return Ok(Reply::Ok);
    }
    if is(sub, "KILL") {
        if a.len() != 2 {
            return Err(wrong_args("script|kill"));
        }
        return ctx
            .shared
            .busy
            .kill()
            .map(|()| Reply::Ok)
            .map_err(Reply::error);
    }
    if is(sub, "HELP") {
        let lines = [
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Print this help.",
        ];
        return Ok(super::connection::help_reply(&lines));
    }
    Err(unknown_subcommand(sub, "SCRIPT"))
}
