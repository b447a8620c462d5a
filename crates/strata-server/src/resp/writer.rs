//! Encoding of [`Reply`] values for RESP2 or RESP3.
//!
//! Invariants: output is always well-formed RESP of the requested version (simple strings and
//! errors have CR/LF replaced by spaces, lengths match contents); encoding never fails.
//! Depends only on [`super::reply`].

use bytes::{BufMut, BytesMut};

use super::reply::Reply;

/// The protocol version of a connection (`HELLO 2` / `HELLO 3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

impl Protocol {
    pub fn number(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

fn put_int_line(out: &mut BytesMut, prefix: u8, v: i64) {
    let mut b = itoa::Buffer::new();
    out.put_u8(prefix);
    out.put_slice(b.format(v).as_bytes());
    out.put_slice(b"\r\n");
}

fn put_line_text(out: &mut BytesMut, prefix: u8, s: &str) {
    out.put_u8(prefix);
    for &c in s.as_bytes() {
        out.put_u8(if c == b'\r' || c == b'\n' { b' ' } else { c });
    }
    out.put_slice(b"\r\n");
}

fn put_bulk(out: &mut BytesMut, b: &[u8]) {
    put_int_line(out, b'$', b.len() as i64);
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

/// Appends `reply` encoded for `proto` to `out`.
pub fn encode(out: &mut BytesMut, reply: &Reply, proto: Protocol) {
    match reply {
        Reply::Ok => out.put_slice(b"+OK\r\n"),
        Reply::Simple(s) => put_line_text(out, b'+', s),
        Reply::Error(s) => put_line_text(out, b'-', s),
        Reply::Int(v) => put_int_line(out, b':', *v),
        Reply::Bulk(b) => put_bulk(out, b),
        Reply::Null => match proto {
            Protocol::Resp2 => out.put_slice(b"$-1\r\n"),
            Protocol::Resp3 => out.put_slice(b"_\r\n"),
        },
        Reply::NullArray => match proto {
            Protocol::Resp2 => out.put_slice(b"*-1\r\n"),
            Protocol::Resp3 => out.put_slice(b"_\r\n"),
        },
        // Arrays, pushes and sets share a shape; RESP2 writes all three as arrays.
        Reply::Array(items) | Reply::Push(items) | Reply::Set(items) => {
            let prefix = match (reply, proto) {
                (Reply::Push(_), Protocol::Resp3) => b'>',
                (Reply::Set(_), Protocol::Resp3) => b'~',
                _ => b'*',
            };
            put_int_line(out, prefix, items.len() as i64);
            for r in items {
                encode(out, r, proto);
            }
        }
        Reply::Many(replies) => {
            for r in replies {
                encode(out, r, proto);
            }
        }
        Reply::Map(pairs) => {
            match proto {
                Protocol::Resp3 => put_int_line(out, b'%', pairs.len() as i64),
                Protocol::Resp2 => put_int_line(out, b'*', 2 * pairs.len() as i64),
            }
            for (k, v) in pairs {
                encode(out, k, proto);
                encode(out, v, proto);
            }
        }
        Reply::Double(d) => {
            let text = format_double(*d);
            match proto {
                Protocol::Resp3 => put_line_text(out, b',', &text),
                Protocol::Resp2 => put_bulk(out, text.as_bytes()),
            }
        }
        Reply::Bool(b) => match proto {
            Protocol::Resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Protocol::Resp2 => out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
        },
        Reply::Verbatim(fmt, body) => match proto {
            Protocol::Resp3 => {
                put_int_line(out, b'=', (body.len() + 4) as i64);
                out.put_slice(fmt.as_bytes());
                out.put_u8(b':');
                out.put_slice(body);
                out.put_slice(b"\r\n");
            }
            Protocol::Resp2 => put_bulk(out, body),
        },
    }
}

/// redis-server 7.0's text for a double reply (`%.17g`; see `redis_float`).
fn format_double(d: f64) -> String {
    crate::redis_float::format_double(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn enc(r: &Reply, p: Protocol) -> String {
        let mut b = BytesMut::new();
        encode(&mut b, r, p);
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[test]
    fn resp2_and_resp3_shapes() {
        use Protocol::*;
        assert_eq!(enc(&Reply::Null, Resp2), "$-1\r\n");
        assert_eq!(enc(&Reply::Null, Resp3), "_\r\n");
        assert_eq!(enc(&Reply::NullArray, Resp2), "*-1\r\n");
        let m = Reply::Map(vec![(Reply::bulk_str("a"), Reply::Int(1))]);
        assert_eq!(enc(&m, Resp2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&m, Resp3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::Bool(true), Resp3), "#t\r\n");
        assert_eq!(enc(&Reply::Bool(false), Resp2), ":0\r\n");
        let v = Reply::Verbatim("txt", Bytes::from_static(b"hi"));
        assert_eq!(enc(&v, Resp3), "=6\r\ntxt:hi\r\n");
        assert_eq!(enc(&v, Resp2), "$2\r\nhi\r\n");
        assert_eq!(enc(&Reply::error("ERR a\r\nb"), Resp2), "-ERR a  b\r\n");
        assert_eq!(enc(&Reply::Double(1.5), Resp3), ",1.5\r\n");
        assert_eq!(enc(&Reply::Set(vec![Reply::Ok]), Resp3), "~1\r\n+OK\r\n");
    }
}
