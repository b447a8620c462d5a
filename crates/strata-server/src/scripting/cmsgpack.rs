//! The `cmsgpack` library redis gives scripts (lua-cmsgpack 0.4's behaviour): `pack(...)`
//! encodes each argument as one MessagePack value and concatenates them; `unpack(s)` returns
//! every value in `s`; `unpack_one(s [, offset])` and `unpack_limit(s, limit [, offset])`
//! return the offset after what they decoded (-1 at the end) followed by the values.
//!
//! Encoding follows lua-cmsgpack: integral numbers as the smallest integer type, others as
//! float 32 when that loses nothing, else float 64; strings as str 8/16/32; a table whose
//! keys are exactly 1..n as an array (an empty table too), any other table as a map; nesting
//! deeper than 16 and unsupported types (functions, userdata) as nil. Decoding accepts every
//! MessagePack type but ext; bin is returned as a string, integers and floats as numbers.
//! Malformed input is an error, never a partial value.
//! Depends on mlua only.

use mlua::{Lua, MultiValue, Table, Value};

/// How deep tables nest before the encoder writes nil instead (lua-cmsgpack's limit).
const MAX_NESTING: usize = 16;

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(mlua::Error::runtime(
                    "MessagePack pack needs input. Expected: at least one argument",
                ));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                encode(v, &mut out, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::LuaString| {
            let b = s.as_bytes();
            let mut d = Decoder { buf: &b, pos: 0 };
            let mut out = Vec::new();
            while d.pos < d.buf.len() {
                out.push(d.value(lua, 0)?);
            }
            Ok(MultiValue::from_iter(out))
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::LuaString, Option<i64>)| {
            unpack_limited(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(
            |lua, (s, limit, offset): (mlua::LuaString, i64, Option<i64>)| {
                unpack_limited(lua, &s.as_bytes(), limit, offset.unwrap_or(0))
            },
        )?,
    )?;
    Ok(t)
}

fn unpack_limited(lua: &Lua, b: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|&o| o <= b.len())
        .ok_or_else(|| mlua::Error::runtime("Start offset greater than input length"))?;
    let mut d = Decoder { buf: b, pos: start };
    let mut values = Vec::new();
    while d.pos < b.len() && (limit <= 0 || (values.len() as i64) < limit) {
        values.push(d.value(lua, 0)?);
    }
    let next = if d.pos < b.len() { d.pos as i64 } else { -1 };
    let mut out = vec![Value::Integer(next)];
    out.extend(values);
    Ok(MultiValue::from_iter(out))
}

fn encode(v: &Value, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    match v {
        Value::Nil => out.push(0xc0),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => encode_int(*i, out),
        Value::Number(n) => encode_number(*n, out),
        Value::String(s) => {
            let b = s.as_bytes();
            let n = b.len();
            if n < 32 {
                out.push(0xa0 | n as u8);
            } else if n <= 0xff {
                out.extend_from_slice(&[0xd9, n as u8]);
            } else if n <= 0xffff {
                out.push(0xda);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            } else {
                out.push(0xdb);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            out.extend_from_slice(&b);
        }
        Value::Table(t) if depth < MAX_NESTING => {
            let n = t.raw_len();
            let pairs = t.pairs::<Value, Value>().count();
            if pairs == n {
                header(out, n, 0x90, 0xdc, 0xdd);
                for i in 1..=n {
                    encode(&t.raw_get::<Value>(i)?, out, depth + 1)?;
                }
            } else {
                header(out, pairs, 0x80, 0xde, 0xdf);
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    encode(&k, out, depth + 1)?;
                    encode(&v, out, depth + 1)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

fn header(out: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n < 16 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if n.fract() == 0.0 && (-LIMIT..LIMIT).contains(&n) {
        return encode_int(n as i64, out);
    }
    let f = n as f32;
    if f64::from(f) == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(i: i64, out: &mut Vec<u8>) {
    if i >= 0 {
        let u = i as u64;
        if u <= 127 {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if i >= -32 {
        out.push(i as i8 as u8);
    } else if i >= i64::from(i8::MIN) {
        out.extend_from_slice(&[0xd0, i as i8 as u8]);
    } else if i >= i64::from(i16::MIN) {
        out.push(0xd1);
        out.extend_from_slice(&(i as i16).to_be_bytes());
    } else if i >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(i as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&i.to_be_bytes());
    }
}

struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> mlua::Result<&[u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| mlua::Error::runtime("Missing bytes in input."))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> mlua::Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        if depth > 1000 {
            return Err(mlua::Error::runtime("Bad data format in input."));
        }
        let tag = self.take(1)?[0];
        let num = |n: f64| Value::Number(n);
        Ok(match tag {
            0x00..=0x7f => num(f64::from(tag)),
            0xe0..=0xff => num(f64::from(tag as i8)),
            0x80..=0x8f => self.map(lua, usize::from(tag & 0x0f), depth)?,
            0x90..=0x9f => self.array(lua, usize::from(tag & 0x0f), depth)?,
            0xa0..=0xbf => self.string(lua, usize::from(tag & 0x1f))?,
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(lua, n)?
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                self.string(lua, n)?
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                self.string(lua, n)?
            }
            0xca => num(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => num(f64::from_bits(self.uint(8)?)),
            0xcc => num(self.uint(1)? as f64),
            0xcd => num(self.uint(2)? as f64),
            0xce => num(self.uint(4)? as f64),
            0xcf => num(self.uint(8)? as f64),
            0xd0 => num(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => num(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => num(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => num(self.uint(8)? as i64 as f64),
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(lua, n, depth)?
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(lua, n, depth)?
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(lua, n, depth)?
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(lua, n, depth)?
            }
            _ => return Err(mlua::Error::runtime("Bad data format in input.")),
        })
    }

    fn string(&mut self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let b = self.take(n)?;
        Ok(Value::String(lua.create_string(b)?))
    }

    fn array(&mut self, lua: &Lua, n: usize, depth: usize) -> mlua::Result<Value> {
        // Every element takes at least a byte: a count past the input is malformed, and must
        // not reserve memory for it.
        if n > self.buf.len() - self.pos {
            return Err(mlua::Error::runtime("Missing bytes in input."));
        }
        let t = lua.create_table_with_capacity(n, 0)?;
        for i in 1..=n {
            t.raw_set(i, self.value(lua, depth + 1)?)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize, depth: usize) -> mlua::Result<Value> {
        if n > (self.buf.len() - self.pos) / 2 {
            return Err(mlua::Error::runtime("Missing bytes in input."));
        }
        let t = lua.create_table_with_capacity(0, n)?;
        for _ in 0..n {
            let k = self.value(lua, depth + 1)?;
            let v = self.value(lua, depth + 1)?;
            if !k.is_nil() {
                t.raw_set(k, v)?;
            }
        }
        Ok(Value::Table(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        let lua = Lua::new();
        lua.globals().set("cmsgpack", table(&lua).unwrap()).unwrap();
        lua
    }

    fn hex(lua: &Lua, expr: &str) -> String {
        let s: mlua::LuaString = lua
            .load(format!("return cmsgpack.pack({expr})"))
            .eval()
            .unwrap();
        s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn values_encode_as_lua_cmsgpack_does() {
        let lua = lua();
        for (expr, want) in [
            ("1", "01"),
            ("-1", "ff"),
            ("-33", "d0df"),
            ("200", "ccc8"),
            ("70000", "ce00011170"),
            ("1.5", "ca3fc00000"),
            ("0.1", "cb3fb999999999999a"),
            ("'abc'", "a3616263"),
            ("true, false, nil", "c3c2c0"),
            ("{1, 2}", "920102"),
            ("{}", "90"),
            ("{a = 1}", "81a16101"),
            ("{1, 2}, 'x'", "920102a178"),
        ] {
            assert_eq!(hex(&lua, expr), want, "{expr}");
        }
    }

    #[test]
    fn unpack_round_trips_and_refuses_malformed_input() {
        let lua = lua();
        let ok: bool = lua
            .load(
                "local a, b, c = cmsgpack.unpack(cmsgpack.pack({1, {x = 'y'}, -70000}, 'z', 2.25))
                 return a[1] == 1 and a[2].x == 'y' and a[3] == -70000 and b == 'z' and c == 2.25",
            )
            .eval()
            .unwrap();
        assert!(ok);
        let ok: bool = lua
            .load(
                "local s = cmsgpack.pack(1, 2, 3)
                 local off, v = cmsgpack.unpack_one(s)
                 local off2, v2, v3 = cmsgpack.unpack_limit(s, 2, off)
                 return off == 1 and v == 1 and off2 == -1 and v2 == 2 and v3 == 3",
            )
            .eval()
            .unwrap();
        assert!(ok);
        // Lua 5.1 has decimal escapes only: 0xdc 0xffff (array of 65535, no elements), a fixstr
        // of 5 with 2 bytes, 0xc1 (never used), uint 16 with one byte.
        for bad in ["'\\220\\255\\255'", "'\\165ab'", "'\\193'", "'\\205\\1'"] {
            let r: mlua::Result<Value> = lua.load(format!("return cmsgpack.unpack({bad})")).eval();
            assert!(r.is_err(), "{bad}");
        }
    }
}
