//! The command table and dispatch: name lookup (case-insensitive, once per request: see
//! [`Request`]), arity, authentication, then the handler. Handlers live in one file per command
//! group: [`strings`], [`keys`], [`expire`], [`connection`] (PING, HELLO, AUTH, CLIENT...),
//! [`server`] (INFO, CONFIG, SHUTDOWN, DBSIZE, FLUSH*, TIME, WAIT), [`introspection`] (COMMAND),
//! [`pubsub`] (SUBSCRIBE, PUBLISH, PUBSUB...), and
//! the data types: [`hashes`], [`lists`], [`sets`], [`zsets`], [`zsets_multi`], [`bitmaps`]
//! (their table is in `types_table`).
//!
//! Invariants: checks run in Redis's order — unknown command, then arity, then NOAUTH — so
//! clients see the same error Redis would give; a handler runs only with an argument count its
//! arity allows; handlers of commands marked `engine` may block (they run on the engine pool),
//! the others never touch the engine (they may run on the async threads). Handlers take no
//! locks and write nothing themselves: they read through [`Ctx`] (which sees the segment's
//! pending writes; both live in `context`) and add writes to [`Pending`]; the executor holds the stripes of every key
//! the table says a write command names ([`CommandSpec::lock_scope`]) and commits the
//! segment's writes before any reply is sent. So a write command's key positions in the table
//! must be right, or its atomicity is lost. Handlers never panic on client input.
//! Depends on `server::Shared`, `session`, `store`, `resp`, `commit_group` (a chained segment
//! reads its group's pending writes); must not depend on the network
//! layer (`connection`, `server::Server`).

pub mod bitmaps;
pub mod connection;
mod context;
pub mod errors;
pub mod expire;
pub mod functions;
pub mod hashes;
pub mod introspection;
pub mod keys;
pub mod lcs;
pub mod lists;
pub mod pubsub;
pub mod replication;
mod request;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod stream_groups;
pub mod stream_info;
pub mod stream_pending;
pub mod stream_read;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod zsets;
pub mod zsets_multi;

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::fasthash::FastHash;
use crate::resp::Reply;
use crate::stats::{Call, Outcome};

pub use context::{Ctx, Pending};
pub use request::Request;

/// A handler's result: `Err` carries an error reply, so `?` works on store errors.
pub type CmdResult = Result<Reply, Reply>;
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// One command's metadata (also what COMMAND INFO / DOCS report).
pub struct CommandSpec {
    /// Lowercase name.
    pub name: &'static str,
    /// Redis arity: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub acl: &'static [&'static str],
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub complexity: &'static str,
    /// Whether the handler calls the engine (and so must run on the engine pool).
    pub engine: bool,
    pub subcommands: &'static [&'static str],
    pub handler: Handler,
}

impl std::fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandSpec")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl CommandSpec {
    /// Whether `n` arguments (the name included) are an arity the command accepts.
    pub fn arity_accepts(&self, n: usize) -> bool {
        self.arity_ok(n)
    }

    fn arity_ok(&self, n: usize) -> bool {
        let n = n as i64;
        let a = i64::from(self.arity);
        if a >= 0 {
            n == a
        } else {
            n >= -a
        }
    }

    /// Whether it runs before authentication (HELLO, AUTH, QUIT).
    pub fn no_auth(&self) -> bool {
        self.flags.contains(&"no_auth")
    }

    /// Whether the command writes keys.
    pub fn writes(&self) -> bool {
        self.flags.contains(&"write")
    }

    /// EVAL, EVALSHA, FCALL and their read-only forms.
    pub fn runs_script(&self) -> bool {
        matches!(
            self.name,
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
        )
    }

    /// Whether running it may write (a write command, or a script that is not read-only):
    /// such a command does not run inline under `sync = always`, where its commit would wait
    /// for an fsync on the event loop.
    pub fn may_write(&self) -> bool {
        self.writes() || matches!(self.name, "eval" | "evalsha" | "fcall")
    }

    /// Commands that see the whole key range (scans, FLUSH*, INFO): they run in a segment of
    /// their own, after every earlier write of the batch is committed.
    pub fn barrier(&self) -> bool {
        matches!(
            self.name,
            "keys" | "scan" | "dbsize" | "flushdb" | "flushall" | "info"
        )
    }

    /// Whether [`CommandSpec::lock_scope`] can name stripes at all: the command writes, reads
    /// collection elements, or WATCHes keys (see `watch`: a key is registered under its
    /// stripe).
    fn may_lock(&self) -> bool {
        self.writes()
            || self.reads_elements()
            || matches!(self.name, "watch" | "function")
            || self.runs_script()
    }

    /// Commands that read the elements of collections (see `lock_scope`).
    fn reads_elements(&self) -> bool {
        matches!(
            self.group,
            "hash" | "list" | "set" | "sorted_set" | "stream"
        ) || self.name == "object"
    }

    /// Commands that run in a segment of their own: barriers, and every command that iterates
    /// collection elements (iterators read the engine, not a segment's pending writes; see
    /// `collections::access`) — the data-type commands other than the single-element ones of
    /// [`CommandSpec::inline_ok`], RENAME, COPY and OBJECT. Single-element commands read
    /// through the segment's pending elements, so a pipeline of them shares one engine write.
    pub fn alone(&self) -> bool {
        self.barrier()
            || self.group == "transactions"
            || (matches!(
                self.group,
                "hash" | "list" | "set" | "sorted_set" | "stream"
            ) && !self.inline_ok())
            || matches!(
                self.name,
                "rename" | "renamenx" | "copy" | "object" | "function"
            )
    }

    /// Whether the command may run inline on the connection's event-loop thread (see
    /// `connection`): its engine access is point lookups (answered from memory with
    /// `cache_only`, or reported as needing to wait) and writes through the segment batch.
    /// Strings, bitmaps, the keyspace commands that touch one record per key, the collection
    /// commands that read and write single elements, and the stream reads a consumer loop
    /// issues (XREAD, XREADGROUP: a short scan from an ID). An iterator inline is `cache_only`
    /// too: it reads tables already open and blocks already cached, and anything else ends it
    /// `Incomplete`, which reruns the segment on the pool.
    pub fn inline_ok(&self) -> bool {
        match self.group {
            "string" | "bitmap" => true,
            "hash" => matches!(
                self.name,
                "hset"
                    | "hmset"
                    | "hsetnx"
                    | "hget"
                    | "hmget"
                    | "hdel"
                    | "hlen"
                    | "hexists"
                    | "hincrby"
                    | "hincrbyfloat"
                    | "hstrlen"
            ),
            "list" => matches!(
                self.name,
                "lpush"
                    | "rpush"
                    | "lpushx"
                    | "rpushx"
                    | "lpop"
                    | "rpop"
                    | "llen"
                    | "lindex"
                    | "lset"
                    // Point reads of the ends; a wait registers without I/O.
                    | "blpop"
                    | "brpop"
            ),
            "set" => matches!(
                self.name,
                "sadd" | "srem" | "scard" | "sismember" | "smismember" | "smove"
            ),
            "sorted_set" => matches!(
                self.name,
                "zadd" | "zincrby" | "zcard" | "zscore" | "zmscore" | "zrem"
            ),
            // XACK reads and writes single pending entries; XADD iterates only to trim, XREAD
            // and XREADGROUP from an ID onwards (a consumer's new entries are the stream's
            // newest, in the memtable or cached blocks).
            "stream" => matches!(self.name, "xadd" | "xlen" | "xack" | "xread" | "xreadgroup"),
            "generic" => matches!(
                self.name,
                "del"
                    | "unlink"
                    | "exists"
                    | "touch"
                    | "type"
                    | "ttl"
                    | "pttl"
                    | "expire"
                    | "pexpire"
                    | "expireat"
                    | "pexpireat"
                    | "persist"
                    | "expiretime"
                    | "pexpiretime"
            ),
            // EXEC inline only when its queue could run inline (`executor::prepare_exec`).
            "transactions" => matches!(self.name, "watch" | "exec"),
            // A script inline reads through `cache_only` like a point command; one that scans
            // or needs I/O reruns on the pool (`Pending::would_block`).
            "scripting" => self.runs_script(),
            _ => false,
        }
    }

    /// The stripes a command must hold while it runs (see `locks`).
    ///
    /// Commands that read collection elements take their keys' stripes even when they only
    /// read: such a read is several engine reads (the metadata, then the elements), and the
    /// stripe keeps a writer of the same key from committing in between (see `locks`).
    /// Commands whose keys follow a `numkeys` argument name them here rather than in the table.
    pub fn lock_scope<'b>(&self, args: &'b [Bytes]) -> LockScope<'b> {
        if !self.may_lock() {
            return LockScope::None;
        }
        self.key_scope(args)
    }

    /// Every key the command names in `args` — the table's positions, or those after a
    /// `numkeys` argument — or `All` for a command whose keys the table does not place (KEYS,
    /// SCAN, FLUSHDB, ...); `None` with an arity it does not accept. What an EXEC locks of
    /// each queued command (`multi::isolation_scope`), and what a command that may lock locks.
    pub fn key_scope<'b>(&self, args: &'b [Bytes]) -> LockScope<'b> {
        if !self.arity_ok(args.len()) {
            return LockScope::None;
        }
        let numkeys = |at: usize| -> Vec<&'b Bytes> {
            let n = args
                .get(at)
                .and_then(|a| crate::numbers::parse_i64(a))
                .unwrap_or(0)
                .max(0) as usize;
            args.iter().skip(at + 1).take(n).collect()
        };
        match self.name {
            "sintercard" | "zunion" | "zinter" | "zdiff" | "zintercard" => {
                return LockScope::Keys(numkeys(1));
            }
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
                return LockScope::Keys(numkeys(2))
            }
            // The subcommands that change the libraries hold one stripe: they stage the
            // registry from the installed one (`commands::functions`).
            "function" => {
                let changes = args.get(1).is_some_and(|s| {
                    ["LOAD", "DELETE", "FLUSH", "RESTORE"]
                        .iter()
                        .any(|w| s.eq_ignore_ascii_case(w.as_bytes()))
                });
                return if changes {
                    LockScope::Keys(vec![&FUNCTIONS_LOCK])
                } else {
                    LockScope::None
                };
            }
            "xread" | "xreadgroup" => return LockScope::Keys(stream_read::stream_keys(args)),
            "zunionstore" | "zinterstore" | "zdiffstore" => {
                let mut k = numkeys(2);
                k.push(&args[1]);
                return LockScope::Keys(k);
            }
            _ => {}
        }
        if self.first_key == 0 {
            return LockScope::All;
        }
        LockScope::Keys(self.table_keys(args).collect())
    }

    /// The keys the command table places in `args` (`first_key`, `last_key`, `step`; none for
    /// a command without keys there or with the wrong arity).
    pub fn table_keys<'b>(&self, args: &'b [Bytes]) -> impl Iterator<Item = &'b Bytes> {
        let ok = self.first_key > 0 && self.arity_ok(args.len());
        let first = self.first_key.max(1) as usize;
        let last = if !ok {
            0
        } else if self.last_key < 0 {
            (args.len() as i64 + i64::from(self.last_key)) as usize
        } else {
            (self.last_key as usize).min(args.len() - 1)
        };
        let step = self.step.max(1) as usize;
        (first..=last).step_by(step).filter_map(|i| args.get(i))
    }
}

/// Which key stripes a command needs.
pub enum LockScope<'a> {
    None,
    Keys(Vec<&'a Bytes>),
    All,
}

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, ($f:expr, $l:expr, $s:expr), $acl:expr,
     $group:literal, $since:literal, $complexity:literal, $engine:expr, $handler:expr,
     $summary:literal) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $f,
            last_key: $l,
            step: $s,
            acl: $acl,
            group: $group,
            since: $since,
            summary: $summary,
            complexity: $complexity,
            engine: $engine,
            subcommands: &[],
            handler: $handler,
        }
    };
}

const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const RF: &[&str] = &["readonly", "fast"];
const R: &[&str] = &["readonly"];
const STR_W: &[&str] = &["@write", "@string", "@slow"];
const STR_WF: &[&str] = &["@write", "@string", "@fast"];
const STR_RF: &[&str] = &["@read", "@string", "@fast"];
const KS_WF: &[&str] = &["@keyspace", "@write", "@fast"];
const KS_W: &[&str] = &["@keyspace", "@write", "@slow"];
const KS_RF: &[&str] = &["@keyspace", "@read", "@fast"];
const KS_R: &[&str] = &["@keyspace", "@read", "@slow"];
const CONN: &[&str] = &["@fast", "@connection"];
const PS: &[&str] = &["pubsub", "noscript", "loading", "stale"];
const PS_ACL: &[&str] = &["@pubsub", "@slow"];

/// Every supported command.
pub static COMMANDS: &[CommandSpec] = &[
    // Strings.
    cmd!("get", 2, RF, (1, 1, 1), STR_RF, "string", "1.0.0", "O(1)", true, strings::get, "Returns the string value of a key."),
    cmd!("set", -3, W, (1, 1, 1), STR_W, "string", "1.0.0", "O(1)", true, strings::set, "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."),
    cmd!("setnx", 3, WF, (1, 1, 1), STR_WF, "string", "1.0.0", "O(1)", true, strings::setnx, "Set the string value of a key only when the key doesn't exist."),
    cmd!("setex", 4, W, (1, 1, 1), STR_W, "string", "2.0.0", "O(1)", true, strings::setex, "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."),
    cmd!("psetex", 4, W, (1, 1, 1), STR_W, "string", "2.6.0", "O(1)", true, strings::psetex, "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."),
    cmd!("getset", 3, WF, (1, 1, 1), STR_WF, "string", "1.0.0", "O(1)", true, strings::getset, "Returns the previous string value of a key after setting it to a new value."),
    cmd!("getdel", 2, &["write", "fast"], (1, 1, 1), STR_WF, "string", "6.2.0", "O(1)", true, strings::getdel, "Returns the string value of a key after deleting the key."),
    cmd!("getex", -2, &["write", "fast"], (1, 1, 1), STR_WF, "string", "6.2.0", "O(1)", true, strings::getex, "Returns the string value of a key after setting its expiration time."),
    cmd!("mget", -2, RF, (1, -1, 1), STR_RF, "string", "1.0.0", "O(N) where N is the number of keys to retrieve.", true, strings::mget, "Atomically returns the string values of one or more keys."),
    cmd!("mset", -3, W, (1, -1, 2), STR_W, "string", "1.0.1", "O(N) where N is the number of keys to set.", true, strings::mset, "Atomically creates or modifies the string values of one or more keys."),
    cmd!("msetnx", -3, W, (1, -1, 2), STR_W, "string", "1.0.1", "O(N) where N is the number of keys to set.", true, strings::msetnx, "Atomically modifies the string values of one or more keys only when all keys don't exist."),
    cmd!("incr", 2, WF, (1, 1, 1), STR_WF, "string", "1.0.0", "O(1)", true, strings::incr, "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
    cmd!("incrby", 3, WF, (1, 1, 1), STR_WF, "string", "1.0.0", "O(1)", true, strings::incrby, "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
    cmd!("decr", 2, WF, (1, 1, 1), STR_WF, "string", "1.0.0", "O(1)", true, strings::decr, "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
    cmd!("decrby", 3, WF, (1, 1, 1), STR_WF, "string", "1.0.0", "O(1)", true, strings::decrby, "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."),
    cmd!("incrbyfloat", 3, WF, (1, 1, 1), STR_WF, "string", "2.6.0", "O(1)", true, strings::incrbyfloat, "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
    cmd!("append", 3, WF, (1, 1, 1), STR_WF, "string", "2.0.0", "O(1)", true, strings::append, "Appends a string to the value of a key. Creates the key if it doesn't exist."),
    cmd!("strlen", 2, RF, (1, 1, 1), STR_RF, "string", "2.2.0", "O(1)", true, strings::strlen, "Returns the length of a string value."),
    cmd!("getrange", 4, R, (1, 1, 1), &["@read", "@string", "@slow"], "string", "2.4.0", "O(N) where N is the length of the returned string.", true, strings::getrange, "Returns a substring of the string stored at a key."),
    cmd!("setrange", 4, W, (1, 1, 1), STR_W, "string", "2.2.0", "O(1), not counting the time taken to copy the new string in place.", true, strings::setrange, "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."),
    // Keys.
    cmd!("del", -2, &["write"], (1, -1, 1), KS_W, "generic", "1.0.0", "O(N) where N is the number of keys that will be removed.", true, keys::del, "Deletes one or more keys."),
    cmd!("unlink", -2, &["write", "fast"], (1, -1, 1), KS_WF, "generic", "4.0.0", "O(1) for each key removed regardless of its size.", true, keys::del, "Asynchronously deletes one or more keys."),
    cmd!("exists", -2, RF, (1, -1, 1), KS_RF, "generic", "3.0.3", "O(N) where N is the number of keys to check.", true, keys::exists, "Determines whether one or more keys exist."),
    cmd!("touch", -2, RF, (1, -1, 1), KS_RF, "generic", "3.2.1", "O(N) where N is the number of keys that will be touched.", true, keys::exists, "Returns the number of existing keys out of those specified after updating the time they were last accessed (Strata keeps no access time: the count only)."),
    cmd!("randomkey", 1, R, (0, 0, 0), &["@keyspace", "@read", "@slow"], "generic", "1.0.0", "O(1)", true, keys::randomkey, "Returns a random key name from the database."),
    cmd!("type", 2, RF, (1, 1, 1), KS_RF, "generic", "1.0.0", "O(1)", true, keys::type_, "Determines the type of value stored at a key."),
    cmd!("rename", 3, &["write"], (1, 2, 1), KS_W, "generic", "1.0.0", "O(1)", true, keys::rename, "Renames a key and overwrites the destination."),
    cmd!("renamenx", 3, &["write"], (1, 2, 1), KS_W, "generic", "1.0.0", "O(1)", true, keys::renamenx, "Renames a key only when the target key name doesn't exist."),
    cmd!("copy", -3, &["write"], (1, 2, 1), KS_W, "generic", "6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", true, keys::copy, "Copies the value of a key to a new key."),
    cmd!("scan", -2, R, (0, 0, 0), KS_R, "generic", "2.8.0", "O(1) for every call. O(N) for a complete iteration.", true, keys::scan, "Iterates over the key names in the database."),
    cmd!("keys", 2, R, (0, 0, 0), &["@keyspace", "@read", "@slow", "@dangerous"], "generic", "1.0.0", "O(N) with N being the number of keys in the database.", true, keys::keys, "Returns all key names that match a pattern."),
    // Expiry.
    cmd!("expire", -3, &["write", "fast"], (1, 1, 1), KS_WF, "generic", "1.0.0", "O(1)", true, expire::expire, "Sets the expiration time of a key in seconds."),
    cmd!("pexpire", -3, &["write", "fast"], (1, 1, 1), KS_WF, "generic", "2.6.0", "O(1)", true, expire::pexpire, "Sets the expiration time of a key in milliseconds."),
    cmd!("expireat", -3, &["write", "fast"], (1, 1, 1), KS_WF, "generic", "1.2.0", "O(1)", true, expire::expireat, "Sets the expiration time of a key to a Unix timestamp."),
    cmd!("pexpireat", -3, &["write", "fast"], (1, 1, 1), KS_WF, "generic", "2.6.0", "O(1)", true, expire::pexpireat, "Sets the expiration time of a key to a Unix milliseconds timestamp."),
    cmd!("ttl", 2, RF, (1, 1, 1), KS_RF, "generic", "1.0.0", "O(1)", true, expire::ttl, "Returns the expiration time in seconds of a key."),
    cmd!("pttl", 2, RF, (1, 1, 1), KS_RF, "generic", "2.6.0", "O(1)", true, expire::pttl, "Returns the expiration time in milliseconds of a key."),
    cmd!("persist", 2, &["write", "fast"], (1, 1, 1), KS_WF, "generic", "2.2.0", "O(1)", true, expire::persist, "Removes the expiration time of a key."),
    // Server.
    cmd!("dbsize", 1, R, (0, 0, 0), &["@keyspace", "@read", "@fast"], "server", "1.0.0", "O(N) in Strata (a bounded scan of the key range).", true, server::dbsize, "Returns the number of keys in the database."),
    cmd!("flushdb", -1, &["write"], (0, 0, 0), &["@keyspace", "@write", "@slow", "@dangerous"], "server", "1.0.0", "O(1) in Strata (one range delete).", true, server::flushdb, "Remove all keys from the current database."),
    cmd!("flushall", -1, &["write"], (0, 0, 0), &["@keyspace", "@write", "@slow", "@dangerous"], "server", "1.0.0", "O(1) in Strata (one range delete).", true, server::flushdb, "Removes all keys from all databases."),
    cmd!("info", -1, &["loading", "stale"], (0, 0, 0), &["@slow", "@dangerous"], "server", "1.0.0", "O(1)", true, server::info, "Returns information and statistics about the server."),
    CommandSpec { subcommands: &["config|get", "config|set", "config|resetstat", "config|help"], ..cmd!("config", -2, &[], (0, 0, 0), &["@slow"], "server", "2.0.0", "Depends on subcommand.", false, server::config, "A container for server configuration commands.") },
    cmd!("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], (0, 0, 0), &["@admin", "@slow", "@dangerous"], "server", "1.0.0", "O(tables) in Strata: a checkpoint (hard links, shared capacity tables).", true, server::save, "Synchronously saves the database(s) to disk."),
    cmd!("bgsave", -1, &["admin", "noscript", "no_async_loading"], (0, 0, 0), &["@admin", "@slow", "@dangerous"], "server", "1.0.0", "O(1) to start; a checkpoint in the background.", true, server::bgsave, "Asynchronously saves the database(s) to disk."),
    cmd!("wait", 3, &["noscript"], (0, 0, 0), &["@slow", "@connection"], "generic", "3.0.0", "O(1)", false, server::wait, "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."),
    cmd!("role", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), &["@admin", "@fast", "@dangerous"], "server", "2.8.12", "O(1)", false, replication::role, "Returns the replication role."),
    cmd!("replicaof", 3, &["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), &["@admin", "@slow", "@dangerous"], "server", "5.0.0", "O(1) to answer; promoting rebuilds the fast tier from the log location.", true, replication::replicaof, "Configures a server as replica of another, or promotes it to a master."),
    cmd!("slaveof", 3, &["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), &["@admin", "@slow", "@dangerous"], "server", "1.0.0", "O(1) to answer; promoting rebuilds the fast tier from the log location.", true, replication::replicaof, "Sets a Redis server as a replica of another, or promotes it to being a master."),
    cmd!("lastsave", 1, &["loading", "stale", "fast"], (0, 0, 0), &["@admin", "@fast", "@dangerous"], "server", "1.0.0", "O(1)", false, server::lastsave, "Returns the Unix timestamp of the last successful save to disk."),
    cmd!("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], (0, 0, 0), &["@admin", "@slow", "@dangerous"], "server", "1.0.0", "O(1)", false, server::shutdown, "Synchronously saves the database(s) to disk and shuts down the Redis server."),
    // Connection.
    cmd!("ping", -1, &["fast"], (0, 0, 0), CONN, "connection", "1.0.0", "O(1)", false, connection::ping, "Returns the server's liveliness response."),
    cmd!("echo", 2, &["fast"], (0, 0, 0), CONN, "connection", "1.0.0", "O(1)", false, connection::echo, "Returns the given string."),
    cmd!("hello", -1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], (0, 0, 0), CONN, "connection", "6.0.0", "O(1)", false, connection::hello, "Handshakes with the Redis server."),
    cmd!("auth", -2, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], (0, 0, 0), CONN, "connection", "1.0.0", "O(N) where N is the number of passwords defined for the user", false, connection::auth, "Authenticates the connection."),
    cmd!("select", 2, &["loading", "stale", "fast"], (0, 0, 0), CONN, "connection", "1.0.0", "O(1)", false, connection::select, "Changes the selected database."),
    cmd!("quit", -1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], (0, 0, 0), CONN, "connection", "1.0.0", "O(1)", false, connection::quit, "Closes the connection."),
    CommandSpec { subcommands: &["client|id", "client|getname", "client|setname", "client|setinfo", "client|list", "client|info", "client|kill", "client|unblock", "client|help"], ..cmd!("client", -2, &[], (0, 0, 0), &["@slow"], "connection", "2.4.0", "Depends on subcommand.", false, connection::client, "A container for client connection commands.") },
    cmd!("reset", 1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], (0, 0, 0), CONN, "connection", "6.2.0", "O(1)", false, connection::reset, "Resets the connection."),
    // Pub/Sub.
    cmd!("subscribe", -2, PS, (0, 0, 0), PS_ACL, "pubsub", "2.0.0", "O(N) where N is the number of channels to subscribe to.", false, pubsub::subscribe, "Listens for messages published to channels."),
    cmd!("unsubscribe", -1, PS, (0, 0, 0), PS_ACL, "pubsub", "2.0.0", "O(N) where N is the number of channels to unsubscribe.", false, pubsub::unsubscribe, "Stops listening to messages posted to channels."),
    cmd!("psubscribe", -2, PS, (0, 0, 0), PS_ACL, "pubsub", "2.0.0", "O(N) where N is the number of patterns to subscribe to.", false, pubsub::psubscribe, "Listens for messages published to channels that match one or more patterns."),
    cmd!("punsubscribe", -1, PS, (0, 0, 0), PS_ACL, "pubsub", "2.0.0", "O(N) where N is the number of patterns to unsubscribe.", false, pubsub::punsubscribe, "Stops listening to messages published to channels that match one or more patterns."),
    cmd!("ssubscribe", -2, PS, (1, -1, 1), PS_ACL, "pubsub", "7.0.0", "O(N) where N is the number of shard channels to subscribe to.", false, pubsub::ssubscribe, "Listens for messages published to shard channels."),
    cmd!("sunsubscribe", -1, PS, (1, -1, 1), PS_ACL, "pubsub", "7.0.0", "O(N) where N is the number of shard channels to unsubscribe.", false, pubsub::sunsubscribe, "Stops listening to messages posted to shard channels."),
    cmd!("publish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], (0, 0, 0), &["@pubsub", "@fast"], "pubsub", "2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", false, pubsub::publish, "Posts a message to a channel."),
    cmd!("spublish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], (1, 1, 1), &["@pubsub", "@fast"], "pubsub", "7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.", false, pubsub::spublish, "Post a message to a shard channel"),
    CommandSpec { subcommands: &["pubsub|channels", "pubsub|numsub", "pubsub|numpat", "pubsub|shardchannels", "pubsub|shardnumsub", "pubsub|help"], ..cmd!("pubsub", -2, &[], (0, 0, 0), &["@slow"], "pubsub", "2.8.0", "Depends on subcommand.", false, pubsub::pubsub, "A container for Pub/Sub commands.") },
    // Scripting.
    cmd!("eval", -3, &["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale"], (0, 0, 0), &["@slow", "@scripting"], "scripting", "2.6.0", "Depends on the script that is executed.", true, scripting::eval, "Executes a server-side Lua script."),
    cmd!("evalsha", -3, &["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale"], (0, 0, 0), &["@slow", "@scripting"], "scripting", "2.6.0", "Depends on the script that is executed.", true, scripting::evalsha, "Executes a server-side Lua script by SHA1 digest."),
    cmd!("eval_ro", -3, &["readonly", "noscript", "skip_monitor", "no_mandatory_keys", "stale"], (0, 0, 0), &["@slow", "@scripting"], "scripting", "7.0.0", "Depends on the script that is executed.", true, scripting::eval_ro, "Executes a read-only server-side Lua script."),
    cmd!("evalsha_ro", -3, &["readonly", "noscript", "skip_monitor", "no_mandatory_keys", "stale"], (0, 0, 0), &["@slow", "@scripting"], "scripting", "7.0.0", "Depends on the script that is executed.", true, scripting::evalsha_ro, "Executes a read-only server-side Lua script by SHA1 digest."),
    cmd!("fcall", -3, &["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale"], (0, 0, 0), &["@slow", "@scripting"], "scripting", "7.0.0", "Depends on the function that is executed.", true, functions::fcall, "Invokes a function."),
    cmd!("fcall_ro", -3, &["readonly", "noscript", "skip_monitor", "no_mandatory_keys", "stale"], (0, 0, 0), &["@slow", "@scripting"], "scripting", "7.0.0", "Depends on the function that is executed.", true, functions::fcall_ro, "Invokes a read-only function."),
    CommandSpec { subcommands: &["function|load", "function|delete", "function|flush", "function|list", "function|dump", "function|restore", "function|stats", "function|kill", "function|help"], ..cmd!("function", -2, &[], (0, 0, 0), &["@slow"], "scripting", "7.0.0", "Depends on subcommand.", true, functions::function, "A container for function commands.") },
    CommandSpec { subcommands: &["script|load", "script|exists", "script|flush", "script|kill", "script|help"], ..cmd!("script", -2, &[], (0, 0, 0), &["@slow"], "scripting", "2.6.0", "Depends on subcommand.", false, scripting::script, "A container for Lua scripts management commands.") },
    // Transactions.
    cmd!("multi", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), &["@fast", "@transaction"], "transactions", "1.2.0", "O(1)", false, transactions::multi, "Starts a transaction."),
    cmd!("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], (0, 0, 0), &["@slow", "@transaction"], "transactions", "1.2.0", "Depends on commands in the transaction", true, transactions::exec, "Executes all commands in a transaction."),
    cmd!("discard", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), &["@fast", "@transaction"], "transactions", "2.0.0", "O(N), when N is the number of queued commands", false, transactions::discard, "Discards a transaction."),
    cmd!("watch", -2, &["noscript", "loading", "stale", "fast", "allow_busy"], (1, -1, 1), &["@fast", "@transaction"], "transactions", "2.2.0", "O(1) for every key.", true, transactions::watch, "Monitors changes to keys to determine the execution of a transaction."),
    cmd!("unwatch", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), &["@fast", "@transaction"], "transactions", "2.2.0", "O(1)", false, transactions::unwatch, "Forgets about watched keys of a transaction."),
    CommandSpec { subcommands: &["command|count", "command|docs", "command|info", "command|list", "command|help"], ..cmd!("command", -1, &["loading", "stale"], (0, 0, 0), &["@slow", "@connection"], "server", "2.8.13", "O(N) where N is the total number of Redis commands", false, introspection::command, "Returns detailed information about all commands.") },
];

// The data-type commands' table (after the macro it uses).
mod types_table;
pub use types_table::TYPE_COMMANDS;

/// Every command: [`COMMANDS`] then [`TYPE_COMMANDS`].
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().chain(TYPE_COMMANDS.iter())
}

/// How many commands there are.
pub fn command_count() -> usize {
    COMMANDS.len() + TYPE_COMMANDS.len()
}

fn spec_at(i: usize) -> Option<&'static CommandSpec> {
    COMMANDS
        .get(i)
        .or_else(|| TYPE_COMMANDS.get(i.checked_sub(COMMANDS.len())?))
}

fn index() -> &'static HashMap<&'static [u8], usize, FastHash> {
    static INDEX: OnceLock<HashMap<&'static [u8], usize, FastHash>> = OnceLock::new();
    INDEX.get_or_init(|| {
        all_commands()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect()
    })
}

/// Looks a command up by name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<(usize, &'static CommandSpec)> {
    let mut buf = [0u8; 16];
    if name.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    let i = *index().get(&buf[..name.len()])?;
    spec_at(i).map(|c| (i, c))
}

/// Runs one request. The caller (the executor) holds the stripes `lock_scope` names and
/// commits `ctx.pending` afterwards.
pub fn dispatch(ctx: &mut Ctx<'_>, req: &Request) -> Reply {
    let args = req.args();
    let Some((i, spec)) = req.command() else {
        return errors::unknown_command(args);
    };
    let rejected = if !spec.arity_ok(args.len()) {
        Some(errors::wrong_args(spec.name))
    } else if !ctx.session.authenticated && !spec.no_auth() && ctx.shared.limits.auth_required() {
        Some(errors::err(errors::NOAUTH))
    } else if spec.writes() && ctx.shared.store.is_replica() {
        Some(Reply::error(replication::READONLY))
    } else if ctx.session.resp2_subscribed() && !pubsub::allowed_when_subscribed(spec) {
        Some(pubsub::not_allowed_when_subscribed(spec.name))
    } else if (ctx.pending.refuse_busy || ctx.shared.busy.is_busy())
        && !allowed_when_busy(spec, args)
        && !crate::scripting::in_script()
    {
        Some(Reply::error(crate::scripting::busy::BUSY))
    } else {
        None
    };
    let call = |usec: u128, outcome| Call {
        command: i as u32,
        usec: u32::try_from(usec).unwrap_or(u32::MAX),
        outcome,
    };
    if let Some(r) = rejected {
        ctx.pending.calls.push(call(0, Outcome::Rejected));
        return r;
    }
    ctx.session.client.last_cmd.store(i as u64 + 1, Relaxed);
    let start = std::time::Instant::now();
    ctx.pending.command_started = Some(start);
    // Keyspace notifications: the writes of this command (a script's commands record their
    // own, each in its own dispatch).
    let flags = ctx.shared.notify.flags();
    let notifying = spec.writes() && crate::notify::active(flags);
    let outer = if notifying {
        ctx.pending.notify_new = flags & crate::notify::NEW != 0;
        Some((
            ctx.pending.notify_writes.replace(Vec::new()),
            std::mem::take(&mut ctx.pending.notify_notes),
        ))
    } else {
        None
    };
    let (Ok(r) | Err(r)) = (spec.handler)(ctx, args);
    if let Some((writes, notes)) = outer {
        let mine = std::mem::replace(&mut ctx.pending.notify_writes, writes).unwrap_or_default();
        let mut events = std::mem::replace(&mut ctx.pending.notify_notes, notes);
        if !r.is_error() {
            let mut all = crate::notify::events(spec.name, args, &mine);
            all.append(&mut events);
            let msgs = crate::notify::publishes(flags, &all);
            ctx.pending.publishes.extend(msgs);
        }
    }
    let outcome = if r.is_error() {
        Outcome::Failed
    } else {
        Outcome::Ok
    };
    ctx.pending
        .calls
        .push(call(start.elapsed().as_micros(), outcome));
    r
}

/// The pseudo-key whose stripe FUNCTION LOAD, DELETE, FLUSH and RESTORE hold (no user key
/// maps to this stripe's holders in a way that matters: sharing it only serializes).
static FUNCTIONS_LOCK: Bytes = Bytes::from_static(b"\x00strata:function-libraries");

/// What other clients may run while a script is busy (redis' `allow-busy` commands).
fn allowed_when_busy(spec: &CommandSpec, args: &[Bytes]) -> bool {
    let sub = |w: &str| args.get(1).is_some_and(|a| is(a, w));
    match spec.name {
        "script" => sub("KILL"),
        "function" => sub("KILL") || sub("STATS"),
        // Redis allows WATCH, but a watch registers under its key's stripe, which a busy
        // segment does not hold (`executor::busy_segment`).
        "watch" => false,
        _ => spec.flags.contains(&"allow_busy"),
    }
}

/// The name of the command a client ran last (CLIENT LIST `cmd=`).
pub fn name_of(index_plus_one: u64) -> &'static str {
    match index_plus_one {
        0 => "NULL",
        i => spec_at(i as usize - 1).map_or("NULL", |c| c.name),
    }
}

/// Whether `a` equals the ASCII word `w` ignoring case.
pub fn is(a: &[u8], w: &str) -> bool {
    a.eq_ignore_ascii_case(w.as_bytes())
}

/// Parses an integer argument (Redis's `getLongLongFromObjectOrReply`).
pub fn int_arg(a: &[u8]) -> Result<i64, Reply> {
    crate::numbers::parse_i64(a).ok_or_else(|| errors::err(errors::NOT_INTEGER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    fn keys(a: &[&str]) -> Vec<String> {
        let args = args(a);
        let (_, spec) = lookup(args[0].as_ref()).expect("known command");
        spec.table_keys(&args)
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    fn locked(a: &[&str]) -> Option<Vec<String>> {
        let args = args(a);
        let (_, spec) = lookup(args[0].as_ref()).expect("known command");
        match spec.lock_scope(&args) {
            LockScope::None => Some(vec![]),
            LockScope::Keys(k) => Some(
                k.into_iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect(),
            ),
            LockScope::All => None,
        }
    }

    /// The keys the table places, and the stripes a command locks from them.
    #[test]
    fn table_keys_and_lock_scopes() {
        assert_eq!(keys(&["GET", "a"]), ["a"]);
        assert_eq!(keys(&["MGET", "a", "b", "c"]), ["a", "b", "c"]);
        assert_eq!(keys(&["MSET", "a", "1", "b", "2"]), ["a", "b"]);
        assert!(keys(&["PING"]).is_empty());
        assert!(keys(&["GET"]).is_empty(), "wrong arity: no keys");
        assert_eq!(
            locked(&["GET", "a"]),
            Some(vec![]),
            "a plain read locks nothing"
        );
        assert_eq!(
            locked(&["MSET", "a", "1", "b", "2"]),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(locked(&["INCR", "n"]), Some(vec!["n".into()]));
        assert_eq!(locked(&["FLUSHDB"]), None, "every stripe");
    }
}
