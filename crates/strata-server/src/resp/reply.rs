//! [`Reply`]: one reply value, independent of the protocol version it will be written in.
//!
//! RESP3-only shapes (maps, sets, doubles, booleans, verbatim strings, nulls) degrade to their
//! RESP2 equivalents in the writer, exactly as Redis degrades them.
//! Depends on nothing else in the crate.

use std::borrow::Cow;

use bytes::Bytes;

/// A reply to one command.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// A simple string (`+...`). Must not contain CR or LF.
    Simple(Cow<'static, str>),
    /// An error, including its code: `"ERR syntax error"`, `"WRONGTYPE ..."`. CR and LF are
    /// replaced by spaces when written.
    Error(Cow<'static, str>),
    Int(i64),
    Bulk(Bytes),
    /// The null bulk string: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// The null array: `*-1` in RESP2, `_` in RESP3.
    NullArray,
    Array(Vec<Reply>),
    /// A map: `%` in RESP3, a flat array of 2n elements in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// A set: `~` in RESP3, an array in RESP2.
    Set(Vec<Reply>),
    /// A double: `,` in RESP3, a bulk string in RESP2.
    Double(f64),
    /// A boolean: `#t`/`#f` in RESP3, the integer 1 or 0 in RESP2 (what a script that called
    /// `redis.setresp(3)` returns for a Lua boolean).
    Bool(bool),
    /// A verbatim string with its three-letter format (`txt`): `=` in RESP3, bulk in RESP2.
    Verbatim(&'static str, Bytes),
    /// Out-of-band data (Pub/Sub messages and subscription confirmations): `>` in RESP3, an
    /// array in RESP2.
    Push(Vec<Reply>),
    /// Several replies to one command, written one after another (SUBSCRIBE with several
    /// channels confirms each). Only at the top level: never inside another reply.
    Many(Vec<Reply>),
}

impl Reply {
    pub fn error(msg: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Error(msg.into())
    }

    pub fn simple(s: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Simple(s.into())
    }

    pub fn bulk(b: impl Into<Bytes>) -> Reply {
        Reply::Bulk(b.into())
    }

    pub fn bulk_str(s: &str) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// A bulk string, or the null bulk string for `None`.
    pub fn opt_bulk(b: Option<Bytes>) -> Reply {
        b.map_or(Reply::Null, Reply::Bulk)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// About how many bytes the reply takes on the wire (for output-buffer bounds).
    pub fn approx_len(&self) -> usize {
        match self {
            Reply::Bulk(b) | Reply::Verbatim(_, b) => b.len() + 16,
            Reply::Simple(s) | Reply::Error(s) => s.len() + 3,
            Reply::Array(v) | Reply::Set(v) | Reply::Push(v) | Reply::Many(v) => {
                16 + v.iter().map(Reply::approx_len).sum::<usize>()
            }
            Reply::Map(v) => {
                16 + v
                    .iter()
                    .map(|(k, v)| k.approx_len() + v.approx_len())
                    .sum::<usize>()
            }
            _ => 24,
        }
    }
}
