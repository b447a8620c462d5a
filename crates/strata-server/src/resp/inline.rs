//! Splitting an inline request line into arguments, as Redis's `sdssplitargs` does: blanks
//! separate arguments; `"..."` supports `\n \r \t \b \a \\ \"` and `\xHH` escapes; `'...'`
//! supports `\'`; a closing quote must be followed by a blank or the end of the line; an
//! unterminated quote is an error. A NUL byte ends the line (as in C).
//!
//! Invariant: never panics; output size is bounded by the input size.
//! Depends on nothing else in the crate.

use bytes::Bytes;

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Splits `line` into arguments; `None` for unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let line = match memchr::memchr(0, line) {
        Some(n) => &line[..n],
        None => line,
    };
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0usize;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq, mut done) = (false, false, false);
        while !done {
            let c = at(p);
            if inq {
                if c == b'\\' && at(p + 1) == b'x' && hex(at(p + 2)).is_some() {
                    if let (Some(h), Some(l)) = (hex(at(p + 2)), hex(at(p + 3))) {
                        cur.push(h * 16 + l);
                        p += 3;
                    } else {
                        // `\x` followed by one hex digit only: an ordinary escape of 'x'.
                        p += 1;
                        cur.push(b'x');
                    }
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    other => cur.push(other),
                }
            }
            if p < line.len() {
                p += 1;
            }
        }
        args.push(Bytes::from(cur));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|v| {
            v.into_iter()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect()
        })
    }

    #[test]
    fn splits_like_sdssplitargs() {
        assert_eq!(s("set a b").unwrap(), ["set", "a", "b"]);
        assert_eq!(s("  set   a  ").unwrap(), ["set", "a"]);
        assert_eq!(s("set \"a b\" c").unwrap(), ["set", "a b", "c"]);
        assert_eq!(s("set \"\\x41\\n\" c").unwrap(), ["set", "A\n", "c"]);
        assert_eq!(s("set 'it\\'s' c").unwrap(), ["set", "it's", "c"]);
        assert_eq!(s("set \"\"").unwrap(), ["set", ""]);
        assert_eq!(s("ab\"cd\"").unwrap(), ["abcd"]);
        assert!(s("set \"a").is_none());
        assert!(s("set \"a\"b").is_none());
        assert!(s("set 'a").is_none());
        assert_eq!(s("").unwrap(), Vec::<String>::new());
        assert_eq!(s("a\0b c").unwrap(), ["a"]);
    }
}
