//! Error replies in Redis's exact wording, so client libraries map them as they do for Redis.
//!
//! Invariant: every error reply the command layer produces comes from here (or from a
//! handler's `format!` that starts with one of Redis's codes: `ERR`, `WRONGTYPE`, `NOAUTH`,
//! `WRONGPASS`, `NOPROTO`). Depends on `resp::Reply` and `store::StoreError`.

use bytes::Bytes;

use crate::resp::Reply;
use crate::store::StoreError;

pub const SYNTAX: &str = "ERR syntax error";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";
pub const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub const NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const OFFSET_RANGE: &str = "ERR offset is out of range";
pub const INVALID_CURSOR: &str = "ERR invalid cursor";
pub const DB_RANGE: &str = "ERR DB index is out of range";
pub const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

pub fn err(msg: &'static str) -> Reply {
    Reply::error(msg)
}

/// `ERR wrong number of arguments for '<name>' command` (`name` as Redis's full name, e.g.
/// `get`, `config|get`).
pub fn wrong_args(name: &str) -> Reply {
    Reply::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR invalid expire time in '<cmd>' command`.
pub fn invalid_expire(cmd: &str) -> Reply {
    Reply::error(format!("ERR invalid expire time in '{cmd}' command"))
}

fn lossy(b: &[u8], max: usize) -> String {
    let b = &b[..b.len().min(max)];
    let b = match memchr::memchr(0, b) {
        Some(n) => &b[..n],
        None => b,
    };
    String::from_utf8_lossy(b).into_owned()
}

/// `ERR unknown command '<name>', with args beginning with: '<a1>' '<a2>' ` (Redis caps the
/// name at 128 bytes and the argument list at about 128 bytes).
pub fn unknown_command(args: &[Bytes]) -> Reply {
    let mut list = String::new();
    for a in args.get(1..).unwrap_or_default() {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push('\'');
        list.push_str(&lossy(a, room));
        list.push_str("' ");
    }
    Reply::error(format!(
        "ERR unknown command '{}', with args beginning with: {list}",
        lossy(args.first().map_or(&[][..], |n| &n[..]), 128)
    ))
}

/// `ERR unknown subcommand '<sub>'. Try <CMD> HELP.`
pub fn unknown_subcommand(sub: &[u8], cmd: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(sub, 128),
        cmd.to_ascii_uppercase()
    ))
}

impl From<StoreError> for Reply {
    fn from(e: StoreError) -> Reply {
        match e {
            StoreError::KeyTooLarge => Reply::error(format!("ERR {e}")),
            // A write the engine refused because another writer took the log location over:
            // said in the log once, and to every writing client.
            StoreError::Engine(ref x) if x.kind() == strata::ErrorKind::Fenced => {
                static LOGGED: std::sync::atomic::AtomicBool =
                    std::sync::atomic::AtomicBool::new(false);
                if !LOGGED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::error!(
                        error = %x,
                        "another writer took over the log location: this server makes nothing \
                         durable any more and answers every write FENCED; stop it (reads still \
                         answer from what it holds)"
                    );
                }
                Reply::error(format!(
                    "FENCED this server lost its log location to another writer and accepts no \
                     more writes ({x})"
                ))
            }
            other => Reply::error(format!("ERR storage error: {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's text, and no panic on a request with no name (the parser yields none; a
    /// `Request` of one is an unknown command).
    #[test]
    fn unknown_command_text() {
        let args: Vec<Bytes> = ["FOO", "a", "b"].iter().map(|s| Bytes::from(*s)).collect();
        assert!(matches!(
            unknown_command(&args),
            Reply::Error(e) if e == "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "
        ));
        assert!(unknown_command(&[]).is_error());
    }
}
