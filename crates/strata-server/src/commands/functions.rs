//! Function commands: FCALL, FCALL_RO and FUNCTION (LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE,
//! STATS, KILL, HELP). The registry, library loading and the dump payload live in
//! `scripting::functions`; these handlers parse arguments, stage the changed registry in the
//! command's segment (`Pending::functions`) and write the change to the database in it
//! (`Ctx::put_function_library`). The executor installs the staged registry only once that
//! write committed, so the server runs exactly the libraries it stored; a segment that is
//! discarded and rerun stages again from the installed registry.
//! Invariants: the registry changes only after the new code loaded cleanly; the mutating
//! subcommands hold one lock stripe (`CommandSpec::key_scope`), so two of them never stage
//! from the same registry; a FUNCTION command is a segment of its own (`CommandSpec::alone`),
//! so a pipelined FCALL after a FUNCTION LOAD sees the library.
//! Depends on `commands` helpers and `scripting`.

use bytes::Bytes;

use super::errors::{err, unknown_subcommand, wrong_args, SYNTAX};
use super::{is, CmdResult, Ctx};
use crate::glob;
use crate::resp::Reply;
use crate::scripting::{self, functions};

/// The keys and arguments after `numkeys` (`a[2]`), as for EVAL.
fn call(ctx: &mut Ctx<'_>, a: &[Bytes], read_only: bool) -> CmdResult {
    let (keys, args) = super::scripting::keys_and_args(a)?;
    Ok(scripting::fcall(ctx, &a[1], keys, args, read_only))
}

pub fn fcall(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    call(ctx, a, false)
}

pub fn fcall_ro(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    call(ctx, a, true)
}

pub fn function(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = &a[1];
    let rest = &a[2..];
    if is(sub, "LOAD") {
        return load(ctx, rest);
    }
    if is(sub, "DELETE") {
        let [name] = rest else {
            return Err(wrong_args("function|delete"));
        };
        let name = String::from_utf8_lossy(name).into_owned();
        if !staged(ctx).remove(&name) {
            return Err(Reply::error("ERR Library not found"));
        }
        ctx.delete_function_libraries(Some(&name));
        return Ok(Reply::Ok);
    }
    if is(sub, "FLUSH") {
        if rest.len() > 1
            || rest
                .first()
                .is_some_and(|m| !is(m, "ASYNC") && !is(m, "SYNC"))
        {
            return Err(err(SYNTAX));
        }
        flush(ctx);
        return Ok(Reply::Ok);
    }
    if is(sub, "LIST") {
        return list(ctx, rest);
    }
    if is(sub, "DUMP") {
        if !rest.is_empty() {
            return Err(wrong_args("function|dump"));
        }
        return Ok(Reply::bulk(functions::dump(
            &ctx.shared.functions.snapshot(),
        )));
    }
    if is(sub, "RESTORE") {
        return restore(ctx, rest);
    }
    if is(sub, "STATS") {
        if !rest.is_empty() {
            return Err(wrong_args("function|stats"));
        }
        let reg = ctx.shared.functions.snapshot();
        let lua = Reply::Map(vec![
            (
                Reply::bulk_str("libraries_count"),
                Reply::Int(reg.libraries.len() as i64),
            ),
            (
                Reply::bulk_str("functions_count"),
                Reply::Int(reg.function_count() as i64),
            ),
        ]);
        return Ok(Reply::Map(vec![
            (
                Reply::bulk_str("running_script"),
                match ctx.shared.busy.running() {
                    None => Reply::Null,
                    Some((name, ran)) => Reply::Map(vec![
                        (Reply::bulk_str("name"), Reply::bulk_str(&name)),
                        (
                            Reply::bulk_str("duration_ms"),
                            Reply::Int(ran.as_millis() as i64),
                        ),
                    ]),
                },
            ),
            (
                Reply::bulk_str("engines"),
                Reply::Map(vec![(Reply::bulk_str("LUA"), lua)]),
            ),
        ]));
    }
    if is(sub, "KILL") {
        if !rest.is_empty() {
            return Err(wrong_args("function|kill"));
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
            "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries.",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload.",
            "STATS",
            "    Return information about the current function running.",
            "KILL",
            "    Kill the current running function.",
            "HELP",
            "    Print this help.",
        ];
        return Ok(super::connection::help_reply(&lines));
    }
    Err(unknown_subcommand(sub, "FUNCTION"))
}

/// FUNCTION LOAD [REPLACE] code.
fn load(ctx: &mut Ctx<'_>, rest: &[Bytes]) -> CmdResult {
    let (replace, code) = match rest {
        [code] => (false, code),
        [r, code] if is(r, "REPLACE") => (true, code),
        [opt, _] => {
            return Err(Reply::error(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(opt)
            )))
        }
        _ => return Err(wrong_args("function|load")),
    };
    let lib = scripting::compile_library(ctx.shared, code).map_err(Reply::error)?;
    let name = lib.name.clone();
    staged(ctx).insert(lib, replace).map_err(Reply::error)?;
    ctx.put_function_library(&name, code);
    Ok(Reply::bulk(name.into_bytes()))
}

/// The registry as this segment's FUNCTION commands left it, staged from the installed one.
fn staged<'c>(ctx: &'c mut Ctx<'_>) -> &'c mut functions::Registry {
    let shared = ctx.shared;
    ctx.pending
        .functions
        .get_or_insert_with(|| shared.functions.snapshot())
}

fn flush(ctx: &mut Ctx<'_>) {
    *staged(ctx) = functions::Registry::default();
    ctx.delete_function_libraries(None);
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(ctx: &mut Ctx<'_>, rest: &[Bytes]) -> CmdResult {
    let mut pattern: Option<&Bytes> = None;
    let mut with_code = false;
    let mut i = 0;
    while i < rest.len() {
        if is(&rest[i], "WITHCODE") && !with_code {
            with_code = true;
        } else if is(&rest[i], "LIBRARYNAME") && pattern.is_none() && i + 1 < rest.len() {
            pattern = Some(&rest[i + 1]);
            i += 1;
        } else {
            return Err(Reply::error(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&rest[i])
            )));
        }
        i += 1;
    }
    let reg = ctx.shared.functions.snapshot();
    let libs = reg
        .libraries
        .values()
        .filter(|l| pattern.is_none_or(|p| glob::matches(p, l.name.as_bytes(), false)))
        .map(|l| {
            let fns = l
                .functions
                .iter()
                .map(|f| {
                    Reply::Map(vec![
                        (Reply::bulk_str("name"), Reply::bulk_str(&f.name)),
                        (
                            Reply::bulk_str("description"),
                            f.description
                                .as_deref()
                                .map_or(Reply::Null, Reply::bulk_str),
                        ),
                        (
                            Reply::bulk_str("flags"),
                            Reply::Set(f.flags.iter().map(|g| Reply::bulk_str(g)).collect()),
                        ),
                    ])
                })
                .collect();
            let mut m = vec![
                (Reply::bulk_str("library_name"), Reply::bulk_str(&l.name)),
                (Reply::bulk_str("engine"), Reply::bulk_str("LUA")),
                (Reply::bulk_str("functions"), Reply::Array(fns)),
            ];
            if with_code {
                m.push((Reply::bulk_str("library_code"), Reply::bulk(l.code.clone())));
            }
            Reply::Map(m)
        })
        .collect();
    Ok(Reply::Array(libs))
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
fn restore(ctx: &mut Ctx<'_>, rest: &[Bytes]) -> CmdResult {
    #[derive(PartialEq)]
    enum Policy {
        Append,
        Replace,
        Flush,
    }
    let (payload, policy) =
        match rest {
            [p] => (p, Policy::Append),
            [p, m] if is(m, "APPEND") => (p, Policy::Append),
            [p, m] if is(m, "REPLACE") => (p, Policy::Replace),
            [p, m] if is(m, "FLUSH") => (p, Policy::Flush),
            [_, _] => return Err(Reply::error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
            _ => return Err(wrong_args("function|restore")),
        };
    let codes = functions::undump(payload).map_err(Reply::error)?;
    let mut libs = Vec::with_capacity(codes.len());
    for code in &codes {
        libs.push(scripting::compile_library(ctx.shared, code).map_err(Reply::error)?);
    }
    let names: Vec<(String, Bytes)> = libs
        .iter()
        .map(|l| (l.name.clone(), l.code.clone()))
        .collect();
    // All or nothing: onto a copy, staged only if every library goes in.
    let mut next = staged(ctx).clone();
    match policy {
        Policy::Flush => next = functions::Registry::default(),
        // Every library being replaced goes first, so functions may move between them.
        Policy::Replace => {
            for (name, _) in &names {
                next.remove(name);
            }
        }
        Policy::Append => {}
    }
    for lib in libs {
        next.insert(lib, false).map_err(Reply::error)?;
    }
    *staged(ctx) = next;
    if policy == Policy::Flush {
        ctx.delete_function_libraries(None);
    }
    for (name, code) in &names {
        ctx.put_function_library(name, code);
    }
    Ok(Reply::Ok)
}

/// Reads the stored libraries back into the registry (server start-up). A library that no
/// longer loads stops the start with its error rather than running without it.
pub fn load_stored(shared: &crate::server::Shared) -> Result<usize, String> {
    let codes = shared
        .store
        .function_libraries()
        .map_err(|e| format!("reading the function libraries: {e}"))?;
    let mut reg = functions::Registry::default();
    for code in &codes {
        let lib = scripting::compile_library(shared, code)
            .map_err(|e| format!("loading a stored function library: {e}"))?;
        reg.insert(lib, false)?;
    }
    shared.functions.install(reg);
    Ok(codes.len())
}
