//! Errors. Inside the engine every failure is an [`ErrorRepr`] (a `thiserror` enum with the
//! detail an engineer needs: path, offset, what mismatched). Outside, callers see [`Error`],
//! which is cheap to clone (background errors are shared by every later write) and exposes a
//! small, stable [`ErrorKind`] to branch on.
//!
//! This module depends on nothing else in the crate.

use std::fmt;
use std::sync::Arc;

/// The stable classification of an [`Error`]. New kinds may be added in later releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An operating-system or storage I/O failure.
    Io,
    /// Stored bytes failed a checksum or could not be decoded. Never returned as data.
    Corruption,
    /// The caller passed something the engine cannot accept (too large a key, bad options).
    InvalidArgument,
    /// Another process (or another `Db` in this process) holds the database directory.
    Locked,
    /// The directory exists but is not a Strata database, or its format version is unknown.
    NotADatabase,
    /// The database was asked to create or open something in a state that forbids it.
    AlreadyExists,
    /// The database was closed or is shutting down. (A write refused because a background
    /// failure put the database into read-only mode reports that failure's own kind.)
    Closed,
    /// The operation could not complete without waiting, and the caller asked it not to wait:
    /// a `ReadOptions::cache_only` lookup that needs a file read, or a
    /// `WriteOptions::no_slowdown` write that would stall. Nothing was done; retry without the
    /// option (RocksDB's `Status::Incomplete`).
    Incomplete,
    /// A transaction's commit found that another write changed a key it read for update or
    /// wrote since its snapshot (RocksDB's `Status::Busy`). Nothing was written; run the
    /// transaction again.
    Busy,
    /// A transaction's commit could not check for conflicts because the writes since its
    /// snapshot are no longer all in memory (RocksDB's `Status::TryAgain`). Nothing was
    /// written; run the transaction again (keep transactions shorter than a memtable's
    /// lifetime, or raise `write_buffer_size`). Also a replica's refresh that read the writer
    /// behind the view it serves: reads keep that view; refresh again.
    TryAgain,
    /// A pessimistic transaction waited for a key's lock longer than its lock timeout
    /// (RocksDB's `Status::TimedOut`). The request did nothing; the transaction keeps its other
    /// locks and writes: retry the request, or roll back.
    TimedOut,
    /// A pessimistic transaction outlived its expiration, so its locks could be taken over: its
    /// commit is refused and nothing is written (RocksDB's `Status::Expired`).
    Expired,
    /// Another database took over this one's object-store log location (its lease): this
    /// database makes nothing durable any more — no WAL segment, manifest, table upload or
    /// deletion — and every later write fails with this kind. Close it; the writer that took
    /// over holds every write this one acknowledged.
    Fenced,
}

/// The detailed internal error. Public only so it can be reached through `Error::repr`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorRepr {
    /// An I/O failure ([`ErrorKind::Io`]).
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or object the operation was on (or what failed, for external errors).
        path: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A checksum or decode failure ([`ErrorKind::Corruption`]), with what mismatched.
    #[error("corruption: {0}")]
    Corruption(String),
    /// An object the engine expected on the capacity tier is not there
    /// ([`ErrorKind::Corruption`] for the database that owns it; a replica reading the
    /// writer's tables takes it for a table the writer's garbage collection deleted).
    #[error("corruption: {0}: object not found")]
    MissingObject(String),
    /// A rejected argument ([`ErrorKind::InvalidArgument`]), with why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A lock or lease on the database is held by another owner or was released
    /// ([`ErrorKind::Locked`]); the text names what.
    #[error("database directory is locked by another user: {0}")]
    Locked(String),
    /// A request to a leased log location was not sent (or was abandoned) because the
    /// lease's validity ended while it waited or retried ([`ErrorKind::Locked`]). The lease
    /// itself may still be held: the writer renews it and sends the request again.
    #[error("lease deadline passed: {0}")]
    LeaseDeadline(String),
    /// The log location's lease was taken over by another database ([`ErrorKind::Fenced`]).
    #[error("fenced: {0}")]
    Fenced(String),
    /// The directory or a table is not a Strata database or has an unknown format version
    /// ([`ErrorKind::NotADatabase`]).
    #[error("not a strata database: {0}")]
    NotADatabase(String),
    /// The target already holds a database ([`ErrorKind::AlreadyExists`]): an open with
    /// `error_if_exists`, or a recovery into a non-empty directory.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// The database is closed or shutting down ([`ErrorKind::Closed`]).
    #[error("database is closed")]
    Closed,
    /// The operation would have to wait or read a file, and the caller asked it not to
    /// ([`ErrorKind::Incomplete`]); the text says why.
    #[error("incomplete: {0}")]
    Incomplete(&'static str),
    /// A transaction conflict ([`ErrorKind::Busy`]): which key, and why.
    #[error("busy: {0}")]
    Busy(String),
    /// A transaction's conflict check is impossible, or a replica's refresh read the writer
    /// behind its served view ([`ErrorKind::TryAgain`]).
    #[error("try again: {0}")]
    TryAgain(String),
    /// A lock wait ran out ([`ErrorKind::TimedOut`]): which key, held by whom.
    #[error("timed out: {0}")]
    TimedOut(String),
    /// A transaction expired ([`ErrorKind::Expired`]).
    #[error("expired: {0}")]
    Expired(String),
    /// An earlier failure (flush, compaction, WAL write or sync) that put the database into
    /// read-only mode; its kind is the wrapped error's kind.
    #[error("background error put the database into read-only mode: {0}")]
    Background(Error),
}

/// An error returned by Strata. `Clone`, `Send`, `Sync`; branch on [`Error::kind`].
#[derive(Clone)]
pub struct Error(Arc<ErrorRepr>);

impl Error {
    /// The stable kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match &*self.0 {
            ErrorRepr::Io { .. } => ErrorKind::Io,
            ErrorRepr::Corruption(_) | ErrorRepr::MissingObject(_) => ErrorKind::Corruption,
            ErrorRepr::InvalidArgument(_) => ErrorKind::InvalidArgument,
            ErrorRepr::Locked(_) | ErrorRepr::LeaseDeadline(_) => ErrorKind::Locked,
            ErrorRepr::Fenced(_) => ErrorKind::Fenced,
            ErrorRepr::NotADatabase(_) => ErrorKind::NotADatabase,
            ErrorRepr::AlreadyExists(_) => ErrorKind::AlreadyExists,
            ErrorRepr::Closed => ErrorKind::Closed,
            ErrorRepr::Incomplete(_) => ErrorKind::Incomplete,
            ErrorRepr::Busy(_) => ErrorKind::Busy,
            ErrorRepr::TryAgain(_) => ErrorKind::TryAgain,
            ErrorRepr::TimedOut(_) => ErrorKind::TimedOut,
            ErrorRepr::Expired(_) => ErrorKind::Expired,
            ErrorRepr::Background(e) => e.kind(),
        }
    }

    /// The detailed representation, for logging and diagnostics.
    pub fn repr(&self) -> &ErrorRepr {
        &self.0
    }

    pub(crate) fn io(path: impl fmt::Display, source: std::io::Error) -> Self {
        ErrorRepr::Io {
            path: path.to_string(),
            source,
        }
        .into()
    }

    pub(crate) fn corruption(msg: impl Into<String>) -> Self {
        ErrorRepr::Corruption(msg.into()).into()
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        ErrorRepr::InvalidArgument(msg.into()).into()
    }

    /// An I/O failure outside the engine (a remote service, a network link), for
    /// implementations of the engine's traits in other crates.
    pub fn external(what: impl fmt::Display, msg: impl Into<String>) -> Self {
        Self::io(what, std::io::Error::other(msg.into()))
    }

    /// An argument the caller got wrong (a bad URL or option), for implementations of the
    /// engine's traits in other crates.
    pub fn invalid_argument(msg: impl Into<String>) -> Self {
        Self::invalid(msg)
    }

    /// Whether this is a corruption (checksum or decode failure).
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }

    /// This error with table `id` named in front, if it is about the table's content
    /// (corruption, a missing object, an unknown format); other errors unchanged. A missing
    /// object stays one, so that a replica still tells it apart from damage.
    pub(crate) fn in_table(self, id: u64) -> Error {
        match &*self.0 {
            ErrorRepr::MissingObject(what) => {
                ErrorRepr::MissingObject(format!("table {id:06}.sst: {what}")).into()
            }
            ErrorRepr::NotADatabase(_) => {
                ErrorRepr::NotADatabase(format!("table {id:06}.sst: {self}")).into()
            }
            _ if self.is_corruption() => Error::corruption(format!("table {id:06}.sst: {self}")),
            _ => self,
        }
    }

    /// Whether this is a capacity-tier object found missing ([`ErrorRepr::MissingObject`]).
    pub fn is_missing_object(&self) -> bool {
        match &*self.0 {
            ErrorRepr::MissingObject(_) => true,
            ErrorRepr::Background(e) => e.is_missing_object(),
            _ => false,
        }
    }

    /// Whether this is an I/O error for a file or object that does not exist (a missing
    /// capacity-tier object included).
    pub fn is_not_found(&self) -> bool {
        match &*self.0 {
            ErrorRepr::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            ErrorRepr::MissingObject(_) => true,
            ErrorRepr::Background(e) => e.is_not_found(),
            _ => false,
        }
    }
}

impl From<ErrorRepr> for Error {
    fn from(r: ErrorRepr) -> Self {
        Error(Arc::new(r))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.0)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
