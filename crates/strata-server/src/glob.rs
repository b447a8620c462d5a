//! Redis glob-style patterns (`KEYS`, `SCAN MATCH`, `CONFIG GET`): `*`, `?`, `[abc]`, `[^a]`,
//! `[a-z]` and `\` escapes, with Redis's `stringmatchlen` semantics.
//!
//! Invariant: matching never panics and its recursion depth is bounded (patterns with many `*`
//! are matched iteratively with backtracking to the last star).
//! Depends on nothing else in the crate.

/// Whether `s` matches `pattern` (case-sensitive unless `nocase`).
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut i) = (0usize, 0usize);
    // Backtracking point: pattern index after the last '*', and the string index it matched to.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() {
            if pattern[p] == b'*' {
                while p < pattern.len() && pattern[p] == b'*' {
                    p += 1;
                }
                if p == pattern.len() {
                    return true;
                }
                star = Some((p, i));
                continue;
            }
            // How far the pattern advances if it matches one byte of `s` here.
            let step = match pattern[p] {
                _ if i >= s.len() => None,
                b'?' => Some(p + 1),
                b'[' => match class(pattern, p, s[i], nocase) {
                    Some((true, next)) => Some(next),
                    _ => None,
                },
                b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], s[i]).then_some(p + 2),
                c => eq(c, s[i]).then_some(p + 1),
            };
            if let Some(next) = step {
                p = next;
                i += 1;
                continue;
            }
        } else if i == s.len() {
            return true;
        }
        // Mismatch: let the last star swallow one more byte.
        match star {
            Some((sp, si)) if si < s.len() => {
                star = Some((sp, si + 1));
                p = sp;
                i = si + 1;
            }
            _ => return false,
        }
    }
}

/// Matches a `[...]` class starting at `pattern[p] == '['` against `c`. Returns whether it
/// matched and the pattern index after the class. An unterminated class extends to the end of
/// the pattern, as in Redis.
fn class(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let lower = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = lower(c);
    let mut j = p + 1;
    let not = j < pattern.len() && pattern[j] == b'^';
    if not {
        j += 1;
    }
    let mut matched = false;
    loop {
        if j >= pattern.len() {
            // Redis: an unterminated class ends at the end of the pattern.
            break;
        }
        match pattern[j] {
            b']' => {
                j += 1;
                return Some((matched != not, j));
            }
            b'\\' if j + 1 < pattern.len() => {
                if lower(pattern[j + 1]) == c {
                    matched = true;
                }
                j += 2;
            }
            a if j + 2 < pattern.len() && pattern[j + 1] == b'-' => {
                let (mut lo, mut hi) = (lower(a), lower(pattern[j + 2]));
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                if (lo..=hi).contains(&c) {
                    matched = true;
                }
                j += 3;
            }
            a => {
                if lower(a) == c {
                    matched = true;
                }
                j += 1;
            }
        }
    }
    Some((matched != not, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_patterns() {
        let m = |p: &str, s: &str| matches(p.as_bytes(), s.as_bytes(), false);
        assert!(m("*", ""));
        assert!(m("*", "abc"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("key:*:x", "key:1:2:x"));
        assert!(!m("key:*:x", "key:1:2:y"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("abc", "abcd"));
        assert!(matches(b"ABC", b"abc", true));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let p = "*a".repeat(50) + "b";
        let s = "a".repeat(200);
        let t = std::time::Instant::now();
        assert!(!matches(p.as_bytes(), s.as_bytes(), false));
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }
}
