//! Function libraries (FUNCTION LOAD, FCALL): the server's registry of loaded libraries and
//! their functions, how a library's code is checked and loaded into an interpreter, and the
//! FUNCTION DUMP payload.
//!
//! A library is Lua code starting with a shebang, `#!lua name=<library>`, that calls
//! `redis.register_function` for each function it defines (`redis.call` is not available
//! while it loads). The registry holds each library's code and what its functions declared
//! (name, description, flags); every interpreter loads a library's code itself the first time
//! it runs one of its functions, and drops what it loaded when the registry's generation
//! changes (any FUNCTION LOAD, DELETE, FLUSH or RESTORE).
//!
//! Invariants: a function name belongs to at most one library; the registry changes only
//! under its write lock, after the new code loaded cleanly. Persisting the libraries (engine
//! keys `0x02 ‖ name`, see `keyspace`) is the caller's job, in the same write as the command:
//! FUNCTION commands stage a new registry in their segment and the executor installs it only
//! when that write committed (`commands::functions`).
//! Depends on mlua and `library` (the sandbox); not on the command layer.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use mlua::{Function, Table, Value};
use parking_lot::RwLock;

use super::library::Sandbox;

/// The flags `redis.register_function` accepts (redis 7's).
pub const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// What a library declared: its name, code and functions.
#[derive(Debug)]
pub struct Library {
    pub name: String,
    pub code: Bytes,
    pub functions: Vec<FunctionInfo>,
}

/// One function of a library, as FUNCTION LIST shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<String>,
    pub flags: Vec<String>,
}

/// The server's loaded libraries.
#[derive(Default)]
pub struct Functions {
    registry: RwLock<Registry>,
    /// Bumped by every change: interpreters drop the libraries they loaded under an older one.
    generation: AtomicU64,
}

/// Libraries by name, and the library of each function.
#[derive(Default, Clone)]
pub struct Registry {
    pub libraries: BTreeMap<String, Arc<Library>>,
    by_function: HashMap<String, Arc<Library>>,
}

impl Registry {
    /// Adds `lib`; with `replace`, in place of a library of the same name. Refuses a name
    /// taken without `replace`, and a function name another library has.
    pub fn insert(&mut self, lib: Library, replace: bool) -> Result<(), String> {
        if self.libraries.contains_key(&lib.name) && !replace {
            return Err(format!("ERR Library '{}' already exists", lib.name));
        }
        for f in &lib.functions {
            if let Some(other) = self.by_function.get(&f.name) {
                if other.name != lib.name {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
        }
        self.remove(&lib.name);
        let lib = Arc::new(lib);
        for f in &lib.functions {
            self.by_function.insert(f.name.clone(), lib.clone());
        }
        self.libraries.insert(lib.name.clone(), lib);
        Ok(())
    }

    /// Removes the library `name`; whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(lib) = self.libraries.remove(name) else {
            return false;
        };
        for f in &lib.functions {
            self.by_function.remove(&f.name);
        }
        true
    }

    /// How many functions all libraries define.
    pub fn function_count(&self) -> usize {
        self.by_function.len()
    }
}

impl Functions {
    /// The function `name`: its library and what it declared.
    pub fn find(&self, name: &[u8]) -> Option<(Arc<Library>, FunctionInfo)> {
        let name = std::str::from_utf8(name).ok()?;
        let reg = self.registry.read();
        let lib = reg.by_function.get(name)?.clone();
        let info = lib.functions.iter().find(|f| f.name == name)?.clone();
        Some((lib, info))
    }

    /// A copy of the registry (FUNCTION LIST, DUMP, STATS).
    pub fn snapshot(&self) -> Registry {
        self.registry.read().clone()
    }

    /// Replaces the registry (a segment's staged FUNCTION changes, once committed).
    pub fn install(&self, next: Registry) {
        *self.registry.write() = next;
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

/// A library's name from its shebang (`#!lua name=mylib`), and the code after that line.
pub fn parse_shebang(code: &[u8]) -> Result<(String, &[u8]), String> {
    let Some(rest) = code.strip_prefix(b"#!") else {
        return Err("ERR Missing library metadata".into());
    };
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let line = std::str::from_utf8(&rest[..end])
        .map_err(|_| "ERR Invalid metadata value given: not UTF-8".to_string())?;
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("");
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("ERR Invalid metadata value given: {p}")),
        }
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    // The newline ending the shebang stays in what Lua sees, so line numbers in errors match
    // the text the user loaded.
    Ok((name, &code[2 + end..]))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A library's code loaded into one interpreter: its functions, callable.
pub struct Loaded {
    pub name: String,
    pub functions: Vec<Registered>,
}

/// One `redis.register_function` call.
pub struct Registered {
    pub name: String,
    pub callback: Function,
    pub description: Option<String>,
    pub flags: Vec<String>,
}

impl Loaded {
    /// What the registry keeps of it.
    pub fn describe(&self, code: &Bytes) -> Library {
        Library {
            name: self.name.clone(),
            code: code.clone(),
            functions: self
                .functions
                .iter()
                .map(|f| FunctionInfo {
                    name: f.name.clone(),
                    description: f.description.clone(),
                    flags: f.flags.clone(),
                })
                .collect(),
        }
    }
}

/// Runs a library's code in `sb` and collects the functions it registers. Errors are
/// replies' texts.
pub fn load(sb: &Sandbox, code: &Bytes) -> Result<Loaded, String> {
    let (name, body) = parse_shebang(code)?;
    let lua = &sb.lua;
    let registered: Rc<RefCell<Vec<Registered>>> = Rc::default();
    let lua_err = |e: mlua::Error| format!("ERR Error registering functions: {}", e);
    let load_redis = lua.create_table().map_err(lua_err)?;
    let sink = registered.clone();
    let register = lua
        .create_function(move |_, args: mlua::MultiValue| {
            let f = parse_registration(args)?;
            let mut sink = sink.borrow_mut();
            if sink.iter().any(|g| g.name == f.name) {
                return Err(mlua::Error::runtime(
                    "Function already exists in the library",
                ));
            }
            sink.push(f);
            Ok(())
        })
        .map_err(lua_err)?;
    let full: Table = sb.env.raw_get("redis").map_err(lua_err)?;
    let setup = || -> mlua::Result<()> {
        load_redis.raw_set("register_function", register)?;
        for k in [
            "log",
            "LOG_DEBUG",
            "LOG_VERBOSE",
            "LOG_NOTICE",
            "LOG_WARNING",
            "setresp",
        ] {
            load_redis.raw_set(k, full.get::<Value>(k)?)?;
        }
        Ok(())
    };
    setup().map_err(lua_err)?;
    let load_redis: Table = sb.protect.call(load_redis).map_err(lua_err)?;
    let (env, finish): (Table, Function) = sb.library_env.call(load_redis).map_err(lua_err)?;
    let chunk = lua
        .load(body)
        .set_name(format!("@user_function_{name}"))
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(env)
        .into_function()
        .map_err(|e| {
            format!(
                "ERR Error compiling function: {}",
                first_line(&e.to_string())
            )
        })?;
    let ran = chunk.call::<()>(());
    finish.call::<()>(()).map_err(lua_err)?;
    if let Err(e) = ran {
        return Err(format!(
            "ERR Error registering functions: {}",
            first_line(&e.to_string())
        ));
    }
    let functions = std::mem::take(&mut *registered.borrow_mut());
    if functions.is_empty() {
        return Err("ERR No functions registered".into());
    }
    Ok(Loaded { name, functions })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// `redis.register_function(name, callback)` or
/// `redis.register_function{function_name=, callback=, flags=, description=}`.
fn parse_registration(args: mlua::MultiValue) -> mlua::Result<Registered> {
    let bad = |m: &str| mlua::Error::runtime(m.to_string());
    let args: Vec<Value> = args.into_iter().collect();
    let (name, callback, flags, description) = match args.as_slice() {
        [Value::String(n), Value::Function(f)] => (n.to_string_lossy(), f.clone(), None, None),
        [Value::Table(t)] => {
            let mut name = None;
            let mut callback = None;
            let mut flags = None;
            let mut description = None;
            for pair in t.pairs::<String, Value>() {
                let (k, v) = pair?;
                match (k.as_str(), v) {
                    ("function_name", Value::String(s)) => name = Some(s.to_string_lossy()),
                    ("callback", Value::Function(f)) => callback = Some(f),
                    ("flags", Value::Table(f)) => flags = Some(f),
                    ("description", Value::String(s)) => description = Some(s.to_string_lossy()),
                    ("function_name" | "callback" | "flags" | "description", _) => {
                        return Err(bad(&format!(
                            "{k} argument given to redis.register_function has the wrong type"
                        )))
                    }
                    _ => return Err(bad("unknown argument given to redis.register_function")),
                }
            }
            let name = name
                .ok_or_else(|| bad("redis.register_function must get a function name argument"))?;
            let callback = callback
                .ok_or_else(|| bad("redis.register_function must get a callback argument"))?;
            (name, callback, flags, description)
        }
        _ => return Err(bad("wrong number of arguments to redis.register_function")),
    };
    if !valid_name(&name) {
        return Err(bad("Function names can only contain letters, numbers, or underscores(_) and must be at least one character long"));
    }
    let mut out = Vec::new();
    if let Some(flags) = flags {
        for f in flags.sequence_values::<String>() {
            let f = f?;
            if !FLAGS.contains(&f.as_str()) {
                return Err(bad("unknown flag given"));
            }
            out.push(f);
        }
    }
    Ok(Registered {
        name,
        callback,
        description,
        flags: out,
    })
}

/// The FUNCTION DUMP payload, version 1 (see `docs/server-format.md`):
/// `"STRATAFN" ‖ 0x01 ‖ (u32 LE length ‖ library code)* ‖ XXH3-64 LE of everything before`.
pub fn dump(reg: &Registry) -> Vec<u8> {
    let mut out = Vec::from(&DUMP_MAGIC[..]);
    out.push(DUMP_VERSION);
    for lib in reg.libraries.values() {
        out.extend_from_slice(&(lib.code.len() as u32).to_le_bytes());
        out.extend_from_slice(&lib.code);
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

const DUMP_MAGIC: &[u8; 8] = b"STRATAFN";
const DUMP_VERSION: u8 = 1;

/// The library codes in a FUNCTION DUMP payload; a payload that is not one (or is damaged)
/// is refused with redis' error.
pub fn undump(payload: &[u8]) -> Result<Vec<Bytes>, String> {
    let refuse = || "ERR payload version or checksum are wrong".to_string();
    let head = DUMP_MAGIC.len() + 1;
    if payload.len() < head + 8
        || &payload[..DUMP_MAGIC.len()] != DUMP_MAGIC
        || payload[DUMP_MAGIC.len()] != DUMP_VERSION
    {
        return Err(refuse());
    }
    let (body, sum) = payload.split_at(payload.len() - 8);
    let sum = u64::from_le_bytes(sum.try_into().map_err(|_| refuse())?);
    if xxhash_rust::xxh3::xxh3_64(body) != sum {
        return Err(refuse());
    }
    let mut rest = &body[head..];
    let mut codes = Vec::new();
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(refuse());
        };
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return Err(refuse());
        }
        codes.push(Bytes::copy_from_slice(&tail[..len]));
        rest = &tail[len..];
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox() -> Sandbox {
        super::super::library::new_interpreter().unwrap()
    }

    fn code(s: &str) -> Bytes {
        Bytes::from(s.to_string())
    }

    #[test]
    fn shebangs_are_parsed_as_redis_does() {
        for (text, expect) in [
            ("#!lua name=mylib\nx", Ok("mylib")),
            ("#!LUA name=a_1 \n", Ok("a_1")),
            ("#!lua\n", Err("Library name was not given")),
            ("#!py name=x\n", Err("Engine 'py' not found")),
            (
                "#!lua name=x foo=bar\n",
                Err("Invalid metadata value given: foo=bar"),
            ),
            ("#!lua name=a-b\n", Err("Library names can only contain")),
            ("return 1", Err("Missing library metadata")),
        ] {
            match (parse_shebang(text.as_bytes()), expect) {
                (Ok((name, _)), Ok(n)) => assert_eq!(name, n, "{text}"),
                (Err(e), Err(m)) => assert!(e.contains(m), "{text}: {e}"),
                (got, want) => panic!("{text}: {:?} vs {want:?}", got.map(|g| g.0)),
            }
        }
    }

    #[test]
    fn a_library_registers_functions_with_flags_and_cannot_call_redis_while_loading() {
        let sb = sandbox();
        let l = load(
            &sb,
            &code(
                "#!lua name=lib\n\
                 redis.register_function('a', function(keys, args) return args[1] end)\n\
                 redis.register_function{function_name='b', callback=function() return 2 end, \
                 flags={'no-writes'}, description='two'}",
            ),
        )
        .unwrap();
        let d = l.describe(&code(""));
        assert_eq!(d.name, "lib");
        assert_eq!(d.functions[1].flags, vec!["no-writes".to_string()]);
        assert_eq!(d.functions[1].description.as_deref(), Some("two"));
        let v: i64 = l.functions[1].callback.call(()).unwrap();
        assert_eq!(v, 2);
        for (bad, expect) in [
            ("#!lua name=l\nredis.call('SET', 'a', 'b')", "Error registering functions"),
            ("#!lua name=l\nlocal x = 1", "No functions registered"),
            ("#!lua name=l\nx = 1", "readonly table"),
            (
                "#!lua name=l\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)",
                "already exists in the library",
            ),
            (
                "#!lua name=l\nredis.register_function{function_name='f', callback=function() end, flags={'bogus'}}",
                "unknown flag given",
            ),
            ("#!lua name=l\nredis.register_function('f-g', function() end)", "Function names"),
            ("#!lua name=l\nthis is not lua", "Error compiling function"),
        ] {
            let e = load(&sb, &code(bad)).err().unwrap();
            assert!(e.contains(expect), "{bad}: {e}");
        }
        // After loading, the functions see the full `redis` (the load-time one is gone).
        let l = load(
            &sb,
            &code("#!lua name=l2\nredis.register_function('f', function() return type(redis.call) end)"),
        )
        .unwrap();
        let t: String = l.functions[0].callback.call(()).unwrap();
        assert_eq!(t, "function");
    }

    #[test]
    fn the_registry_keeps_function_names_unique() {
        let sb = sandbox();
        let lib = |n: &str, f: &str| {
            load(
                &sb,
                &code(&format!(
                    "#!lua name={n}\nredis.register_function('{f}', function() end)"
                )),
            )
            .unwrap()
            .describe(&code(n))
        };
        let mut r = Registry::default();
        r.insert(lib("a", "f"), false).unwrap();
        assert!(r
            .insert(lib("a", "g"), false)
            .unwrap_err()
            .contains("already exists"));
        assert!(r
            .insert(lib("b", "f"), false)
            .unwrap_err()
            .contains("Function f already exists"));
        r.insert(lib("a", "g"), true).unwrap();
        r.insert(lib("b", "f"), false).unwrap();
        assert_eq!(r.function_count(), 2);
        assert!(r.remove("a"));
        assert_eq!(r.function_count(), 1);
        let payload = dump(&r);
        assert_eq!(undump(&payload).unwrap(), vec![code("b")]);
        for cut in [0, 5, 9, payload.len() - 1] {
            assert!(undump(&payload[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = payload.clone();
        flipped[10] ^= 1;
        assert!(undump(&flipped).is_err());
    }
}
