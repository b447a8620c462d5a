//! Object-store requests by kind ([`RequestCounters`], bumped by the counting layer every
//! capacity tier and object-store log location sends its requests through) and their snapshot
//! ([`RequestCounts`]), which the cost model (`stats/cost.rs`) prices.
//!
//! A kind is what an S3-compatible store bills as one request: a whole-object GET, a ranged
//! GET (several ranges read together are one request per coalesced range), a HEAD, a PUT, the
//! three requests of a multipart upload (create, each part, complete), a LIST page (up to 1,000
//! objects), a DELETE (up to 1,000 objects in bulk; an aborted upload), a server-side COPY.
//! Every attempt Strata sends counts, its retries included. The S3 client's own re-sends, below
//! the counting layer, are not seen: mostly failed connections and 5xx answers, which S3 does
//! not bill, but also a request that timed out after the store received it. Depends on nothing
//! else in the crate.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The kinds of object-store requests, in the order reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A GET of a whole object.
    Get,
    /// A GET of a byte range of an object.
    GetRange,
    /// A HEAD (an object's size and version, without its bytes).
    Head,
    /// A single-request PUT (conditional creates included).
    Put,
    /// The request that starts a multipart upload.
    MultipartCreate,
    /// One part of a multipart upload.
    MultipartPart,
    /// The request that completes a multipart upload.
    MultipartComplete,
    /// One page of a LIST (up to 1,000 objects).
    List,
    /// A deletion of up to 1,000 objects, or the abort of a multipart upload.
    Delete,
    /// A server-side copy or rename.
    Copy,
}

impl RequestKind {
    /// Every kind, in report order.
    pub const ALL: [RequestKind; 10] = [
        RequestKind::Get,
        RequestKind::GetRange,
        RequestKind::Head,
        RequestKind::Put,
        RequestKind::MultipartCreate,
        RequestKind::MultipartPart,
        RequestKind::MultipartComplete,
        RequestKind::List,
        RequestKind::Delete,
        RequestKind::Copy,
    ];

    /// The kind's name in reports (JSON keys, `INFO` fields, Prometheus labels).
    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Get => "get",
            RequestKind::GetRange => "get_range",
            RequestKind::Head => "head",
            RequestKind::Put => "put",
            RequestKind::MultipartCreate => "multipart_create",
            RequestKind::MultipartPart => "multipart_part",
            RequestKind::MultipartComplete => "multipart_complete",
            RequestKind::List => "list",
            RequestKind::Delete => "delete",
            RequestKind::Copy => "copy",
        }
    }

    /// How S3-compatible stores price the kind: [`PriceClass::Write`] (PUT, COPY, POST, LIST:
    /// S3's "tier 1"), [`PriceClass::Read`] (GET, HEAD: "tier 2") or [`PriceClass::Delete`].
    pub fn class(self) -> PriceClass {
        match self {
            RequestKind::Get | RequestKind::GetRange | RequestKind::Head => PriceClass::Read,
            RequestKind::Delete => PriceClass::Delete,
            _ => PriceClass::Write,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The price classes of requests (see [`RequestKind::class`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriceClass {
    /// PUT, COPY, POST and LIST requests.
    Write,
    /// GET and HEAD requests.
    Read,
    /// DELETE requests (free on S3 Standard).
    Delete,
}

/// Live request counters (see the module docs).
#[derive(Debug, Default)]
pub struct RequestCounters {
    by_kind: [AtomicU64; RequestKind::ALL.len()],
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
}

impl RequestCounters {
    /// Counts `n` requests of `kind`.
    pub fn add(&self, kind: RequestKind, n: u64) {
        self.by_kind[kind.index()].fetch_add(n, Relaxed);
    }

    /// Counts bytes returned by reads.
    pub fn add_read_bytes(&self, n: u64) {
        self.bytes_read.fetch_add(n, Relaxed);
    }

    /// Counts bytes sent by writes.
    pub fn add_written_bytes(&self, n: u64) {
        self.bytes_written.fetch_add(n, Relaxed);
    }

    /// The counts now.
    pub fn snapshot(&self) -> RequestCounts {
        let mut by_kind = [0; RequestKind::ALL.len()];
        for (c, a) in by_kind.iter_mut().zip(&self.by_kind) {
            *c = a.load(Relaxed);
        }
        RequestCounts {
            by_kind,
            bytes_read: self.bytes_read.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
        }
    }
}

/// Request counts at one moment, or between two (see [`RequestCounts::since`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    by_kind: [u64; RequestKind::ALL.len()],
    /// Bytes returned by read requests.
    pub bytes_read: u64,
    /// Bytes sent by write requests.
    pub bytes_written: u64,
}

impl RequestCounts {
    /// Requests of `kind`.
    pub fn get(&self, kind: RequestKind) -> u64 {
        self.by_kind[kind.index()]
    }

    /// Every kind with its count, in report order.
    pub fn by_kind(&self) -> impl Iterator<Item = (RequestKind, u64)> + '_ {
        RequestKind::ALL.iter().map(|&k| (k, self.get(k)))
    }

    /// All requests.
    pub fn total(&self) -> u64 {
        self.by_kind.iter().sum()
    }

    /// Requests of one price class.
    pub fn of_class(&self, class: PriceClass) -> u64 {
        self.by_kind()
            .filter(|(k, _)| k.class() == class)
            .map(|(_, n)| n)
            .sum()
    }

    /// The requests made since `earlier` (counts only grow; a reset reads as zero).
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        let mut by_kind = [0; RequestKind::ALL.len()];
        for (i, c) in by_kind.iter_mut().enumerate() {
            *c = self.by_kind[i].saturating_sub(earlier.by_kind[i]);
        }
        RequestCounts {
            by_kind,
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            bytes_written: self.bytes_written.saturating_sub(earlier.bytes_written),
        }
    }

    /// The sum of two counts (a database's capacity tier and its log location).
    pub fn plus(&self, other: &RequestCounts) -> RequestCounts {
        let mut by_kind = self.by_kind;
        for (c, o) in by_kind.iter_mut().zip(&other.by_kind) {
            *c += o;
        }
        RequestCounts {
            by_kind,
            bytes_read: self.bytes_read + other.bytes_read,
            bytes_written: self.bytes_written + other.bytes_written,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind_class_and_difference() {
        let c = RequestCounters::default();
        c.add(RequestKind::Get, 2);
        c.add(RequestKind::GetRange, 5);
        c.add(RequestKind::Head, 1);
        c.add(RequestKind::Put, 3);
        c.add(RequestKind::MultipartPart, 4);
        c.add(RequestKind::List, 1);
        c.add(RequestKind::Delete, 7);
        c.add_read_bytes(100);
        let a = c.snapshot();
        assert_eq!(a.total(), 23);
        assert_eq!(a.of_class(PriceClass::Read), 8);
        assert_eq!(a.of_class(PriceClass::Write), 8);
        assert_eq!(a.of_class(PriceClass::Delete), 7);
        c.add(RequestKind::GetRange, 10);
        c.add_written_bytes(64);
        let d = c.snapshot().since(&a);
        assert_eq!((d.total(), d.get(RequestKind::GetRange)), (10, 10));
        assert_eq!((d.bytes_read, d.bytes_written), (0, 64));
        assert_eq!(a.plus(&d).total(), 33);
        let names: Vec<_> = RequestKind::ALL.iter().map(|k| k.name()).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
    }
}
