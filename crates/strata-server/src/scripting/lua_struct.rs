//! The `struct` library redis gives scripts (Roberto Ierusalimschy's lstruct, as redis ships
//! it): `struct.pack(fmt, ...)`, `struct.unpack(fmt, s [, pos])` (the values, then the
//! position after them) and `struct.size(fmt)`.
//!
//! Format: `<` little endian, `>` big endian, `=` and `!` native (little endian here; `!n`
//! sets the alignment to n, `!` alone to 8), `x` one zero byte of padding, `b`/`B` signed and
//! unsigned char, `h`/`H` short, `l`/`L` long (8 bytes), `T` size_t (8), `i`/`I` with an
//! optional size (1..8, default 4), `f` float, `d` double, `s` a zero-terminated string, `c`
//! a fixed-length string (`c0` with pack takes the whole string; with unpack, the length is
//! the previous value read), spaces ignored. Fields are aligned to their size, capped at the
//! alignment (1 unless `!` set it). Bad formats and short input are errors.
//! Depends on mlua only.

use mlua::{Lua, MultiValue, Table, Value};

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, (fmt, args): (mlua::LuaString, MultiValue)| {
            lua.create_string(pack(&fmt.as_bytes(), args)?)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(
            |lua, (fmt, data, pos): (mlua::LuaString, mlua::LuaString, Option<i64>)| {
                unpack(lua, &fmt.as_bytes(), &data.as_bytes(), pos.unwrap_or(1))
            },
        )?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|_, fmt: mlua::LuaString| size(&fmt.as_bytes()))?,
    )?;
    Ok(t)
}

fn err(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
}

/// The format's state: byte order and alignment.
struct Header {
    little: bool,
    align: usize,
}

/// One field of a format.
enum Field {
    Pad,
    Int {
        size: usize,
        signed: bool,
    },
    Float,
    Double,
    /// `s`: zero-terminated.
    ZString,
    /// `c<n>`: n bytes (0: the whole string / the previous value).
    Chars(usize),
}

/// Parses `fmt` into fields, applying the header options as they come.
fn fields(
    fmt: &[u8],
    mut each: impl FnMut(&Header, Field) -> mlua::Result<()>,
) -> mlua::Result<()> {
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut i = 0;
    let number = |i: &mut usize| -> Option<usize> {
        let start = *i;
        while *i < fmt.len() && fmt[*i].is_ascii_digit() {
            *i += 1;
        }
        std::str::from_utf8(&fmt[start..*i]).ok()?.parse().ok()
    };
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        let f = match c {
            b' ' => continue,
            b'<' | b'=' => {
                h.little = true;
                continue;
            }
            b'>' => {
                h.little = false;
                continue;
            }
            b'!' => {
                let n = number(&mut i).unwrap_or(8);
                if !n.is_power_of_two() {
                    return Err(err(format!("alignment {n} is not a power of 2")));
                }
                h.align = n;
                continue;
            }
            b'x' => Field::Pad,
            b'b' | b'B' => Field::Int {
                size: 1,
                signed: c == b'b',
            },
            b'h' | b'H' => Field::Int {
                size: 2,
                signed: c == b'h',
            },
            b'l' | b'L' => Field::Int {
                size: 8,
                signed: c == b'l',
            },
            b'T' => Field::Int {
                size: 8,
                signed: false,
            },
            b'i' | b'I' => {
                let n = number(&mut i).unwrap_or(4);
                if !(1..=8).contains(&n) {
                    return Err(err(format!("integral size {n} is larger than limit of 8")));
                }
                Field::Int {
                    size: n,
                    signed: c == b'i',
                }
            }
            b'f' => Field::Float,
            b'd' => Field::Double,
            b's' => Field::ZString,
            b'c' => Field::Chars(number(&mut i).unwrap_or(1)),
            other => {
                return Err(err(format!(
                    "invalid format option '{}'",
                    char::from(other)
                )))
            }
        };
        each(&h, f)?;
    }
    Ok(())
}

/// Padding before a field of `size` bytes at `pos`.
fn gap(h: &Header, size: usize, pos: usize) -> usize {
    let a = size.min(h.align);
    if a <= 1 {
        0
    } else {
        (a - pos % a) % a
    }
}

fn int_bytes(v: i64, size: usize, little: bool) -> Vec<u8> {
    let le = v.to_le_bytes();
    let mut b = le[..size].to_vec();
    if !little {
        b.reverse();
    }
    b
}

fn pack(fmt: &[u8], args: MultiValue) -> mlua::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    let mut next = |what: &str| {
        args.next().ok_or_else(|| {
            err(format!(
                "bad argument to 'pack' ({what} expected, got no value)"
            ))
        })
    };
    let num = |v: Value| -> mlua::Result<f64> {
        match v {
            Value::Integer(i) => Ok(i as f64),
            Value::Number(n) => Ok(n),
            Value::String(s) => s
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| err("bad argument to 'pack' (number expected)")),
            other => Err(err(format!(
                "bad argument to 'pack' (number expected, got {})",
                other.type_name()
            ))),
        }
    };
    let text = |v: Value| -> mlua::Result<Vec<u8>> {
        match v {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(i) => Ok(i.to_string().into_bytes()),
            Value::Number(n) => Ok(n.to_string().into_bytes()),
            other => Err(err(format!(
                "bad argument to 'pack' (string expected, got {})",
                other.type_name()
            ))),
        }
    };
    fields(fmt, |h, f| {
        match f {
            Field::Pad => out.push(0),
            Field::Int { size, .. } => {
                out.resize(out.len() + gap(h, size, out.len()), 0);
                let n = num(next("number")?)?;
                out.extend(int_bytes(n as i64, size, h.little));
            }
            Field::Float | Field::Double => {
                let size = if matches!(f, Field::Float) { 4 } else { 8 };
                out.resize(out.len() + gap(h, size, out.len()), 0);
                let n = num(next("number")?)?;
                let mut b = if size == 4 {
                    (n as f32).to_le_bytes().to_vec()
                } else {
                    n.to_le_bytes().to_vec()
                };
                if !h.little {
                    b.reverse();
                }
                out.extend(b);
            }
            Field::ZString => {
                let s = text(next("string")?)?;
                if s.contains(&0) {
                    return Err(err("bad argument to 'pack' (string contains zeros)"));
                }
                out.extend(s);
                out.push(0);
            }
            Field::Chars(n) => {
                let s = text(next("string")?)?;
                let n = if n == 0 { s.len() } else { n };
                if s.len() < n {
                    return Err(err("bad argument to 'pack' (string too short)"));
                }
                out.extend_from_slice(&s[..n]);
            }
        }
        Ok(())
    })?;
    Ok(out)
}

fn unpack(lua: &Lua, fmt: &[u8], data: &[u8], pos: i64) -> mlua::Result<MultiValue> {
    let mut pos = pos
        .checked_sub(1)
        .and_then(|p| usize::try_from(p).ok())
        .filter(|&p| p <= data.len())
        .ok_or_else(|| err("bad argument to 'unpack' (offset must be 1 or greater)"))?;
    let mut out: Vec<Value> = Vec::new();
    let short = || err("bad argument to 'unpack' (data string too short)");
    fields(fmt, |h, f| {
        let take = |pos: &mut usize, n: usize| -> mlua::Result<&[u8]> {
            let end = pos
                .checked_add(n)
                .filter(|&e| e <= data.len())
                .ok_or_else(short)?;
            let s = &data[*pos..end];
            *pos = end;
            Ok(s)
        };
        match f {
            Field::Pad => {
                take(&mut pos, 1)?;
            }
            Field::Int { size, signed } => {
                pos += gap(h, size, pos);
                let mut b = take(&mut pos, size)?.to_vec();
                if !h.little {
                    b.reverse();
                }
                let mut v: u64 = 0;
                for (i, byte) in b.iter().enumerate() {
                    v |= u64::from(*byte) << (8 * i);
                }
                let n = if signed && size < 8 && v >> (8 * size - 1) & 1 == 1 {
                    (v | !0u64 << (8 * size)) as i64 as f64
                } else if signed {
                    v as i64 as f64
                } else {
                    v as f64
                };
                out.push(Value::Number(n));
            }
            Field::Float | Field::Double => {
                let size = if matches!(f, Field::Float) { 4 } else { 8 };
                pos += gap(h, size, pos);
                let mut b = take(&mut pos, size)?.to_vec();
                if !h.little {
                    b.reverse();
                }
                let n = if size == 4 {
                    f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                } else {
                    f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                };
                out.push(Value::Number(n));
            }
            Field::ZString => {
                let end = data[pos..]
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or_else(|| err("unfinished string in data"))?;
                let s = take(&mut pos, end)?;
                out.push(Value::String(lua.create_string(s)?));
                pos += 1;
            }
            Field::Chars(n) => {
                let n = if n == 0 {
                    // The length is the previous value read, which is replaced by the string.
                    match out.pop() {
                        Some(Value::Number(l)) if l >= 0.0 => l as usize,
                        _ => return Err(err("format 'c0' needs a previous size")),
                    }
                } else {
                    n
                };
                let s = take(&mut pos, n)?;
                out.push(Value::String(lua.create_string(s)?));
            }
        }
        Ok(())
    })?;
    out.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_iter(out))
}

fn size(fmt: &[u8]) -> mlua::Result<i64> {
    let mut pos = 0usize;
    fields(fmt, |h, f| {
        let n = match f {
            Field::Pad => 1,
            Field::Int { size, .. } => gap(h, size, pos) + size,
            Field::Float => gap(h, 4, pos) + 4,
            Field::Double => gap(h, 8, pos) + 8,
            Field::Chars(n) => n,
            Field::ZString => return Err(err("options 's' has no fixed size")),
        };
        pos = pos
            .checked_add(n)
            .ok_or_else(|| err("format size overflows"))?;
        Ok(())
    })?;
    Ok(pos as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        let lua = Lua::new();
        lua.globals().set("struct", table(&lua).unwrap()).unwrap();
        lua
    }

    #[test]
    fn pack_unpack_and_size_follow_lstruct() {
        let lua = lua();
        let hex = |expr: &str| -> String {
            let s: mlua::LuaString = lua.load(format!("return {expr}")).eval().unwrap();
            s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(hex("struct.pack('>I2', 258)"), "0102");
        assert_eq!(hex("struct.pack('<i', -2)"), "feffffff");
        assert_eq!(hex("struct.pack('>bxH', -1, 1)"), "ff000001");
        assert_eq!(hex("struct.pack('!4>bi', 1, 2)"), "0100000000000002");
        assert_eq!(hex("struct.pack('sc2', 'ab', 'xyz')"), "6162007879");
        assert_eq!(hex("struct.pack('>d', 1.5)"), "3ff8000000000000");
        let ok: bool = lua
            .load(
                "local a, b, c, nxt = struct.unpack('>hsBc0', struct.pack('>hsBc0', -300, 'hi', 3, 'xyz'))
                 return a == -300 and b == 'hi' and c == 'xyz' and nxt == 10",
            )
            .eval()
            .unwrap();
        assert!(ok);
        let n: i64 = lua.load("return struct.size('>i2xd')").eval().unwrap();
        assert_eq!(n, 11);
        for bad in [
            "struct.unpack('>i4', 'ab')",
            "struct.pack('q', 1)",
            "struct.pack('i9', 1)",
            "struct.size('s')",
            "struct.pack('i')",
            "struct.size('c18446744073709551615c1')",
            "struct.unpack('b', 'x', -9223372036854775807 - 1)",
        ] {
            assert!(lua.load(bad).exec().is_err(), "{bad}");
        }
    }
}
