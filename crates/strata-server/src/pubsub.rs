//! Pub/Sub: the registry of channel, pattern and shard-channel subscriptions, delivery of
//! published messages to the subscribers' mailboxes, and the bound on what a slow subscriber
//! may make the server hold (redis' `client-output-buffer-limit pubsub`).
//!
//! A subscribing connection owns one [`Mailbox`] (shared with the registry through an `Arc`)
//! and its [`Subscriptions`]. PUBLISH appends to the mailbox of every subscriber of the channel
//! and of every pattern that matches it, then wakes the connection, which writes the messages
//! between its command batches (`connection`). Messages are not persisted, as in redis.
//!
//! Invariants: a mailbox is in the registry under exactly the names its connection's
//! [`Subscriptions`] hold, and dropping the subscriptions (the connection ends) removes it from
//! every one; a mailbox's queued bytes count every message appended and not yet written; once
//! they pass the hard limit, or stay over the soft limit longer than its seconds, the mailbox
//! is marked killed, takes no more messages and its connection closes. Messages from one
//! publisher reach one subscriber in the order published. Depends on `glob`, `resp`,
//! `fasthash` and `config_values` (for [`OutputLimit`]); never on the engine, the network layer or the command table.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

pub use crate::config_values::OutputLimit;
use crate::fasthash::FastHash;
use crate::glob;
use crate::resp::Reply;

/// One message on its way to a subscriber.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Published to a channel the client subscribed to.
    Message { channel: Bytes, payload: Bytes },
    /// Published to a channel matching a pattern the client subscribed to.
    PMessage {
        pattern: Bytes,
        channel: Bytes,
        payload: Bytes,
    },
    /// Published with SPUBLISH to a shard channel the client subscribed to.
    SMessage { channel: Bytes, payload: Bytes },
}

impl Message {
    /// The push the client receives (an array in RESP2).
    pub fn reply(&self) -> Reply {
        let b = |s: &'static str| Reply::Bulk(Bytes::from_static(s.as_bytes()));
        Reply::Push(match self {
            Message::Message { channel, payload } => {
                vec![
                    b("message"),
                    Reply::Bulk(channel.clone()),
                    Reply::Bulk(payload.clone()),
                ]
            }
            Message::PMessage {
                pattern,
                channel,
                payload,
            } => vec![
                b("pmessage"),
                Reply::Bulk(pattern.clone()),
                Reply::Bulk(channel.clone()),
                Reply::Bulk(payload.clone()),
            ],
            Message::SMessage { channel, payload } => vec![
                b("smessage"),
                Reply::Bulk(channel.clone()),
                Reply::Bulk(payload.clone()),
            ],
        })
    }

    /// About what the message takes in memory and on the wire.
    fn size(&self) -> u64 {
        let body = match self {
            Message::Message { channel, payload } | Message::SMessage { channel, payload } => {
                channel.len() + payload.len()
            }
            Message::PMessage {
                pattern,
                channel,
                payload,
            } => pattern.len() + channel.len() + payload.len(),
        };
        (body + 48) as u64
    }
}

impl OutputLimit {
    /// redis' default for the pubsub class: `32mb 8mb 60`.
    pub const DEFAULT: OutputLimit = OutputLimit {
        hard: 32 << 20,
        soft: 8 << 20,
        soft_seconds: 60,
    };

    /// Whether a subscriber holding `bytes`, over the soft limit since `over_since` (if it is),
    /// is past the limit at `now`.
    pub fn exceeded(&self, bytes: u64, over_since: Option<Instant>, now: Instant) -> bool {
        if self.hard > 0 && bytes >= self.hard {
            return true;
        }
        match over_since {
            Some(t) if self.soft > 0 && bytes >= self.soft => {
                now.duration_since(t).as_secs() >= self.soft_seconds
            }
            _ => false,
        }
    }
}

/// A subscribing connection's queue of undelivered messages.
pub struct Mailbox {
    pub client_id: u64,
    queue: Mutex<VecDeque<Message>>,
    /// Bytes appended and not yet written to the client.
    bytes: AtomicU64,
    /// When the queued bytes passed the soft limit (cleared when they fall under it).
    over_soft_since: Mutex<Option<Instant>>,
    /// The soft limit the last delivery was judged by.
    soft: AtomicU64,
    killed: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Mailbox {
    fn new(client_id: u64) -> Self {
        Mailbox {
            client_id,
            queue: Mutex::new(VecDeque::new()),
            bytes: AtomicU64::new(0),
            over_soft_since: Mutex::new(None),
            soft: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            notify: tokio::sync::Notify::new(),
        }
    }

    /// Appends a message unless the subscriber is killed; kills it if this passes the limit.
    /// Returns whether it was killed by this message.
    fn deliver(&self, m: Message, limit: OutputLimit) -> bool {
        if self.killed.load(Relaxed) {
            return false;
        }
        let size = m.size();
        self.soft.store(limit.soft, Relaxed);
        // Counted before it is queued: a connection that takes and writes it at once then
        // never subtracts bytes not yet added.
        let bytes = self.bytes.fetch_add(size, Relaxed) + size;
        self.queue.lock().push_back(m);
        let now = Instant::now();
        let since = {
            let mut s = self.over_soft_since.lock();
            if limit.soft > 0 && bytes >= limit.soft {
                *s.get_or_insert(now)
            } else {
                *s = None;
                now
            }
        };
        let over = limit.soft > 0 && bytes >= limit.soft;
        let killed = limit.exceeded(bytes, over.then_some(since), now);
        if killed {
            self.killed.store(true, Relaxed);
            self.queue.lock().clear();
        }
        self.notify.notify_one();
        killed
    }

    /// Takes every queued message; the caller reports their bytes written with
    /// [`Mailbox::written`] once they are on the wire.
    pub fn take(&self) -> (Vec<Message>, u64) {
        let msgs: Vec<Message> = self.queue.lock().drain(..).collect();
        let bytes = msgs.iter().map(Message::size).sum();
        (msgs, bytes)
    }

    /// `bytes` taken with [`Mailbox::take`] were written to the client.
    pub fn written(&self, bytes: u64) {
        let left = self.bytes.fetch_sub(bytes, Relaxed).saturating_sub(bytes);
        if left < self.soft.load(Relaxed) {
            *self.over_soft_since.lock() = None;
        }
    }

    /// Bytes queued for the client (CLIENT LIST `omem`).
    pub fn queued_bytes(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// Whether the subscriber passed its output limit (its connection must close).
    pub fn killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// Waits until a message is appended (or the mailbox is killed). A message appended
    /// before the wait started wakes it at once.
    pub async fn notified(&self) {
        self.notify.notified().await
    }
}

/// A message a command published, delivered when its segment is finished.
#[derive(Clone, Debug)]
pub struct Publish {
    /// `Kind::Channel` (PUBLISH) or `Kind::Shard` (SPUBLISH).
    pub kind: Kind,
    pub channel: Bytes,
    pub payload: Bytes,
}

/// Which of the three subscription kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

type Subscribers = HashMap<Bytes, HashMap<u64, Arc<Mailbox>, FastHash>, FastHash>;

/// The server's subscription registry.
pub struct PubSub {
    channels: RwLock<Subscribers>,
    patterns: RwLock<Subscribers>,
    shard: RwLock<Subscribers>,
    /// Subscribers disconnected for passing the output limit (INFO
    /// `client_output_buffer_limit_disconnections`).
    pub disconnections: AtomicU64,
}

impl Default for PubSub {
    fn default() -> Self {
        PubSub {
            channels: RwLock::new(HashMap::default()),
            patterns: RwLock::new(HashMap::default()),
            shard: RwLock::new(HashMap::default()),
            disconnections: AtomicU64::new(0),
        }
    }
}

impl PubSub {
    fn map(&self, kind: Kind) -> &RwLock<Subscribers> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    /// Delivers `payload` to the subscribers of `channel` and of every pattern matching it;
    /// returns how many deliveries were made (a client subscribed both ways counts twice, as
    /// in redis).
    pub fn publish(&self, channel: &Bytes, payload: &Bytes, limit: OutputLimit) -> usize {
        let mut n = 0;
        if let Some(subs) = self.channels.read().get(channel) {
            for m in subs.values() {
                let msg = Message::Message {
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                self.count_kill(m.deliver(msg, limit));
                n += 1;
            }
        }
        for (pattern, subs) in self.patterns.read().iter() {
            if !glob::matches(pattern, channel, false) {
                continue;
            }
            for m in subs.values() {
                let msg = Message::PMessage {
                    pattern: pattern.clone(),
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                self.count_kill(m.deliver(msg, limit));
                n += 1;
            }
        }
        n
    }

    /// Delivers what a segment published, in order.
    pub fn deliver(&self, publishes: Vec<Publish>, limit: OutputLimit) {
        for p in publishes {
            match p.kind {
                Kind::Shard => self.spublish(&p.channel, &p.payload, limit),
                _ => self.publish(&p.channel, &p.payload, limit),
            };
        }
    }

    /// SPUBLISH: delivers to the subscribers of shard channel `channel`.
    pub fn spublish(&self, channel: &Bytes, payload: &Bytes, limit: OutputLimit) -> usize {
        let map = self.shard.read();
        let Some(subs) = map.get(channel) else {
            return 0;
        };
        for m in subs.values() {
            let msg = Message::SMessage {
                channel: channel.clone(),
                payload: payload.clone(),
            };
            self.count_kill(m.deliver(msg, limit));
        }
        subs.len()
    }

    fn count_kill(&self, killed: bool) {
        if killed {
            self.disconnections.fetch_add(1, Relaxed);
        }
    }

    /// The channels (or shard channels) with at least one subscriber, matching `pattern` if
    /// given (PUBSUB CHANNELS, SHARDCHANNELS).
    pub fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let mut v: Vec<Bytes> = self
            .map(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false)))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// How many deliveries [`PubSub::publish`] (or, for `Kind::Shard`, `spublish`) of a
    /// message to `channel` would make now.
    pub fn receivers(&self, kind: Kind, channel: &[u8]) -> usize {
        let direct = self.subscribers(kind, channel);
        if kind == Kind::Shard {
            return direct;
        }
        direct
            + self
                .patterns
                .read()
                .iter()
                .filter(|(p, _)| glob::matches(p, channel, false))
                .map(|(_, subs)| subs.len())
                .sum::<usize>()
    }

    /// Subscribers of `name` (PUBSUB NUMSUB, SHARDNUMSUB).
    pub fn subscribers(&self, kind: Kind, name: &[u8]) -> usize {
        self.map(kind).read().get(name).map_or(0, HashMap::len)
    }

    /// Distinct names with a subscriber (INFO `pubsub_channels`, PUBSUB NUMPAT).
    pub fn count(&self, kind: Kind) -> usize {
        self.map(kind).read().len()
    }

    fn add(&self, kind: Kind, name: &Bytes, m: &Arc<Mailbox>) {
        self.map(kind)
            .write()
            .entry(name.clone())
            .or_default()
            .insert(m.client_id, m.clone());
    }

    fn remove(&self, kind: Kind, name: &[u8], client_id: u64) {
        let mut map = self.map(kind).write();
        if let Some(subs) = map.get_mut(name) {
            subs.remove(&client_id);
            if subs.is_empty() {
                map.remove(name);
            }
        }
    }
}

/// One connection's subscriptions; dropping it unsubscribes from everything.
pub struct Subscriptions {
    hub: Arc<PubSub>,
    pub mailbox: Arc<Mailbox>,
    channels: HashSet<Bytes>,
    patterns: HashSet<Bytes>,
    shard: HashSet<Bytes>,
}

impl Subscriptions {
    pub fn new(hub: Arc<PubSub>, client_id: u64) -> Self {
        Subscriptions {
            hub,
            mailbox: Arc::new(Mailbox::new(client_id)),
            channels: HashSet::new(),
            patterns: HashSet::new(),
            shard: HashSet::new(),
        }
    }

    fn set(&self, kind: Kind) -> &HashSet<Bytes> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    fn set_mut(&mut self, kind: Kind) -> &mut HashSet<Bytes> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// Subscribes to `name` (no change if already subscribed).
    pub fn subscribe(&mut self, kind: Kind, name: &Bytes) {
        if self.set_mut(kind).insert(name.clone()) {
            self.hub.add(kind, name, &self.mailbox);
        }
    }

    /// Unsubscribes from `name`; returns whether it was subscribed.
    pub fn unsubscribe(&mut self, kind: Kind, name: &[u8]) -> bool {
        let was = self.set_mut(kind).remove(name);
        if was {
            self.hub.remove(kind, name, self.mailbox.client_id);
        }
        was
    }

    /// The names of one kind, sorted (what UNSUBSCRIBE without arguments leaves, in order).
    pub fn names(&self, kind: Kind) -> Vec<Bytes> {
        let mut v: Vec<Bytes> = self.set(kind).iter().cloned().collect();
        v.sort();
        v
    }

    pub fn len(&self, kind: Kind) -> usize {
        self.set(kind).len()
    }

    /// Channels plus patterns: the count SUBSCRIBE and PSUBSCRIBE replies carry.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Whether the connection is in subscribed mode (any subscription of any kind).
    pub fn active(&self) -> bool {
        self.count() + self.shard.len() > 0
    }

    /// Unsubscribes from everything (RESET).
    pub fn clear(&mut self) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in std::mem::take(self.set_mut(kind)) {
                self.hub.remove(kind, &name, self.mailbox.client_id);
            }
        }
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn publish_reaches_channels_and_matching_patterns() {
        let hub = Arc::new(PubSub::default());
        let mut a = Subscriptions::new(hub.clone(), 1);
        let mut c = Subscriptions::new(hub.clone(), 2);
        a.subscribe(Kind::Channel, &b("news"));
        a.subscribe(Kind::Pattern, &b("n*"));
        c.subscribe(Kind::Pattern, &b("x*"));
        c.subscribe(Kind::Shard, &b("news"));
        let l = OutputLimit::DEFAULT;
        assert_eq!(hub.publish(&b("news"), &b("hi"), l), 2, "channel + pattern");
        assert_eq!(hub.publish(&b("other"), &b("hi"), l), 0);
        assert_eq!(hub.spublish(&b("news"), &b("s"), l), 1);
        let (msgs, _) = a.mailbox.take();
        assert_eq!(msgs.len(), 2);
        assert!(matches!(&msgs[0], Message::Message { channel, .. } if channel == "news"));
        assert!(matches!(&msgs[1], Message::PMessage { pattern, .. } if pattern == "n*"));
        let (msgs, _) = c.mailbox.take();
        assert!(matches!(&msgs[..], [Message::SMessage { .. }]));
        assert_eq!(hub.active(Kind::Channel, None), vec![b("news")]);
        assert_eq!(hub.count(Kind::Pattern), 2);
        assert_eq!(hub.subscribers(Kind::Shard, b"news"), 1);
        drop(a);
        assert_eq!(hub.count(Kind::Channel), 0, "dropping unsubscribes");
        assert_eq!(hub.count(Kind::Pattern), 1);
        assert!(c.unsubscribe(Kind::Pattern, b"x*"));
        assert!(!c.unsubscribe(Kind::Pattern, b"x*"));
        assert!(c.active(), "still on a shard channel");
        c.clear();
        assert!(!c.active());
        assert_eq!(hub.count(Kind::Shard), 0);
    }

    #[test]
    fn output_limit_decisions() {
        let l = OutputLimit {
            hard: 1000,
            soft: 100,
            soft_seconds: 10,
        };
        let t0 = Instant::now();
        let later = |s| t0 + std::time::Duration::from_secs(s);
        // (bytes, over soft since t0?, now) -> exceeded
        let cases = [
            (999, None, t0, false),
            (1000, None, t0, true),
            (150, Some(t0), later(9), false),
            (150, Some(t0), later(10), true),
            (50, Some(t0), later(100), false),
        ];
        for (bytes, since, now, want) in cases {
            assert_eq!(l.exceeded(bytes, since, now), want, "{bytes} {since:?}");
        }
        let off = OutputLimit {
            hard: 0,
            soft: 0,
            soft_seconds: 0,
        };
        assert!(!off.exceeded(u64::MAX, Some(t0), later(1000)));
    }

    #[test]
    fn a_subscriber_past_the_hard_limit_is_killed_and_takes_nothing_more() {
        let hub = Arc::new(PubSub::default());
        let mut s = Subscriptions::new(hub.clone(), 7);
        s.subscribe(Kind::Channel, &b("c"));
        let l = OutputLimit {
            hard: 1000,
            soft: 0,
            soft_seconds: 0,
        };
        let payload = Bytes::from(vec![b'x'; 250]); // 299 bytes queued each
        for _ in 0..3 {
            hub.publish(&b("c"), &payload, l);
        }
        assert!(!s.mailbox.killed());
        hub.publish(&b("c"), &payload, l);
        assert!(s.mailbox.killed());
        assert_eq!(hub.disconnections.load(Relaxed), 1);
        hub.publish(&b("c"), &payload, l);
        assert!(
            s.mailbox.take().0.is_empty(),
            "a killed mailbox holds nothing"
        );
        // Written bytes are released: a reader that keeps up never reaches the limit.
        let mut r = Subscriptions::new(hub.clone(), 8);
        r.subscribe(Kind::Channel, &b("d"));
        for _ in 0..100 {
            hub.publish(&b("d"), &payload, l);
            let (_, bytes) = r.mailbox.take();
            r.mailbox.written(bytes);
        }
        assert!(!r.mailbox.killed());
        assert_eq!(r.mailbox.queued_bytes(), 0);
    }
}
