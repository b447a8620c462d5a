//! The environment a script runs in (redis 7's): which standard libraries, the `redis` table
//! (`call`/`pcall` reach the running segment through `scripting::redis_call`), `bit`,
//! `cjson` (here), `cmsgpack` and `struct` (their own modules), and the read-only sandbox.
//! Depends on mlua, serde_json and those two modules; nothing else in the crate.

use mlua::{Lua, LuaOptions, StdLib, Table, Value};

/// The Lua that turns a fresh interpreter into the sandbox (run once per interpreter):
///
/// - every global moves into a hidden table (`env`, returned); the real globals table is left
///   empty and reads through to `env` (a plain `__index` table, so a global costs one table
///   lookup), raising on a nonexistent name and on any assignment;
/// - `redis`, `string`, `table`, `math`, `bit`, `cjson`, `cmsgpack`, `struct`, `coroutine` are
///   replaced by read-only
///   proxies, and the string metatable is locked, so no script can change what the next one
///   (or another client's) sees;
/// - `rawset`, `table.insert`, `table.remove` and `table.sort` (which write with `rawseti`)
///   refuse the globals table and the proxies; `setfenv`, `getfenv` and `newproxy` (which
///   reach environments and metatables) are removed; `loadstring` and `load` refuse bytecode
///   (crafted bytecode reads and writes memory: redis' CVE-2015-4335);
/// - `pcall`, `xpcall` and `coroutine.resume` re-raise the error that stops a script killed by
///   SCRIPT KILL or moved off an event loop (`stopped`, the chunk's argument, says which), so
///   no script can catch it and run on.
///
/// Every table is locked with `__metatable = false`, so `getmetatable` gives nothing to edit.
const SANDBOX: &str = r#"
local stopped = ...
local G = _G
local rawset, setmetatable, getmetatable, error, tostring, type, pairs, loadstring =
    rawset, setmetatable, getmetatable, error, tostring, type, pairs, loadstring
local pcall, xpcall, concat = pcall, xpcall, table.concat
local readonly = setmetatable({}, { __mode = "k" })
local function deny() error("Attempt to modify a readonly table", 2) end
local function protect(t)
    local p = setmetatable({}, { __index = t, __newindex = deny, __metatable = false })
    readonly[p] = true
    return p
end
local function copy(t)
    local c = {}
    for k, v in pairs(t) do c[k] = v end
    return c
end
local function rethrow(ok, ...)
    if not ok and stopped() then error((...), 0) end
    return ok, ...
end
local tbl = copy(table)
for _, name in pairs({ "insert", "remove", "sort" }) do
    local f = tbl[name]
    tbl[name] = function(t, ...)
        if readonly[t] then deny() end
        return f(t, ...)
    end
end
local co = copy(coroutine)
local resume = co.resume
co.resume = function(...) return rethrow(resume(...)) end
local env = copy(G)
env.table, env.coroutine = tbl, co
for _, name in pairs({ "redis", "string", "table", "math", "bit", "cjson", "cmsgpack", "struct", "coroutine" }) do
    if env[name] then env[name] = protect(env[name]) end
end
env._G = G
env.setfenv, env.getfenv, env.newproxy = nil, nil, nil
env.rawset = function(t, k, v)
    if readonly[t] then deny() end
    return rawset(t, k, v)
end
env.pcall = function(...) return rethrow(pcall(...)) end
env.xpcall = function(...) return rethrow(xpcall(...)) end
env.loadstring = function(s, name)
    if type(s) == "string" and s:byte(1) == 27 then
        return nil, "loading binary chunks is not allowed"
    end
    return loadstring(s, name)
end
env.load = function(reader, name)
    if type(reader) ~= "function" then
        return nil, "bad argument #1 to 'load' (function expected)"
    end
    local parts = {}
    while true do
        local piece = reader()
        if piece == nil or piece == "" then break end
        if type(piece) ~= "string" then return nil, "reader function must return a string" end
        parts[#parts + 1] = piece
    end
    return env.loadstring(concat(parts), name)
end
local names = {}
for k in pairs(G) do names[#names + 1] = k end
for _, k in pairs(names) do rawset(G, k, nil) end
setmetatable(env, {
    __index = function(_, k)
        error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end,
    __metatable = false,
})
setmetatable(G, {
    __index = env,
    __newindex = function(_, k)
        error("Script attempted to create global variable '" .. tostring(k) .. "'", 2)
    end,
    __metatable = false,
})
readonly[G] = true
getmetatable("").__metatable = false
-- A function library's environment (FUNCTION LOAD): globals read through to `env`, writes
-- refused, and `redis` is `load_redis` (register_function, log) until `finish` is called —
-- the library's functions, which keep this environment, then see the full `redis`.
local function library_env(load_redis)
    local overlay = setmetatable({ redis = load_redis }, { __index = env, __metatable = false })
    return protect(overlay), function() rawset(overlay, "redis", nil) end
end
return env, protect, library_env
"#;

/// An interpreter with the script environment (`new_interpreter`).
pub struct Sandbox {
    pub lua: Lua,
    /// The hidden globals (where the runner puts `KEYS` and `ARGV`; scripts read it through
    /// the locked globals table).
    pub env: Table,
    /// `protect(t)`: a read-only proxy of `t`.
    pub protect: mlua::Function,
    /// `library_env(load_redis)` → (environment, finish): see [`SANDBOX`].
    pub library_env: mlua::Function,
}

/// A fresh interpreter with the script environment.
pub fn new_interpreter() -> mlua::Result<Sandbox> {
    // A Rust panic inside `redis.call` must not be caught by a script's `pcall` (the script
    // would go on and its half-run command's writes be committed): it propagates.
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::new().catch_rust_panics(false),
    )?;
    let g = lua.globals();
    for name in [
        "loadfile",
        "dofile",
        "print",
        "module",
        "require",
        "collectgarbage",
        "gcinfo",
    ] {
        g.raw_set(name, Value::Nil)?;
    }
    g.raw_set("redis", redis_table(&lua)?)?;
    g.raw_set("bit", bit_table(&lua)?)?;
    g.raw_set("cjson", cjson_table(&lua)?)?;
    g.raw_set("cmsgpack", super::cmsgpack::table(&lua)?)?;
    g.raw_set("struct", super::lua_struct::table(&lua)?)?;
    let stopped = lua.create_function(|_, ()| Ok(super::busy::stopped()))?;
    let (env, protect, library_env) = lua
        .load(SANDBOX)
        .set_name("=sandbox")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .call(stopped)?;
    Ok(Sandbox {
        lua,
        env,
        protect,
        library_env,
    })
}

fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "call",
        lua.create_function(|lua, argv: mlua::MultiValue| super::redis_call(lua, argv, true))?,
    )?;
    t.raw_set(
        "pcall",
        lua.create_function(|lua, argv: mlua::MultiValue| super::redis_call(lua, argv, false))?,
    )?;
    t.raw_set(
        "sha1hex",
        lua.create_function(|_, s: mlua::LuaString| Ok(super::sha1_hex(&s.as_bytes())))?,
    )?;
    t.raw_set(
        "error_reply",
        lua.create_function(|lua, s: mlua::LuaString| {
            super::convert::error_table(lua, &s.to_string_lossy())
        })?,
    )?;
    t.raw_set(
        "status_reply",
        lua.create_function(|lua, s: mlua::LuaString| {
            super::convert::status_table(lua, &s.to_string_lossy())
        })?,
    )?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        t.raw_set(name, level)?;
    }
    t.raw_set(
        "log",
        lua.create_function(|_, (level, msg): (i64, mlua::Variadic<mlua::LuaString>)| {
            let text: Vec<String> = msg.iter().map(|m| m.to_string_lossy()).collect();
            let text = text.join(" ");
            match level {
                3 => tracing::warn!(target: "script", "{text}"),
                2 => tracing::info!(target: "script", "{text}"),
                _ => tracing::debug!(target: "script", "{text}"),
            }
            Ok(())
        })?,
    )?;
    t.raw_set(
        "setresp",
        lua.create_function(|_, v: i64| match v {
            2 | 3 => {
                super::set_resp3(v == 3);
                Ok(())
            }
            _ => Err(mlua::Error::runtime("RESP version must be 2 or 3.")),
        })?,
    )?;
    Ok(t)
}

/// LuaBitOp's `bit` library (what redis ships): 32-bit operations on numbers.
fn bit_table(lua: &Lua) -> mlua::Result<Table> {
    fn tobit(n: f64) -> i32 {
        // Lua BitOp normalizes modulo 2^32 into the signed 32-bit range.
        (n.trunc().rem_euclid(4_294_967_296.0) as u64 as u32) as i32
    }
    let t = lua.create_table()?;
    t.raw_set("tobit", lua.create_function(|_, n: f64| Ok(tobit(n)))?)?;
    t.raw_set("bnot", lua.create_function(|_, n: f64| Ok(!tobit(n)))?)?;
    let fold = |f: fn(i32, i32) -> i32| {
        lua.create_function(move |_, args: mlua::Variadic<f64>| {
            let mut it = args.iter();
            let first = it.next().copied().map(tobit).unwrap_or(0);
            Ok(it.fold(first, |a, &b| f(a, tobit(b))))
        })
    };
    t.raw_set("band", fold(|a, b| a & b)?)?;
    t.raw_set("bor", fold(|a, b| a | b)?)?;
    t.raw_set("bxor", fold(|a, b| a ^ b)?)?;
    let shift = |f: fn(i32, u32) -> i32| {
        lua.create_function(move |_, (x, n): (f64, f64)| Ok(f(tobit(x), (tobit(n) & 31) as u32)))
    };
    t.raw_set("lshift", shift(|x, n| ((x as u32) << n) as i32)?)?;
    t.raw_set("rshift", shift(|x, n| ((x as u32) >> n) as i32)?)?;
    t.raw_set("arshift", shift(|x, n| x >> n)?)?;
    t.raw_set("rol", shift(|x, n| (x as u32).rotate_left(n) as i32)?)?;
    t.raw_set("ror", shift(|x, n| (x as u32).rotate_right(n) as i32)?)?;
    t.raw_set(
        "bswap",
        lua.create_function(|_, x: f64| Ok(tobit(x).swap_bytes()))?,
    )?;
    t.raw_set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let (upper, width) = (n < 0, n.unsigned_abs().min(8) as usize);
            let v = tobit(x) as u32 as u64;
            let s = if upper {
                format!("{v:08X}")
            } else {
                format!("{v:08x}")
            };
            Ok(s[8 - width..].to_string())
        })?,
    )?;
    Ok(t)
}

/// `cjson.encode` and `cjson.decode` (lua-cjson's behaviour for the usual values: tables with
/// keys 1..n are arrays, other tables objects, `cjson.null` for JSON null).
fn cjson_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let null = Value::LightUserData(mlua::LightUserData(std::ptr::null_mut()));
    t.raw_set("null", null)?;
    t.raw_set(
        "encode",
        lua.create_function(|_, v: Value| {
            let j = to_json(&v, 0)?;
            Ok(j.to_string())
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let j: serde_json::Value = serde_json::from_slice(&s.as_bytes()).map_err(|e| {
                mlua::Error::runtime(format!("Expected value but found invalid JSON: {e}"))
            })?;
            from_json(lua, &j)
        })?,
    )?;
    Ok(t)
}

fn to_json(v: &Value, depth: usize) -> mlua::Result<serde_json::Value> {
    use serde_json::Value as J;
    if depth > 1000 {
        return Err(mlua::Error::runtime(
            "Cannot serialise, excessive nesting (1001)",
        ));
    }
    Ok(match v {
        Value::Nil => J::Null,
        Value::LightUserData(u) if u.0.is_null() => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Integer(i) => J::from(*i),
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => J::from(*n as i64),
        Value::Number(n) => serde_json::Number::from_f64(*n)
            .map(J::Number)
            .ok_or_else(|| {
                mlua::Error::runtime("Cannot serialise number: must not be NaN or Inf")
            })?,
        Value::String(s) => J::String(s.to_string_lossy()),
        Value::Table(t) => {
            let n = t.raw_len();
            let pairs = t.clone().pairs::<Value, Value>().count();
            if n > 0 && pairs == n || pairs == 0 {
                let mut a = Vec::with_capacity(n);
                for i in 1..=n {
                    a.push(to_json(&t.raw_get::<Value>(i)?, depth + 1)?);
                }
                if pairs == 0 {
                    // An empty table encodes as an object, as lua-cjson does.
                    J::Object(Default::default())
                } else {
                    J::Array(a)
                }
            } else {
                let mut m = serde_json::Map::new();
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    let key = match k {
                        Value::String(s) => s.to_string_lossy(),
                        Value::Integer(i) => i.to_string(),
                        Value::Number(n) => n.to_string(),
                        _ => {
                            return Err(mlua::Error::runtime(
                                "Cannot serialise table: key must be a number or string",
                            ))
                        }
                    };
                    m.insert(key, to_json(&v, depth + 1)?);
                }
                J::Object(m)
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    })
}

fn from_json(lua: &Lua, j: &serde_json::Value) -> mlua::Result<Value> {
    use serde_json::Value as J;
    Ok(match j {
        J::Null => Value::LightUserData(mlua::LightUserData(std::ptr::null_mut())),
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        J::String(s) => Value::String(lua.create_string(s)?),
        J::Array(a) => {
            let t = lua.create_table_with_capacity(a.len(), 0)?;
            for (i, v) in a.iter().enumerate() {
                t.raw_set(i + 1, from_json(lua, v)?)?;
            }
            Value::Table(t)
        }
        J::Object(m) => {
            let t = lua.create_table_with_capacity(0, m.len())?;
            for (k, v) in m {
                t.raw_set(k.as_str(), from_json(lua, v)?)?;
            }
            Value::Table(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval<T: mlua::FromLua>(lua: &Lua, src: &str) -> mlua::Result<T> {
        lua.load(src).eval()
    }

    #[test]
    fn the_sandbox_has_redis_libraries_and_protects_globals() {
        let lua = new_interpreter().unwrap().lua;
        for gone in [
            "os", "io", "loadfile", "dofile", "print", "setfenv", "getfenv", "newproxy",
        ] {
            let e = eval::<Value>(&lua, &format!("return {gone}")).unwrap_err();
            assert!(
                e.to_string().contains("nonexistent global variable"),
                "{gone}: {e}"
            );
        }
        let e = eval::<Value>(&lua, "x = 1").unwrap_err();
        assert!(e.to_string().contains("create global variable 'x'"), "{e}");
        assert_eq!(eval::<i64>(&lua, "local x = 5 return x").unwrap(), 5);
        assert_eq!(
            eval::<String>(&lua, "return redis.sha1hex('')").unwrap(),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
        assert_eq!(
            eval::<i64>(&lua, "return bit.band(0xff, 0x0f)").unwrap(),
            15
        );
        assert_eq!(eval::<i64>(&lua, "return bit.bnot(0)").unwrap(), -1);
        assert_eq!(
            eval::<i64>(&lua, "return bit.lshift(1, 31)").unwrap(),
            i32::MIN as i64
        );
        assert_eq!(
            eval::<String>(&lua, "return bit.tohex(255, 4)").unwrap(),
            "00ff"
        );
        assert_eq!(
            eval::<String>(&lua, "return cjson.encode({1, 2, 'x'})").unwrap(),
            "[1,2,\"x\"]"
        );
        assert_eq!(
            eval::<String>(
                &lua,
                "return cjson.decode('{\"a\":[1,{\"b\":true}]}').a[2].b and 'yes' or 'no'"
            )
            .unwrap(),
            "yes"
        );
        assert_eq!(
            eval::<String>(&lua, "return cjson.encode({a = 'b'})").unwrap(),
            "{\"a\":\"b\"}"
        );
    }

    #[test]
    fn no_script_can_change_what_the_next_one_sees() {
        let lua = new_interpreter().unwrap().lua;
        for (attack, expect) in [
            ("redis.call = nil", "readonly"),
            ("string.rep = nil", "readonly"),
            ("math.floor = function() return 0 end", "readonly"),
            ("cjson.encode = 1", "readonly"),
            ("rawset(_G, 'x', 1)", "readonly"),
            ("rawset(redis, 'call', 1)", "readonly"),
            ("rawset(string, 'rep', 1)", "readonly"),
            ("_G.tostring = nil", "create global variable 'tostring'"),
            ("tonumber = nil", "create global variable 'tonumber'"),
            ("getmetatable(_G).__index = {}", "index a boolean"),
            ("getmetatable('').__index = {}", "index a boolean"),
            ("setmetatable(_G, {})", "protected metatable"),
            ("setmetatable(redis, {})", "protected metatable"),
            ("loadstring('x = 1')()", "create global variable 'x'"),
            (
                "assert(loadstring(string.dump(function() end)))",
                "binary chunks",
            ),
            (
                "local d, done = string.dump(function() end), false \
                 assert(load(function() if done then return nil end done = true return d end))",
                "binary chunks",
            ),
            ("table.insert(_G, 1)", "readonly"),
            ("table.insert(string, 'x')", "readonly"),
            ("table.sort(redis)", "readonly"),
        ] {
            let e = lua.load(attack).exec().unwrap_err().to_string();
            assert!(e.contains(expect), "{attack}: {e}");
        }
        // The libraries still work, through the proxies and the string metatable.
        assert_eq!(
            eval::<String>(&lua, "return ('ab'):rep(2) .. string.upper('c')").unwrap(),
            "ababC"
        );
        assert_eq!(eval::<i64>(&lua, "return math.floor(2.5)").unwrap(), 2);
        assert_eq!(
            eval::<i64>(&lua, "local t = {} rawset(t, 'a', 3) return t.a").unwrap(),
            3
        );
    }
}
