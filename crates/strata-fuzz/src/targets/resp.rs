//! Target `resp`: the server's incremental RESP request parser (`resp::Parser`), multibulk and
//! inline.
//!
//! Flag byte: bit 0 = small limits (64 KiB bulk, 1024 arguments; else the defaults), bits 1..
//! = the chunk size the input is fed in. Properties: parsing terminates; feeding the input in
//! chunks gives exactly the requests (and the error, if any) that feeding it at once gives;
//! each multibulk request re-encoded parses back to the same arguments.

use bytes::{Bytes, BytesMut};
use strata_server::resp::{ParseLimits, Parser};

use crate::util::split_flag;

type Outcome = (Vec<Vec<Bytes>>, bool);

fn parse(data: &[u8], chunk: usize, limits: &ParseLimits) -> Outcome {
    let mut p = Parser::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in data.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            assert!(out.len() <= data.len(), "parser does not terminate");
            match p.next(&mut buf, limits) {
                Ok(Some(req)) => out.push(req),
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fn encode(args: &[Bytes]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let limits = if flag & 1 != 0 {
        ParseLimits {
            max_bulk_len: 64 << 10,
            max_multibulk_len: 1024,
        }
    } else {
        ParseLimits::default()
    };
    let whole = parse(rest, rest.len(), &limits);
    let chunked = parse(rest, 1 + (flag >> 1) as usize, &limits);
    assert_eq!(chunked, whole, "chunked and one-shot parsing differ");
    // Inline requests are not bound by the multibulk limits; only re-encode what a client could
    // send as a multibulk.
    let fits = |r: &&Vec<Bytes>| {
        !r.is_empty()
            && r.len() <= limits.max_multibulk_len
            && r.iter().all(|a| a.len() <= limits.max_bulk_len)
    };
    for req in whole.0.iter().filter(fits) {
        let enc = encode(req);
        let (again, err) = parse(&enc, enc.len(), &limits);
        assert!(!err, "re-encoded request rejected");
        assert_eq!(again, vec![req.clone()], "re-encoded request parses differently");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    vec![
        b"\x00*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
        b"\x07PING\r\nSET a \"b c\\x41\" 'd'\r\n\r\n*0\r\n*-1\r\n".to_vec(),
        b"\x03*2\r\n$3\r\nGET\r\n$0\r\n\r\n*1\r\n$100000\r\n".to_vec(),
    ]
}
