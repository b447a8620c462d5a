//! Lua scripting (EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT): the script cache, a pool of Lua
//! 5.1 interpreters (mlua with a vendored Lua, so nothing is installed by hand), the `redis`
//! library a script sees, and running one script against a segment's [`Ctx`].
//!
//! A script runs in the executor as a segment of its own holding the stripes of the keys it
//! declares (`KEYS`; `commands::CommandSpec::lock_scope`); its `redis.call`s run through the
//! segment's pending batch, so they read each other's writes, and the whole script commits as
//! one engine write — atomic and isolated like an EXEC. A `redis.call` of a key the script did
//! not declare, while it holds only its declared stripes, stops the script
//! ([`Pending::needs_every_stripe`]); the executor reruns it holding every stripe (a script's
//! only effects are its pending writes, so a rerun is safe).
//!
//! The environment follows redis 7: Lua 5.1 with the base, table, string and math libraries
//! plus `bit`, `cjson`, `cmsgpack` and `struct`; no `os`, `io`, `loadfile`, `dofile` or `print`; reading or creating
//! an undeclared global is an error (globals protected); `KEYS` and `ARGV`; `redis.call`,
//! `redis.pcall`, `redis.error_reply`, `redis.status_reply`, `redis.sha1hex`, `redis.log` and
//! its levels, `redis.setresp` (RESP2 and RESP3 conversions, `convert`). Each thread has its own interpreter, which keeps
//! the functions it compiled, by SHA1; the script texts live in [`Scripts`], shared by all.
//! Depends on `commands` (dispatch, the table), `resp`, mlua; never on the network layer.

pub mod busy;
mod cmsgpack;
mod convert;
pub mod functions;
mod library;
mod lua_struct;

use std::cell::RefCell;
use std::collections::HashMap;

use bytes::Bytes;
use mlua::{Function, Lua, MultiValue, Table, Value};
use parking_lot::RwLock;

use crate::commands::{self, Ctx, LockScope, Request};
use crate::fasthash::FastHash;
use crate::resp::Reply;

pub use convert::{lua_to_reply, reply_to_lua};

/// The error EVALSHA answers for an unknown SHA1.
pub const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// The server's scripts: their texts by SHA1 (what SCRIPT LOAD and EVAL add, SCRIPT FLUSH
/// clears). Each thread that runs scripts has an interpreter of its own ([`VM`]), which
/// compiles a script the first time it runs it there.
#[derive(Default)]
pub struct Scripts {
    texts: RwLock<HashMap<String, Bytes, FastHash>>,
    /// Bumped by SCRIPT FLUSH: an interpreter compiled under an older generation drops its
    /// functions before its next script.
    generation: std::sync::atomic::AtomicU64,
}

thread_local! {
    /// This thread's interpreter (event-loop and engine-pool threads run scripts; a Lua state
    /// never moves between threads, so it needs no lock).
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// One interpreter and the functions it compiled.
struct Vm {
    sb: library::Sandbox,
    /// Scripts compiled here, by SHA1, under [`Scripts`] generation `generation`.
    compiled: HashMap<String, Function, FastHash>,
    generation: u64,
    /// Function libraries loaded here (their functions by name), by library name, under
    /// [`functions::Functions`] generation `fn_generation`.
    /// Each entry keeps the registry's `Library` it was loaded from: a lookup made before a
    /// change and a cache filled after it cannot pair an old library with a new generation.
    libraries: HashMap<String, LoadedLibrary, FastHash>,
    fn_generation: u64,
    /// The last script's `KEYS` and `ARGV` are still set in the environment: the next script
    /// replaces them, and a function (which reads globals through to the environment) must
    /// not see another client's, so [`Vm::clear_script_args`] clears them before one runs.
    script_args: bool,
}

impl Vm {
    /// Clears the last script's `KEYS` and `ARGV`, if set (before a function library loads or
    /// a function runs).
    fn clear_script_args(&mut self) {
        if std::mem::take(&mut self.script_args) {
            let _ = set_keys_argv(&self.sb.lua, &self.sb.env, None);
        }
    }
}

/// A library loaded into one interpreter: the registry entry it came from, its functions.
type LoadedLibrary = (
    std::sync::Arc<functions::Library>,
    HashMap<String, Function>,
);

/// Runs `f` with this thread's interpreter (created on first use), its caches dropped when
/// SCRIPT FLUSH or a FUNCTION change made them stale.
fn with_vm(shared: &crate::server::Shared, f: impl FnOnce(&mut Vm) -> Reply) -> Reply {
    use std::sync::atomic::Ordering;
    let generation = shared.scripts.generation.load(Ordering::SeqCst);
    let fn_generation = shared.functions.generation();
    VM.with(|slot| {
        // Scripts cannot call EVAL or FCALL (`noscript`), so the interpreter is never
        // borrowed twice.
        let Ok(mut slot) = slot.try_borrow_mut() else {
            return Reply::error("ERR a script is already running on this thread");
        };
        if slot.is_none() {
            let started = library::new_interpreter().and_then(|sb| {
                let every = mlua::HookTriggers::new().every_nth_instruction(busy::HOOK_EVERY);
                // Global, not per thread: a coroutine a script creates inherits it (a thread
                // hook switches itself off in a coroutine, which could then loop forever).
                sb.lua.set_global_hook(every, |_, _| busy::check())?;
                Ok(sb)
            });
            match started {
                Ok(sb) => {
                    *slot = Some(Vm {
                        sb,
                        compiled: HashMap::default(),
                        generation,
                        libraries: HashMap::default(),
                        fn_generation,
                        script_args: false,
                    })
                }
                Err(e) => return Reply::error(format!("ERR cannot start Lua: {e}")),
            }
        }
        let Some(vm) = slot.as_mut() else {
            return Reply::error("ERR cannot start Lua");
        };
        if vm.generation != generation {
            vm.compiled.clear();
            vm.generation = generation;
        }
        if vm.fn_generation != fn_generation {
            vm.libraries.clear();
            vm.fn_generation = fn_generation;
        }
        f(vm)
    })
}

/// A script's name as a client gives it to EVALSHA or SCRIPT EXISTS, in lowercase, kept on
/// the stack (a lookup per EVALSHA allocates nothing).
pub struct Sha([u8; 40]);

impl Sha {
    /// `name` in lowercase, if it can name a script (40 hex digits, any case).
    pub fn parse(name: &[u8]) -> Option<Sha> {
        let mut out = [0u8; 40];
        if name.len() != out.len() || !name.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        for (o, c) in out.iter_mut().zip(name) {
            *o = c.to_ascii_lowercase();
        }
        Some(Sha(out))
    }

    pub fn as_str(&self) -> &str {
        // 40 ASCII hex digits (`parse`).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The lowercase hex SHA1 of `body` (how scripts are named).
pub fn sha1_hex(body: &[u8]) -> String {
    use sha1::Digest;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let d = sha1::Sha1::digest(body);
    let mut out = String::with_capacity(2 * d.len());
    for b in d {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

impl Scripts {
    /// Caches `body` under its SHA1 `sha` (SCRIPT LOAD and EVAL, once it compiled); a script
    /// cached before costs only a shared lock.
    pub fn load_as(&self, sha: &str, body: &Bytes) {
        if self.texts.read().contains_key(sha) {
            return;
        }
        self.texts
            .write()
            .entry(sha.to_string())
            .or_insert_with(|| body.clone());
    }

    /// The text of the script named `sha`.
    pub fn get(&self, sha: &Sha) -> Option<Bytes> {
        self.texts.read().get(sha.as_str()).cloned()
    }

    /// Whether a script is named `sha` (any case).
    pub fn exists(&self, sha: &[u8]) -> bool {
        Sha::parse(sha).is_some_and(|sha| self.texts.read().contains_key(sha.as_str()))
    }

    /// Forgets every script (SCRIPT FLUSH).
    pub fn flush(&self) {
        self.texts.write().clear();
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many scripts are cached.
    pub fn len(&self) -> usize {
        self.texts.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Runs the script `body` (named `sha`) with `keys` and `args` against `ctx` and returns its
/// reply. `read_only` (EVAL_RO, EVALSHA_RO) refuses write commands.
pub fn run(
    ctx: &mut Ctx<'_>,
    sha: &str,
    body: &Bytes,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
) -> Reply {
    run_with(ctx, sha, || Some(body.clone()), keys, args, read_only)
}

/// Runs the cached script named `sha` (EVALSHA, EVALSHA_RO), as [`run`]; `NOSCRIPT` if no
/// script has that name. A script this thread compiled under the current [`Scripts`]
/// generation is still cached (SCRIPT FLUSH starts a new one), so only the first run on a
/// thread looks its text up.
pub fn run_cached(
    ctx: &mut Ctx<'_>,
    sha: &Sha,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
) -> Reply {
    let shared = ctx.shared;
    run_with(
        ctx,
        sha.as_str(),
        || shared.scripts.get(sha),
        keys,
        args,
        read_only,
    )
}

/// Compiles script `sha` on this thread's interpreter unless it is there (its text from
/// `text`; `NOSCRIPT` if that has none), then runs it.
fn run_with(
    ctx: &mut Ctx<'_>,
    sha: &str,
    text: impl FnOnce() -> Option<Bytes>,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
) -> Reply {
    with_vm(ctx.shared, |vm| {
        if !vm.compiled.contains_key(sha) {
            let Some(body) = text() else {
                return Reply::error(NOSCRIPT);
            };
            if let Err(e) = compiled(vm, sha, &body) {
                return e;
            }
        }
        run_in(vm, ctx, sha, keys, args, read_only)
    })
}

/// Runs the script `sha`, compiled into `vm` already.
fn run_in(
    vm: &mut Vm,
    ctx: &mut Ctx<'_>,
    sha: &str,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
) -> Reply {
    // Borrowed, not cloned: a clone of a `Function` is a registry reference made and freed.
    let Vm {
        sb,
        compiled,
        script_args,
        ..
    } = vm;
    let Some(f) = compiled.get(sha) else {
        return Reply::error("ERR the script was not compiled");
    };
    // Left set afterwards (`Vm::script_args`): clearing them would cost another protected
    // call per script.
    *script_args = true;
    if let Err(e) = set_keys_argv(&sb.lua, &sb.env, Some((keys, args))) {
        return Reply::error(format!("ERR {}", one_line(&e.to_string())));
    }
    call(ctx, f, (), keys, read_only, sha)
}

/// Sets the script environment `env`'s `KEYS` and `ARGV` to fresh arrays of `keys` and `args`
/// (as strings), or both to nil for `None`.
///
/// Small lists (the common case: a few keys and arguments) are built on the Lua stack without
/// a protected call, as mlua itself pushes strings and builds tables when the state has no
/// memory limit (ours has none): a protected call costs two C closures and a `lua_pcall`, and
/// their garbage, about a tenth of a short script's time. Larger ones take one protected call.
fn set_keys_argv(lua: &Lua, env: &Table, items: Option<(&[Bytes], &[Bytes])>) -> mlua::Result<()> {
    use mlua::ffi;
    let lists = items.map(|(k, a)| [(&b"KEYS"[..], k), (&b"ARGV"[..], a)]);
    let (count, bytes) = lists
        .iter()
        .flatten()
        .fold((0usize, 0usize), |(n, b), (_, l)| {
            (n + l.len(), b + l.iter().map(Bytes::len).sum::<usize>())
        });
    if count >= std::os::raw::c_int::MAX as usize {
        return Err(mlua::Error::runtime("too many keys or arguments"));
    }
    let fill = |state: *mut mlua::lua_State, env_at: std::os::raw::c_int| {
        // SAFETY (for the callers): `env` is at `env_at` and three slots are free above the
        // top (a name, a table, an item).
        unsafe {
            match &lists {
                Some(lists) => {
                    for (name, list) in lists {
                        ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
                        push_array(state, list);
                        ffi::lua_rawset(state, env_at);
                    }
                }
                None => {
                    for name in [&b"KEYS"[..], b"ARGV"] {
                        ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
                        ffi::lua_pushnil(state);
                        ffi::lua_rawset(state, env_at);
                    }
                }
            }
        }
    };
    if count <= UNPROTECTED_ITEMS && bytes <= UNPROTECTED_BYTES {
        return lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: unprotected, a Lua error here would escape every `pcall`. None can be
            // raised: allocations do not fail (no memory limit is set, and mlua's allocator
            // aborts the process on an allocation failure, as Rust does), the sizes are far
            // below Lua's limits (`UNPROTECTED_*`), `rawset` calls no metamethod, and a
            // collection step runs no script code (`newproxy` is removed, so no userdata a
            // script made has a `__gc`). The stack is checked first and left as it was.
            unsafe {
                let top = ffi::lua_gettop(state);
                if ffi::lua_checkstack(state, 4) == 0 {
                    return Err(mlua::Error::StackError);
                }
                let pushed = raw.push(env);
                if pushed.is_ok() {
                    fill(state, top + 1);
                }
                ffi::lua_settop(state, top);
                pushed
            }
        });
    }
    // SAFETY: `exec_raw` runs the closure as a protected C function with `env` at stack index
    // 1 and room for three more values. A Lua error (out of memory) unwinds through the
    // closure, which holds only borrowed slices and plain integers: nothing is left undropped.
    unsafe { lua.exec_raw::<()>(env, |state| fill(state, 1)) }
}

/// How many keys and arguments, and how many bytes of them, [`set_keys_argv`] sets without a
/// protected call.
const UNPROTECTED_ITEMS: usize = 1024;
const UNPROTECTED_BYTES: usize = 1 << 20;

/// Lua arrays of `keys` and of `args`, as strings (a function's two arguments), made in one
/// protected call (see [`set_keys_argv`]).
fn arrays(lua: &Lua, keys: &[Bytes], args: &[Bytes]) -> mlua::Result<(Table, Table)> {
    if keys.len().max(args.len()) >= std::os::raw::c_int::MAX as usize {
        return Err(mlua::Error::runtime("too many keys or arguments"));
    }
    // SAFETY: as in `set_keys_argv`: two tables are left on the stack as the results, with at
    // most one item above them while each is filled.
    unsafe {
        lua.exec_raw::<(Table, Table)>((), |state| {
            push_array(state, keys);
            push_array(state, args);
        })
    }
}

/// Pushes a new array of `list`'s items, as strings, onto `state`'s stack (two slots: the
/// table and one item at a time).
///
/// # Safety
/// Only inside a protected call (`exec_raw`) with two free stack slots, `list` shorter than
/// `c_int::MAX` (the callers check).
unsafe fn push_array(state: *mut mlua::lua_State, list: &[Bytes]) {
    use mlua::ffi;
    ffi::lua_createtable(state, list.len() as std::os::raw::c_int, 0);
    for (i, item) in list.iter().enumerate() {
        ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
        ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
    }
}

/// Calls the script or function `f` with `fargs`, its `redis.call`s running against `ctx`
/// (`declared` keys, `read_only`), and converts its result; `name` labels its errors.
fn call(
    ctx: &mut Ctx<'_>,
    f: &Function,
    fargs: impl mlua::IntoLuaMulti,
    declared: &[Bytes],
    read_only: bool,
    name: &str,
) -> Reply {
    let limit = ctx.shared.limits.lua_time_limit();
    let shared = ctx.shared;
    let watched = busy::watch(
        &shared.busy,
        name,
        limit,
        ctx.pending.inline,
        ctx.pending.command_started,
    );
    set_resp3(false);
    let running = Running {
        ctx: (ctx as *mut Ctx<'_>).cast::<Ctx<'static>>(),
        declared: declared as *const [Bytes],
        read_only,
    };
    let out = {
        let _on = RunningGuard::set(running);
        f.call::<Value>(fargs)
    };
    if watched.moved() {
        // Ran too long for an event loop: the executor reruns the script on the pool.
        ctx.pending.would_block.set(true);
    }
    match out {
        Ok(v) => lua_to_reply(&v, RESP3.with(|c| c.get())),
        Err(e) => script_error(&e, name),
    }
}

/// What `redis.call` needs of the script running on this thread: its segment's context, its
/// declared keys, whether it is read-only. Set by [`run_in`] for exactly the duration of one
/// script call ([`RunningGuard`]), on the thread that runs it.
#[derive(Clone, Copy)]
struct Running {
    ctx: *mut Ctx<'static>,
    declared: *const [Bytes],
    read_only: bool,
}

thread_local! {
    static RUNNING: std::cell::Cell<Option<Running>> = const { std::cell::Cell::new(None) };
}

thread_local! {
    /// The running script called `redis.setresp(3)`: `redis.call` converts RESP3 replies.
    static RESP3: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `redis.setresp(3)` (`true`) or `redis.setresp(2)` for the script running on this thread.
pub(crate) fn set_resp3(on: bool) {
    RESP3.with(|c| c.set(on));
}

/// Whether a script is running on this thread (its `redis.call`s are not answered `BUSY`).
pub fn in_script() -> bool {
    RUNNING.with(|c| c.get().is_some())
}

/// Sets [`RUNNING`] and clears it when dropped (also when the script call unwinds).
struct RunningGuard;

impl RunningGuard {
    fn set(r: Running) -> RunningGuard {
        RUNNING.with(|c| c.set(Some(r)));
        RunningGuard
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        RUNNING.with(|c| c.set(None));
    }
}

/// Runs the function `name` with `keys` and `args` (FCALL; FCALL_RO with `read_only`).
pub fn fcall(
    ctx: &mut Ctx<'_>,
    name: &[u8],
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
) -> Reply {
    let shared = ctx.shared;
    let Some((lib, info)) = shared.functions.find(name) else {
        return Reply::error("ERR Function not found");
    };
    let no_writes = info.flags.iter().any(|f| f == "no-writes");
    if read_only && !no_writes {
        return Reply::error("ERR Can not execute a script with write flag using *_ro command.");
    }
    let inline = ctx.pending.inline;
    with_vm(shared, |vm| {
        vm.clear_script_args();
        let current = vm
            .libraries
            .get(&lib.name)
            .is_some_and(|(from, _)| std::sync::Arc::ptr_eq(from, &lib));
        if !current {
            let limit = shared.limits.lua_time_limit();
            let (loaded, moved) = {
                let watched = busy::watch(&shared.busy, &lib.name, limit, inline, None);
                let loaded = functions::load(&vm.sb, &lib.code);
                (loaded, watched.moved())
            };
            if moved {
                // Too long for an event loop: the executor reruns the call on the pool.
                ctx.pending.would_block.set(true);
                return Reply::error("ERR the function is rerun on the engine pool");
            }
            match loaded {
                Ok(loaded) => {
                    let by_name = loaded.functions.into_iter().map(|f| (f.name, f.callback));
                    vm.libraries
                        .insert(lib.name.clone(), (lib.clone(), by_name.collect()));
                }
                Err(e) => return Reply::error(e),
            }
        }
        let Some(f) = vm
            .libraries
            .get(&lib.name)
            .and_then(|(_, fs)| fs.get(&info.name))
            .cloned()
        else {
            return Reply::error("ERR Function not found");
        };
        match arrays(&vm.sb.lua, keys, args) {
            Ok(t) => call(ctx, &f, t, keys, read_only || no_writes, &info.name),
            Err(e) => Reply::error(format!("ERR {}", one_line(&e.to_string()))),
        }
    })
}

/// Compiles the script `body` (named `sha`) on this thread's interpreter, keeping it there:
/// SCRIPT LOAD refuses a script that does not compile, as redis does.
pub fn compile(shared: &crate::server::Shared, sha: &str, body: &Bytes) -> Result<(), Reply> {
    match with_vm(shared, |vm| match compiled(vm, sha, body) {
        Ok(_) => Reply::Ok,
        Err(e) => e,
    }) {
        Reply::Error(e) => Err(Reply::Error(e)),
        _ => Ok(()),
    }
}

/// Compiles script `sha` from `body` into `vm.compiled`, unless it is there already.
fn compiled(vm: &mut Vm, sha: &str, body: &Bytes) -> Result<(), Reply> {
    if vm.compiled.contains_key(sha) {
        return Ok(());
    }
    match vm
        .sb
        .lua
        .load(&body[..])
        .set_name("@user_script")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .into_function()
    {
        Ok(f) => {
            vm.compiled.insert(sha.to_string(), f);
            Ok(())
        }
        Err(e) => Err(Reply::error(format!(
            "ERR Error compiling script (new function): {}",
            one_line(&e.to_string())
        ))),
    }
}

/// Checks a function library's code and lists its functions, on this thread's interpreter
/// (FUNCTION LOAD and RESTORE, and the libraries read back at start-up).
pub fn compile_library(
    shared: &crate::server::Shared,
    code: &Bytes,
) -> Result<functions::Library, String> {
    let mut out = None;
    let limit = shared.limits.lua_time_limit();
    let _watched = busy::watch(&shared.busy, "FUNCTION LOAD", limit, false, None);
    let vm = with_vm(shared, |vm| {
        vm.clear_script_args();
        out = Some(functions::load(&vm.sb, code).map(|l| l.describe(code)));
        Reply::Ok
    });
    match (out, vm) {
        (Some(out), _) => out,
        (None, Reply::Error(e)) => Err(e.into_owned()),
        (None, _) => Err("ERR cannot start Lua".into()),
    }
}

/// `redis.call` (`raise`) and `redis.pcall`: created once per interpreter (`library`), they
/// find the running script's context in [`RUNNING`].
pub(crate) fn redis_call(lua: &Lua, argv: MultiValue, raise: bool) -> mlua::Result<Value> {
    let Some(r) = RUNNING.with(|c| c.get()) else {
        return Err(mlua::Error::runtime(
            "redis.call and redis.pcall work only while a script runs",
        ));
    };
    // SAFETY: `r` was set by `run_in` from a `&mut Ctx` and a `&[Bytes]` that outlive the
    // script call it makes on this thread, and is cleared when that call returns or unwinds
    // (`RunningGuard`); `run_in` does not touch the context while the script runs, and a
    // script cannot start another script (EVAL is `noscript`), so this is the only live
    // reference to the context, for the duration of this callback.
    let (ctx, declared) = unsafe { (&mut *r.ctx, &*r.declared) };
    match call_command(ctx, argv, declared, r.read_only) {
        Err(e) if raise => Err(mlua::Error::external(ScriptError(e))),
        Err(e) => convert::error_table(lua, &e),
        Ok(reply) => reply_to_lua(lua, &reply, RESP3.with(|c| c.get())),
    }
}

/// An error reply raised by `redis.call`, carried through Lua as an external error.
#[derive(Debug)]
struct ScriptError(String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

/// The reply for a script that raised `e`: a `redis.call` error keeps its code and text (as
/// redis 7 does), anything else is `ERR` with Lua's message and where the script was.
fn script_error(e: &mlua::Error, sha: &str) -> Reply {
    if e.to_string().contains(busy::KILLED) {
        return Reply::error(busy::KILLED);
    }
    let mut cur = e;
    loop {
        match cur {
            mlua::Error::CallbackError { cause, .. } => cur = cause,
            mlua::Error::ExternalError(inner) => {
                if let Some(se) = inner.downcast_ref::<ScriptError>() {
                    return Reply::error(format!("{} script: {sha}", se.0));
                }
                break;
            }
            mlua::Error::RuntimeError(msg) => {
                // `error({err=...})` raises a table: its text is the error.
                return Reply::error(format!(
                    "ERR user_script:{} script: {sha}",
                    one_line(msg.trim_start_matches("[string \"user_script\"]:"))
                        .trim_start_matches("user_script:")
                ));
            }
            _ => break,
        }
    }
    Reply::error(format!("ERR {} script: {sha}", one_line(&e.to_string())))
}

fn one_line(s: &str) -> String {
    s.lines().next().unwrap_or("").replace('\r', " ")
}

/// `redis.call(name, args...)`: the command's reply, or its error text (`Err`) — an unknown
/// command, a wrong arity, a command scripts may not run, a write from a read-only script, or
/// the error reply the command itself gave.
fn call_command(
    ctx: &mut Ctx<'_>,
    argv: MultiValue,
    declared: &[Bytes],
    read_only: bool,
) -> Result<Reply, String> {
    let mut args: Vec<Bytes> = Vec::with_capacity(argv.len());
    for v in argv {
        match v {
            Value::String(s) => args.push(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(i) => args.push(Bytes::from(i.to_string())),
            Value::Number(n) => args.push(Bytes::from(format_lua_number(n))),
            _ => {
                return Err(
                    "ERR Lua redis lib command arguments must be strings or integers".into(),
                )
            }
        }
    }
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call".into());
    }
    let req = Request::new(args);
    let Some((_, spec)) = req.command() else {
        return Err("ERR Unknown Redis command called from script".into());
    };
    if !spec.arity_accepts(req.args().len()) {
        return Err("ERR Wrong number of args calling Redis command from script".into());
    }
    // The containers' subcommands are all `noscript` in redis 7 (the table keeps flags per
    // command, not per subcommand).
    let noscript_container = matches!(spec.name, "config" | "client" | "script" | "function");
    if spec.flags.contains(&"noscript") || noscript_container {
        return Err("ERR This Redis command is not allowed from script".into());
    }
    if read_only && spec.writes() {
        return Err("ERR Write commands are not allowed from read-only scripts.".into());
    }
    busy::before_command(spec.writes())?;
    // Isolation: a key the script did not declare needs every stripe (see the module doc).
    if !ctx.pending.every_stripe && spec.engine {
        let undeclared = match spec.key_scope(req.args()) {
            LockScope::None => false,
            LockScope::All => true,
            LockScope::Keys(k) => k.iter().any(|k| !declared.contains(k)),
        };
        if undeclared {
            ctx.pending.needs_every_stripe.set(true);
            return Err("ERR the script is rerun holding every key lock".into());
        }
    }
    // A script's commands answer in the script's protocol (RESP2 unless it called
    // `redis.setresp(3)`), not its caller's: ZRANGE WITHSCORES gives a flat array.
    let script_protocol = if RESP3.with(|c| c.get()) {
        crate::resp::Protocol::Resp3
    } else {
        crate::resp::Protocol::Resp2
    };
    let caller_protocol = std::mem::replace(&mut ctx.session.protocol, script_protocol);
    let reply = commands::dispatch(ctx, &req);
    ctx.session.protocol = caller_protocol;
    match reply {
        Reply::Error(e) => Err(e.into_owned()),
        r => Ok(r),
    }
}

/// A Lua number as redis passes it to a command: integers without a fraction, others with
/// Lua's `%.17g`.
fn format_lua_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e17 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}
