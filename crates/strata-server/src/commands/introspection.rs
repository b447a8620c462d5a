//! COMMAND (no arguments, COUNT, INFO, DOCS, LIST, HELP): the command table as Redis 7
//! reports it, enough for redis-cli's hints and client handshakes.
//!
//! Invariant: the replies are generated from `commands::all_commands()`, so they always describe
//! exactly the commands the server accepts. Key specifications and tips are reported empty.
//! Depends on the command table only.

use bytes::Bytes;

use super::connection::help_reply;
use super::errors::{self, err, unknown_subcommand, wrong_args};
use super::{all_commands, command_count, is, lookup, CmdResult, CommandSpec, Ctx};
use crate::resp::Reply;

fn simple_set(items: &[&'static str]) -> Reply {
    Reply::Set(items.iter().map(|s| Reply::simple(*s)).collect())
}

fn info_of(c: &CommandSpec) -> Reply {
    let subs = c
        .subcommands
        .iter()
        .map(|name| {
            Reply::Array(vec![
                Reply::bulk_str(name),
                Reply::Int(-2),
                simple_set(&[]),
                Reply::Int(0),
                Reply::Int(0),
                Reply::Int(0),
                simple_set(c.acl),
                simple_set(&[]),
                Reply::Array(vec![]),
                Reply::Array(vec![]),
            ])
        })
        .collect();
    Reply::Array(vec![
        Reply::bulk_str(c.name),
        Reply::Int(i64::from(c.arity)),
        simple_set(c.flags),
        Reply::Int(i64::from(c.first_key)),
        Reply::Int(i64::from(c.last_key)),
        Reply::Int(i64::from(c.step)),
        simple_set(c.acl),
        simple_set(&[]),
        Reply::Array(vec![]),
        Reply::Array(subs),
    ])
}

fn docs_of(c: &CommandSpec) -> Reply {
    let s = Reply::bulk_str;
    Reply::Map(vec![
        (s("summary"), s(c.summary)),
        (s("since"), s(c.since)),
        (s("group"), s(c.group)),
        (s("complexity"), s(c.complexity)),
    ])
}

const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "HELP",
    "    Print this help.",
];

pub fn command(_ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() == 1 {
        return Ok(Reply::Array(all_commands().map(info_of).collect()));
    }
    let sub = &a[1];
    if is(sub, "COUNT") {
        if a.len() != 2 {
            return Err(wrong_args("command|count"));
        }
        Ok(Reply::Int(command_count() as i64))
    } else if is(sub, "INFO") {
        if a.len() == 2 {
            return Ok(Reply::Array(all_commands().map(info_of).collect()));
        }
        Ok(Reply::Array(
            a[2..]
                .iter()
                .map(|n| lookup(n).map_or(Reply::Null, |(_, c)| info_of(c)))
                .collect(),
        ))
    } else if is(sub, "DOCS") {
        let pairs = if a.len() == 2 {
            all_commands()
                .map(|c| (Reply::bulk_str(c.name), docs_of(c)))
                .collect()
        } else {
            a[2..]
                .iter()
                .filter_map(|n| lookup(n))
                .map(|(_, c)| (Reply::bulk_str(c.name), docs_of(c)))
                .collect()
        };
        Ok(Reply::Map(pairs))
    } else if is(sub, "LIST") {
        if a.len() != 2 {
            return Err(err(errors::SYNTAX));
        }
        Ok(Reply::Array(
            all_commands().map(|c| Reply::bulk_str(c.name)).collect(),
        ))
    } else if is(sub, "HELP") {
        Ok(help_reply(COMMAND_HELP))
    } else {
        Err(unknown_subcommand(sub, "command"))
    }
}
