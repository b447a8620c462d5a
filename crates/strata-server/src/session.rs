//! [`Session`]: the per-connection protocol state commands read and change — protocol version,
//! authentication, whether to close, the transaction being queued (MULTI, see `multi`), the
//! keys it watches (WATCH, see `watch`), its Pub/Sub subscriptions (`pubsub`) and the blocking
//! command it waits in (`blocking`) — plus the client's registry entry. A connection is in one
//! of normal, MULTI (queuing), subscribed (RESP2 with a subscription) or blocked mode.
//!
//! Invariant: a session is owned by exactly one connection task and moved (never shared) into
//! the engine pool for a batch, so it needs no locking. Depends on `clients`, `resp`, `multi`,
//! `watch`, `pubsub` and `blocking`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::blocking::Blocked;
use crate::clients::ClientHandle;
use crate::multi::Multi;
use crate::pubsub::Subscriptions;
use crate::resp::Protocol;
use crate::watch::Watching;

/// What the connection does after the current command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// Keep serving.
    Open,
    /// Send this command's reply, then close (QUIT, protocol errors).
    AfterReply,
    /// Close without replying (SHUTDOWN).
    Now,
}

pub struct Session {
    pub client: Arc<ClientHandle>,
    pub protocol: Protocol,
    pub authenticated: bool,
    pub close: Close,
    /// In MULTI: the commands queued for EXEC (`None`: not in a transaction).
    pub multi: Option<Multi>,
    /// The keys WATCHed since the last EXEC, DISCARD or UNWATCH (dropping it unregisters them).
    pub watching: Option<Watching>,
    /// Pub/Sub subscriptions and the mailbox of messages for this client (created by the first
    /// subscribe; dropping it unsubscribes from everything).
    pub pubsub: Option<Subscriptions>,
    /// A blocking command waiting for its keys (see `blocking`): its place in the queues,
    /// deadline and timeout reply. The command stays first in the connection's queue.
    pub blocked: Option<Blocked>,
}

impl Session {
    pub fn new(client: Arc<ClientHandle>, authenticated: bool) -> Self {
        Session {
            client,
            protocol: Protocol::Resp2,
            authenticated,
            close: Close::Open,
            multi: None,
            watching: None,
            pubsub: None,
            blocked: None,
        }
    }

    /// Whether the client has any subscription.
    pub fn subscribed(&self) -> bool {
        self.pubsub.as_ref().is_some_and(Subscriptions::active)
    }

    /// RESP2 subscribed mode: only the (un)subscribe commands, PING, QUIT and RESET run.
    pub fn resp2_subscribed(&self) -> bool {
        self.protocol == Protocol::Resp2 && self.subscribed()
    }

    pub fn set_protocol(&mut self, p: Protocol) {
        self.protocol = p;
        self.client.resp.store(p.number() as u8, Relaxed);
    }
}
