//! The incremental request parser: multibulk (`*N\r\n$len\r\n...`) and inline (`PING\r\n`)
//! requests, as Redis's `processMultibulkBuffer` / `processInlineBuffer` read them.
//!
//! The parser consumes bytes from the connection's `BytesMut` as far as it can and keeps the
//! partial state of a multibulk request between calls, so a request split across any number of
//! reads costs O(its size) in total. Arguments are zero-copy slices of the read buffer.
//!
//! Invariants: never panics on any input; every length read from the wire is checked against
//! [`ParseLimits`] before it is used (the argument vector's initial capacity is capped, so a
//! huge declared count allocates nothing up front); a [`ProtocolError`] leaves the parser in an
//! unspecified state and the connection must be closed after replying with it.
//! Depends on [`super::inline`] and `numbers` only.

use bytes::{Buf, Bytes, BytesMut};

use super::inline::split_args;
use crate::numbers::parse_i64;

/// Longest inline request line, and longest `*<count>` / `$<len>` header line (Redis's
/// `PROTO_INLINE_MAX_SIZE`).
pub const MAX_INLINE_LEN: usize = 64 * 1024;

/// Limits that bound what one request may make the server hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseLimits {
    /// Largest bulk string (Redis's `proto-max-bulk-len`).
    pub max_bulk_len: usize,
    /// Most arguments in one multibulk request.
    pub max_multibulk_len: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_bulk_len: 512 << 20,
            max_multibulk_len: 1024 * 1024,
        }
    }
}

/// A malformed request. The message is Redis's, without the `ERR ` code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

impl ProtocolError {
    fn new(what: &str) -> Self {
        ProtocolError(format!("Protocol error: {what}"))
    }
}

/// Initial capacity cap for a multibulk's argument vector.
const MAX_PREALLOC_ARGS: usize = 1024;

#[derive(Debug)]
struct Multibulk {
    remaining: usize,
    args: Vec<Bytes>,
    bulk_len: Option<usize>,
    bytes: usize,
}

/// Parser state for one connection.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Option<Multibulk>,
}

impl Parser {
    pub fn new() -> Self {
        Parser::default()
    }

    /// Bytes held in arguments of a partially received multibulk request (they are no longer
    /// in the read buffer). Counted against the connection's memory bound.
    pub fn pending_bytes(&self) -> usize {
        self.pending
            .as_ref()
            .map_or(0, |m| m.bytes + m.args.len() * std::mem::size_of::<Bytes>())
    }

    /// Bytes the read buffer must hold to complete the bulk string being received, if known.
    pub fn wanted(&self) -> Option<usize> {
        self.pending
            .as_ref()
            .and_then(|m| m.bulk_len)
            .map(|l| l + 2)
    }

    /// Whether a request is partially received.
    pub fn in_request(&self) -> bool {
        self.pending.is_some()
    }

    /// Parses the next complete request from `buf`, consuming its bytes. `Ok(None)` means more
    /// input is needed (whatever was consumed is kept in the parser).
    pub fn next(
        &mut self,
        buf: &mut BytesMut,
        limits: &ParseLimits,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.pending.is_none() {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match inline(buf)? {
                        Inline::NeedMore => return Ok(None),
                        Inline::Empty => continue,
                        Inline::Args(a) => return Ok(Some(a)),
                    }
                }
                let Some(line) = header_line(buf, "too big mbulk count string")? else {
                    return Ok(None);
                };
                let count = parse_i64(&buf[1..line]);
                buf.advance(line + 2);
                let count = match count {
                    Some(c) if c <= 0 => continue,
                    Some(c) if (c as u64) <= limits.max_multibulk_len as u64 => c as usize,
                    _ => return Err(ProtocolError::new("invalid multibulk length")),
                };
                self.pending = Some(Multibulk {
                    remaining: count,
                    args: Vec::with_capacity(count.min(MAX_PREALLOC_ARGS)),
                    bulk_len: None,
                    bytes: 0,
                });
            }
            let mb = self.pending.as_mut().expect("set above");
            while mb.remaining > 0 {
                let len = match mb.bulk_len {
                    Some(l) => l,
                    None => {
                        let Some(line) = header_line(buf, "too big bulk count string")? else {
                            return Ok(None);
                        };
                        if buf[0] != b'$' {
                            return Err(ProtocolError(format!(
                                "Protocol error: expected '$', got '{}'",
                                char::from(buf[0])
                            )));
                        }
                        let len = match parse_i64(&buf[1..line]) {
                            Some(l) if l >= 0 && (l as u64) <= limits.max_bulk_len as u64 => {
                                l as usize
                            }
                            _ => return Err(ProtocolError::new("invalid bulk length")),
                        };
                        buf.advance(line + 2);
                        mb.bulk_len = Some(len);
                        len
                    }
                };
                if buf.len() < len + 2 {
                    return Ok(None);
                }
                let arg = buf.split_to(len).freeze();
                // Like Redis, the two bytes after the payload are skipped, not checked.
                buf.advance(2);
                mb.bytes += len;
                mb.args.push(arg);
                mb.remaining -= 1;
                mb.bulk_len = None;
            }
            let mb = self.pending.take().expect("set above");
            return Ok(Some(mb.args));
        }
    }
}

/// Finds the `\r` ending a `*`/`$` header line; `None` if the line (with its `\n`) is not
/// complete yet.
fn header_line(buf: &BytesMut, too_big: &str) -> Result<Option<usize>, ProtocolError> {
    match memchr::memchr(b'\r', buf) {
        None if buf.len() > MAX_INLINE_LEN => Err(ProtocolError::new(too_big)),
        None => Ok(None),
        Some(n) if n > MAX_INLINE_LEN => Err(ProtocolError::new(too_big)),
        Some(n) if n + 1 >= buf.len() => Ok(None),
        Some(n) => Ok(Some(n)),
    }
}

enum Inline {
    NeedMore,
    Empty,
    Args(Vec<Bytes>),
}

fn inline(buf: &mut BytesMut) -> Result<Inline, ProtocolError> {
    let nl = match memchr::memchr(b'\n', buf) {
        None if buf.len() > MAX_INLINE_LEN => {
            return Err(ProtocolError::new("too big inline request"))
        }
        None => return Ok(Inline::NeedMore),
        Some(n) if n > MAX_INLINE_LEN => return Err(ProtocolError::new("too big inline request")),
        Some(n) => n,
    };
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    let args = split_args(line).ok_or_else(|| ProtocolError::new("unbalanced quotes in request"));
    buf.advance(nl + 1);
    let args = args?;
    Ok(if args.is_empty() {
        Inline::Empty
    } else {
        Inline::Args(args)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Result<Vec<Vec<String>>, ProtocolError> {
        let mut p = Parser::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(a) = p.next(&mut buf, &ParseLimits::default())? {
            out.push(
                a.iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .collect(),
            );
        }
        Ok(out)
    }

    #[test]
    fn multibulk_and_inline() {
        let r =
            all(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING\r\n*0\r\n*-1\r\n\r\n  \r\nECHO \"x y\"\r\n")
                .unwrap();
        assert_eq!(r, vec![vec!["GET", "a"], vec!["PING"], vec!["ECHO", "x y"]]);
    }

    #[test]
    fn byte_at_a_time() {
        let input = b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$0\r\n\r\nPING\n";
        let mut p = Parser::new();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for &b in input.iter() {
            buf.extend_from_slice(&[b]);
            while let Some(a) = p.next(&mut buf, &ParseLimits::default()).unwrap() {
                got.push(a);
            }
        }
        assert_eq!(got.len(), 2);
        assert_eq!(got[0][1], Bytes::from_static(b"hello"));
        assert_eq!(got[0][2], Bytes::new());
        assert_eq!(got[1][0], Bytes::from_static(b"PING"));
    }

    #[test]
    fn errors_use_redis_wording() {
        let e = |i: &[u8]| all(i).unwrap_err().0;
        assert_eq!(e(b"*abc\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(e(b"*1\r\n$abc\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(e(b"*1\r\n$-5\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            e(b"*1\r\nPING\r\n"),
            "Protocol error: expected '$', got 'P'"
        );
        assert_eq!(
            e(b"SET a \"b\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        let long = vec![b'a'; MAX_INLINE_LEN + 1];
        assert_eq!(e(&long), "Protocol error: too big inline request");
        let mut long = b"*".to_vec();
        long.extend(vec![b'1'; MAX_INLINE_LEN + 1]);
        assert_eq!(e(&long), "Protocol error: too big mbulk count string");
    }

    #[test]
    fn limits_are_enforced_before_allocation() {
        let limits = ParseLimits {
            max_bulk_len: 10,
            max_multibulk_len: 3,
        };
        let mut p = Parser::new();
        let mut b = BytesMut::from(&b"*4\r\n"[..]);
        assert!(p.next(&mut b, &limits).is_err());
        let mut p = Parser::new();
        let mut b = BytesMut::from(&b"*1\r\n$11\r\n"[..]);
        assert!(p.next(&mut b, &limits).is_err());
        let mut p = Parser::new();
        let mut b = BytesMut::from(&b"*1000000\r\n"[..]);
        assert!(p.next(&mut b, &ParseLimits::default()).unwrap().is_none());
        assert!(p.pending.as_ref().unwrap().args.capacity() <= MAX_PREALLOC_ARGS);
        assert_eq!(p.pending_bytes(), 0);
    }
}
