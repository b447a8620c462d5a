//! Values the server's settings are written in: the WAL sync policy (Redis's `appendfsync`)
//! and byte sizes written the Redis way (`64mb`), and the engine's storage handle an embedder
//! may set. Parsing only; depends on nothing else in the crate but [`ConfigError`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// When the write-ahead log is fsynced (Redis's `appendfsync`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncPolicy {
    /// Every write is fsynced before it is acknowledged (concurrent writes share an fsync).
    Always,
    /// The engine fsyncs the log once a second (`Options::wal_sync_interval`): a process crash
    /// loses nothing, an OS crash or power loss up to about a second.
    #[default]
    Everysec,
    /// The server never fsyncs; the OS writes the log back when it chooses.
    No,
}

impl SyncPolicy {
    pub fn name(self) -> &'static str {
        match self {
            SyncPolicy::Always => "always",
            SyncPolicy::Everysec => "everysec",
            SyncPolicy::No => "no",
        }
    }
}

impl FromStr for SyncPolicy {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Ok(SyncPolicy::Always),
            "everysec" => Ok(SyncPolicy::Everysec),
            "no" => Ok(SyncPolicy::No),
            _ => Err(ConfigError(format!(
                "invalid sync policy '{s}' (expected always, everysec or no)"
            ))),
        }
    }
}

impl fmt::Display for SyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A byte count. Parses Redis-style units: `b`, `k` (1000), `kb` (1024), `m`, `mb`, `g`, `gb`,
/// and also `kib`, `mib`, `gib`; case-insensitive. In TOML, an integer or a string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let t = s.trim().to_ascii_lowercase();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let mult: u64 = match unit {
            "" | "b" => 1,
            "k" => 1000,
            "kb" | "kib" => 1024,
            "m" => 1000 * 1000,
            "mb" | "mib" => 1 << 20,
            "g" => 1000 * 1000 * 1000,
            "gb" | "gib" => 1 << 30,
            _ => return Err(ConfigError(format!("invalid size '{s}'"))),
        };
        let n: u64 = num
            .parse()
            .map_err(|_| ConfigError(format!("invalid size '{s}'")))?;
        n.checked_mul(mult)
            .map(ByteSize)
            .ok_or_else(|| ConfigError(format!("size '{s}' is too large")))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte count: an integer or a string such as \"64mb\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(|e: ConfigError| E::custom(e.0))
            }
        }
        d.deserialize_any(V)
    }
}

/// redis' `client-output-buffer-limit` for one class: `<hard> <soft> <soft seconds>`, sizes as
/// [`ByteSize`] (`32mb 8mb 60`); 0 disables a limit. What passes the hard limit, or stays over
/// the soft one for the seconds given, is disconnected (see `pubsub`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

impl FromStr for OutputLimit {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let parts: Vec<&str> = s.split_whitespace().collect();
        let [hard, soft, secs] = parts[..] else {
            return Err(ConfigError(format!(
                "invalid output buffer limit '{s}': expected '<hard> <soft> <soft seconds>'"
            )));
        };
        let secs = secs
            .parse()
            .map_err(|_| ConfigError(format!("invalid soft-limit seconds '{secs}'")))?;
        Ok(OutputLimit {
            hard: hard.parse::<ByteSize>()?.0,
            soft: soft.parse::<ByteSize>()?.0,
            soft_seconds: secs,
        })
    }
}

impl fmt::Display for OutputLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.hard, self.soft, self.soft_seconds)
    }
}

impl Serialize for OutputLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for OutputLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e: ConfigError| serde::de::Error::custom(e.0))
    }
}

/// [`crate::ServerConfig::storage`]: a storage handle, equal to another only if it is the same one.
#[derive(Clone, Default)]
pub struct EngineStorage(pub Option<std::sync::Arc<dyn strata::storage::Storage>>);

impl std::fmt::Debug for EngineStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "custom" } else { "local" })
    }
}

impl PartialEq for EngineStorage {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
