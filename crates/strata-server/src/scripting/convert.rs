//! Conversions between RESP replies and Lua values, by redis' rules (RESP2 scripts).
//!
//! Reply → Lua (what `redis.call` returns): integer → number; bulk → string; null bulk and
//! null array → `false`; array → table; status → `{ok=...}`; error → `{err=...}`; the RESP3
//! types as RESP2 shows them (map → flat array, set → array, double → its bulk string) —
//! unless the script called `redis.setresp(3)`: then null → `nil`, map → `{map={k=v}}`, set →
//! `{set={member=true}}`, double → `{double=n}`.
//!
//! Lua → reply (what a script returns): number → integer (truncated toward zero); string →
//! bulk; `true` → 1; `false` and `nil` → null; a table with `err` → error, with `ok` →
//! status, with `double`, `map` or `set` → that RESP3 type (shown as RESP2 shows it to a
//! RESP2 client); any other table → array of its elements up to the first `nil`.
//! Depends on `resp` and mlua only.

use bytes::Bytes;
use mlua::{Lua, Value};

use crate::resp::Reply;

/// A reply as the Lua value `redis.call` returns.
pub fn reply_to_lua(lua: &Lua, r: &Reply, resp3: bool) -> mlua::Result<Value> {
    if resp3 {
        let field = |name: &str, v: Value| -> mlua::Result<Value> {
            let t = lua.create_table()?;
            t.raw_set(name, v)?;
            Ok(Value::Table(t))
        };
        match r {
            Reply::Null | Reply::NullArray => return Ok(Value::Nil),
            Reply::Double(d) => return field("double", Value::Number(*d)),
            Reply::Map(pairs) => {
                let m = lua.create_table_with_capacity(0, pairs.len())?;
                for (k, v) in pairs {
                    m.raw_set(reply_to_lua(lua, k, true)?, reply_to_lua(lua, v, true)?)?;
                }
                return field("map", Value::Table(m));
            }
            Reply::Set(items) => {
                let s = lua.create_table_with_capacity(0, items.len())?;
                for item in items {
                    s.raw_set(reply_to_lua(lua, item, true)?, true)?;
                }
                return field("set", Value::Table(s));
            }
            _ => {}
        }
    }
    Ok(match r {
        Reply::Ok => status_table(lua, "OK")?,
        Reply::Simple(s) => status_table(lua, s)?,
        Reply::Error(e) => error_table(lua, e)?,
        Reply::Int(i) => Value::Number(*i as f64),
        Reply::Bulk(b) | Reply::Verbatim(_, b) => Value::String(lua.create_string(b)?),
        Reply::Null | Reply::NullArray => Value::Boolean(false),
        Reply::Bool(b) => {
            if resp3 {
                Value::Boolean(*b)
            } else {
                Value::Number(f64::from(u8::from(*b)))
            }
        }
        Reply::Array(items) | Reply::Set(items) | Reply::Push(items) | Reply::Many(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item, resp3)?)?;
            }
            Value::Table(t)
        }
        Reply::Map(pairs) => {
            let t = lua.create_table_with_capacity(pairs.len() * 2, 0)?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                t.raw_set(2 * i + 1, reply_to_lua(lua, k, resp3)?)?;
                t.raw_set(2 * i + 2, reply_to_lua(lua, v, resp3)?)?;
            }
            Value::Table(t)
        }
        Reply::Double(d) => {
            Value::String(lua.create_string(crate::redis_float::format_double(*d).as_bytes())?)
        }
    })
}

/// `{ok = s}`.
pub fn status_table(lua: &Lua, s: &str) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("ok", s)?;
    Ok(Value::Table(t))
}

/// `{err = s}`.
pub fn error_table(lua: &Lua, s: &str) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", s)?;
    Ok(Value::Table(t))
}

/// A Lua number as redis converts it to an integer reply, C's `(long long)` on x86-64: toward
/// zero, and `i64::MIN` (the CPU's "integer indefinite") for NaN and anything out of range —
/// where Rust's `as` would saturate (2^63, a counter incremented past `i64::MAX` as a double,
/// is `-9223372036854775808` from redis).
fn c_long_long(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n.trunc() as i64
    }
}

/// A script's result as the reply the client gets; `resp3`: the script called
/// `redis.setresp(3)`, so a Lua boolean is a RESP3 boolean (1 or 0 to a RESP2 client) rather
/// than 1 or null.
pub fn lua_to_reply(v: &Value, resp3: bool) -> Reply {
    match v {
        Value::Boolean(b) if resp3 => Reply::Bool(*b),
        Value::Nil | Value::Boolean(false) => Reply::Null,
        Value::Boolean(true) => Reply::Int(1),
        Value::Integer(i) => Reply::Int(*i),
        Value::Number(n) => Reply::Int(c_long_long(*n)),
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                let msg = e.to_string_lossy();
                // An error without a code gets redis' generic one.
                let first = msg.split(' ').next().unwrap_or("");
                return if !first.is_empty() && first.chars().all(|c| c.is_ascii_uppercase()) {
                    Reply::error(msg)
                } else {
                    Reply::error(format!("ERR {msg}"))
                };
            }
            if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
                return Reply::simple(s.to_string_lossy().replace(['\r', '\n'], " "));
            }
            match t.raw_get::<Value>("double") {
                Ok(Value::Number(n)) => return Reply::Double(n),
                Ok(Value::Integer(i)) => return Reply::Double(i as f64),
                _ => {}
            }
            if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
                let pairs = m.pairs::<Value, Value>().filter_map(Result::ok);
                return Reply::Map(
                    pairs
                        .map(|(k, v)| (lua_to_reply(&k, resp3), lua_to_reply(&v, resp3)))
                        .collect(),
                );
            }
            if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
                let members = s.pairs::<Value, Value>().filter_map(Result::ok);
                return Reply::Set(members.map(|(k, _)| lua_to_reply(&k, resp3)).collect());
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => items.push(lua_to_reply(&v, resp3)),
                }
            }
            Reply::Array(items)
        }
        _ => Reply::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_values_become_redis_replies() {
        let lua = Lua::new();
        let eval = |src: &str| -> Reply {
            let v: Value = lua.load(src).eval().expect("valid Lua");
            lua_to_reply(&v, false)
        };
        assert_eq!(eval("return 3.99"), Reply::Int(3));
        assert_eq!(eval("return -3.99"), Reply::Int(-3));
        assert_eq!(eval("return 'x'"), Reply::Bulk(Bytes::from_static(b"x")));
        assert_eq!(eval("return true"), Reply::Int(1));
        assert_eq!(eval("return false"), Reply::Null);
        assert_eq!(eval("return nil"), Reply::Null);
        assert_eq!(
            eval("return {1, 'a', nil, 4}"),
            Reply::Array(vec![Reply::Int(1), Reply::Bulk(Bytes::from_static(b"a"))]),
            "arrays stop at the first nil"
        );
        assert_eq!(eval("return {err='boom'}"), Reply::error("ERR boom"));
        assert_eq!(
            eval("return {err='WRONGTYPE no'}"),
            Reply::error("WRONGTYPE no")
        );
        assert_eq!(eval("return {ok='fine'}"), Reply::simple("fine"));
    }

    #[test]
    fn replies_become_lua_values_and_back() {
        let lua = Lua::new();
        for r in [
            Reply::Int(7),
            Reply::Bulk(Bytes::from_static(b"v")),
            Reply::Null,
            Reply::Array(vec![Reply::Int(1), Reply::Array(vec![])]),
            Reply::simple("PONG"),
            Reply::error("ERR nope"),
        ] {
            let v = reply_to_lua(&lua, &r, false).unwrap();
            assert_eq!(lua_to_reply(&v, false), r);
        }
        let m = Reply::Map(vec![(Reply::bulk_str("f"), Reply::Int(1))]);
        assert_eq!(
            lua_to_reply(&reply_to_lua(&lua, &m, false).unwrap(), false),
            Reply::Array(vec![Reply::bulk_str("f"), Reply::Int(1)])
        );
    }
}

#[cfg(test)]
mod number_tests {
    use super::c_long_long;

    #[test]
    fn numbers_convert_like_c_on_x86_64() {
        for (n, want) in [
            (3.7, 3),
            (-3.7, -3),
            (9_223_372_036_854_775_807.0, i64::MIN),
            (-9_223_372_036_854_775_808.0, i64::MIN),
            (-1e300, i64::MIN),
            (f64::NAN, i64::MIN),
            (f64::INFINITY, i64::MIN),
            (9_007_199_254_740_993.0, 9_007_199_254_740_992),
        ] {
            assert_eq!(c_long_long(n), want, "{n}");
        }
    }
}
