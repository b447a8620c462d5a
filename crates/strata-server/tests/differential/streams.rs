//! The stream family of the differential test: its command generator (explicit IDs, so the
//! two servers' replies compare; claims with a min-idle time of 0) and the normalization of
//! the stream fields that are clocks or node layout (XPENDING's and XINFO CONSUMERS' idle
//! times, XINFO STREAM's radix-tree counts). See `differential.rs`.
//!
//! Approximate MINID trims (`MINID ~`) are not generated: redis decides whether a node can go
//! whole by the last entry appended to it even when that entry was deleted (XDEL), Strata by
//! its last live entry, so after an XDEL of a node's last entry Strata trims the node and
//! redis keeps it. Both trim only entries below the bound, as `~` allows; matching redis
//! exactly needs the last ID appended to each node in the stream's metadata.

use super::wire::elements;
use super::Gen;

/// `raw` (an aggregate) rebuilt with each element `i` replaced by `f(i, element)`.
pub(super) fn rebuild(raw: &[u8], f: impl Fn(usize, &[u8]) -> Vec<u8>) -> Option<Vec<u8>> {
    let els = elements(raw)?;
    let mut v = raw[..=raw.iter().position(|&b| b == b'\n')?].to_vec();
    for (i, e) in els.iter().enumerate() {
        v.extend(f(i, e));
    }
    Some(v)
}

/// The stream fields that are clocks or node layout, zeroed (see the module docs).
pub(super) fn normalize_stream(cmd: &str, args: &[String], raw: &[u8]) -> Option<Vec<u8>> {
    let sub = args
        .get(1)
        .map(|s| s.to_ascii_uppercase())
        .unwrap_or_default();
    let zero = || b":0\r\n".to_vec();
    match cmd {
        // Extended form: rows of [id, consumer, idle, deliveries].
        "XPENDING" if args.len() >= 6 => rebuild(raw, |_, row| {
            rebuild(row, |j, e| if j == 2 { zero() } else { e.to_vec() }).unwrap_or(row.to_vec())
        }),
        // Maps of name, pending, idle.
        "XINFO" if sub == "CONSUMERS" => rebuild(raw, |_, m| {
            rebuild(m, |j, e| if j == 5 { zero() } else { e.to_vec() }).unwrap_or(m.to_vec())
        }),
        "XINFO" if sub == "STREAM" => {
            let els = elements(raw)?;
            rebuild(raw, |j, e| {
                let key = j.checked_sub(1).map(|k| els[k].as_slice());
                match key {
                    Some(k) if j % 2 == 1 && k.ends_with(b"radix-tree-keys\r\n") => zero(),
                    Some(k) if j % 2 == 1 && k.ends_with(b"radix-tree-nodes\r\n") => zero(),
                    _ => e.to_vec(),
                }
            })
        }
        _ => None,
    }
}

/// Redis (7.0) lets XSETID set a stream's last ID below an entry it deleted; its node then
/// holds IDs out of order, and an exact XTRIM MINID stops at the first deleted entry at or
/// past the bound, trimming fewer entries than it should (Strata trims them all). This Lua
/// probe, run on redis-server only, names the stream keys in that state; the test deletes
/// them on both servers, so the layout quirk never reaches a reply.
pub(super) const LOWERED_BELOW_A_DELETED_ENTRY: &str = r#"
local function id(s)
  local ms, seq = string.match(s, "^(%d+)-(%d+)$")
  return tonumber(ms), tonumber(seq)
end
local out = {}
for _, k in ipairs(KEYS) do
  if redis.call('TYPE', k).ok == 'stream' then
    local info = redis.call('XINFO', 'STREAM', k)
    local last, del
    for i = 1, #info, 2 do
      if info[i] == 'last-generated-id' then last = info[i + 1] end
      if info[i] == 'max-deleted-entry-id' then del = info[i + 1] end
    end
    local lm, ls = id(last)
    local dm, ds = id(del)
    if dm > lm or (dm == lm and ds > ls) then out[#out + 1] = k end
  end
end
return out
"#;

/// The stream keys the generator uses (`Gen::stream_key`).
pub(super) const STREAM_KEYS: [&str; 3] = ["x0", "x1", "x2"];

impl Gen {
    /// A stream key (sometimes a key of another type).
    fn stream_key(&mut self) -> String {
        if self.rng.one_in(10) {
            return self.key();
        }
        STREAM_KEYS[self.rng.below(3) as usize].into()
    }
    /// An explicit stream ID: small, so XADDs collide (equal-or-smaller errors) and ranges
    /// and claims hit existing entries.
    fn sid(&mut self) -> String {
        format!("{}-{}", 1 + self.rng.below(40), self.rng.below(3))
    }
    /// An ID argument of a range or read: IDs, bare milliseconds, `-`, `+`, exclusive
    /// bounds and the odd invalid one.
    fn sid_arg(&mut self) -> String {
        match self.rng.below(10) {
            0 => "-".into(),
            1 => "+".into(),
            2 => self.int(0, 40),
            3 => format!("({}", self.sid()),
            4 if self.rng.one_in(4) => self.pick(&["x", "1-x", "(-", "0-0"]).into(),
            _ => self.sid(),
        }
    }
    fn group(&mut self) -> String {
        format!("g{}", self.rng.below(2))
    }
    fn consumer(&mut self) -> String {
        format!("c{}", self.rng.below(3))
    }

    /// A stream command (see the module docs for what keeps replies comparable).
    pub(super) fn stream_command(&mut self) -> Vec<String> {
        let k = self.stream_key();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self.rng.below(21) {
            0..=4 => {
                let mut c = s(&["XADD", &k]);
                if self.rng.one_in(10) {
                    c.push("NOMKSTREAM".into());
                }
                if self.rng.one_in(4) {
                    if self.rng.one_in(2) {
                        c.push("MAXLEN".into());
                        c.push(self.pick(&["=", "~", ""]).into());
                        c.push(self.int(0, 5));
                    } else {
                        c.push("MINID".into());
                        // Not `~` (module docs).
                        c.push(self.pick(&["=", ""]).into());
                        c.push(self.sid());
                    }
                    c.retain(|a| !a.is_empty());
                    if c.last().is_some_and(|_| self.rng.one_in(4)) {
                        c.extend(["LIMIT".into(), self.int(0, 200)]);
                    }
                }
                c.push(if self.rng.one_in(4) {
                    format!("{}-*", self.int(1, 40))
                } else {
                    self.sid()
                });
                for _ in 0..1 + self.rng.below(2) {
                    c.push(self.field());
                    c.push(self.value());
                }
                if self.rng.one_in(20) {
                    c.pop();
                }
                c
            }
            5 | 6 => {
                let mut c = s(&[
                    if self.rng.one_in(2) {
                        "XRANGE"
                    } else {
                        "XREVRANGE"
                    },
                    &k,
                ]);
                c.push(self.sid_arg());
                c.push(self.sid_arg());
                if self.rng.one_in(3) {
                    c.extend(["COUNT".into(), self.int(-1, 4)]);
                }
                c
            }
            7 => s(&["XLEN", &k]),
            8 => {
                let mut c = s(&["XDEL", &k]);
                for _ in 0..1 + self.rng.below(3) {
                    c.push(self.sid());
                }
                c
            }
            9 => {
                let mut c = s(&["XTRIM", &k]);
                if self.rng.one_in(2) {
                    c.push("MAXLEN".into());
                    c.push(self.pick(&["=", "~", ""]).into());
                    c.push(self.int(-1, 5));
                } else {
                    c.push("MINID".into());
                    // Not `~` (module docs).
                    c.push(self.pick(&["=", ""]).into());
                    c.push(self.sid());
                }
                c.retain(|a| !a.is_empty());
                if self.rng.one_in(4) {
                    c.extend(["LIMIT".into(), self.int(0, 200)]);
                }
                c
            }
            10 => {
                let mut c = s(&["XREAD"]);
                if self.rng.one_in(2) {
                    c.extend(["COUNT".into(), self.int(0, 3)]);
                }
                if self.rng.one_in(3) {
                    c.extend(["BLOCK".into(), "10".into()]);
                }
                c.push("STREAMS".into());
                let k2 = self.stream_key();
                let two = self.rng.one_in(3);
                c.push(k.clone());
                if two {
                    c.push(k2);
                }
                for _ in 0..1 + usize::from(two) {
                    c.push(if self.rng.one_in(4) {
                        "$".into()
                    } else {
                        self.sid_arg()
                    });
                }
                c
            }
            11 | 12 => {
                let (g, cons) = (self.group(), self.consumer());
                match self.rng.below(6) {
                    0 | 1 => {
                        let mut c = s(&["XGROUP", "CREATE", &k, &g]);
                        c.push(self.pick(&["0", "$", "5-0", "+"]).into());
                        if self.rng.one_in(3) {
                            c.push("MKSTREAM".into());
                        }
                        if self.rng.one_in(4) {
                            c.extend(["ENTRIESREAD".into(), self.int(-2, 5)]);
                        }
                        c
                    }
                    2 => {
                        let mut c = s(&["XGROUP", "SETID", &k, &g]);
                        c.push(self.pick(&["0", "$", "10-0", "-"]).into());
                        if self.rng.one_in(3) {
                            c.extend(["ENTRIESREAD".into(), self.int(-1, 5)]);
                        }
                        c
                    }
                    3 => s(&["XGROUP", "DESTROY", &k, &g]),
                    4 => s(&["XGROUP", "CREATECONSUMER", &k, &g, &cons]),
                    _ => s(&["XGROUP", "DELCONSUMER", &k, &g, &cons]),
                }
            }
            13..=15 => {
                let (g, cons) = (self.group(), self.consumer());
                let mut c = s(&["XREADGROUP", "GROUP", &g, &cons]);
                if self.rng.one_in(2) {
                    c.extend(["COUNT".into(), self.int(0, 3)]);
                }
                if self.rng.one_in(6) {
                    c.push("NOACK".into());
                }
                if self.rng.one_in(4) {
                    c.extend(["BLOCK".into(), "10".into()]);
                }
                c.extend(["STREAMS".into(), k]);
                c.push(match self.rng.below(4) {
                    0 => "0".into(),
                    1 => self.sid(),
                    _ => ">".into(),
                });
                c
            }
            16 => {
                let mut c = s(&["XACK", &k, &self.group()]);
                for _ in 0..1 + self.rng.below(3) {
                    c.push(self.sid());
                }
                c
            }
            17 => {
                let mut c = s(&["XPENDING", &k, &self.group()]);
                if self.rng.one_in(2) {
                    if self.rng.one_in(3) {
                        c.extend(["IDLE".into(), "0".into()]);
                    }
                    c.push(self.sid_arg());
                    c.push(self.sid_arg());
                    c.push(self.int(-1, 5));
                    if self.rng.one_in(2) {
                        c.push(self.consumer());
                    }
                }
                c
            }
            18 => {
                let (g, cons) = (self.group(), self.consumer());
                if self.rng.one_in(2) {
                    let mut c = s(&["XCLAIM", &k, &g, &cons, "0"]);
                    for _ in 0..1 + self.rng.below(3) {
                        c.push(self.sid());
                    }
                    match self.rng.below(5) {
                        0 => c.push("JUSTID".into()),
                        1 => c.extend(["RETRYCOUNT".into(), self.int(0, 5)]),
                        2 => c.push("FORCE".into()),
                        3 => c.extend(["LASTID".into(), self.sid()]),
                        _ => {}
                    }
                    c
                } else {
                    let mut c = s(&["XAUTOCLAIM", &k, &g, &cons, "0"]);
                    c.push(self.sid_arg());
                    if self.rng.one_in(2) {
                        c.extend(["COUNT".into(), self.int(0, 4)]);
                    }
                    if self.rng.one_in(3) {
                        c.push("JUSTID".into());
                    }
                    c
                }
            }
            19 => match self.rng.below(4) {
                0 => s(&["XINFO", "GROUPS", &k]),
                1 => s(&["XINFO", "STREAM", &k]),
                2 => s(&["XINFO", "CONSUMERS", &k, &self.group()]),
                _ => s(&["XINFO", "HELP"]),
            },
            _ => {
                let mut c = s(&["XSETID", &k, &self.sid()]);
                if self.rng.one_in(3) {
                    c.extend(["ENTRIESADDED".into(), self.int(-1, 60)]);
                }
                if self.rng.one_in(3) {
                    c.extend(["MAXDELETEDID".into(), self.sid()]);
                }
                c
            }
        }
    }
}
