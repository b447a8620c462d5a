//! [`CountingStore`]: an `ObjectStore` wrapper that counts every request it passes on by the
//! kind an S3-compatible store bills ([`RequestKind`]), with the bytes moved. Every capacity
//! tier and object-store log location sends its requests through one, so the counts are the
//! request bill (`stats/cost.rs` prices it).
//!
//! Counting follows what the S3 client sends: ranges read together are one ranged GET per
//! group of ranges less than `OBJECT_STORE_COALESCE_DEFAULT` apart (object_store coalesces
//! them so), a listing is one LIST per page of 1,000 objects, deletions one DELETE per 1,000
//! objects (the client deletes in bulk), an aborted upload a DELETE, a rename a COPY and a
//! DELETE. Attempts are counted as they are sent, failed ones included; the S3 client's own
//! re-sends below this layer are not seen, and spent from the tier's
//! request budget (`budget.rs`) when it has one. Depends on `stats::requests` and the budget
//! only; never on the engine.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result, UploadPart,
    OBJECT_STORE_COALESCE_DEFAULT,
};

use super::budget::Budget;
use crate::stats::{RequestCounters, RequestKind};

/// Objects per LIST page (S3's `max-keys` default and maximum).
const LIST_PAGE: u64 = 1000;

/// Objects per bulk DELETE request (S3's DeleteObjects maximum).
const DELETE_BATCH: u64 = 1000;

/// See the module docs.
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<Counted>,
}

/// Where a request is counted: the counters, and the budget it spends from.
#[derive(Debug)]
struct Counted {
    counters: Arc<RequestCounters>,
    budget: Option<Arc<Budget>>,
}

impl Counted {
    fn add(&self, kind: RequestKind, n: u64) {
        self.counters.add(kind, n);
        if let Some(b) = &self.budget {
            for _ in 0..n {
                b.spend(kind);
            }
        }
    }
    fn add_read_bytes(&self, n: u64) {
        self.counters.add_read_bytes(n);
    }
    fn add_written_bytes(&self, n: u64) {
        self.counters.add_written_bytes(n);
    }
}

impl CountingStore {
    /// Wraps `inner`, counting into `counters`.
    pub fn new(inner: Arc<dyn ObjectStore>, counters: Arc<RequestCounters>) -> Self {
        CountingStore {
            inner,
            counters: Arc::new(Counted {
                counters,
                budget: None,
            }),
        }
    }

    /// Also spends every request from `budget`.
    pub fn with_budget(
        inner: Arc<dyn ObjectStore>,
        counters: Arc<RequestCounters>,
        budget: Arc<Budget>,
    ) -> Self {
        CountingStore {
            inner,
            counters: Arc::new(Counted {
                counters,
                budget: Some(budget),
            }),
        }
    }
}

/// How many requests reading `ranges` together takes: one per group of ranges less than
/// `coalesce` bytes apart once sorted (object_store's `coalesce_ranges` rule).
fn coalesced_requests(ranges: &[Range<u64>], coalesce: u64) -> u64 {
    let mut sorted: Vec<&Range<u64>> = ranges.iter().collect();
    sorted.sort_unstable_by_key(|r| r.start);
    let mut groups = 0;
    let mut end: Option<u64> = None;
    for r in sorted {
        match end {
            Some(e) if r.start.saturating_sub(e) <= coalesce => end = Some(e.max(r.end)),
            _ => {
                groups += 1;
                end = Some(r.end);
            }
        }
    }
    groups
}

/// Counts one LIST page per `LIST_PAGE` objects a listing returns (one for an empty listing).
fn counted_listing(
    counters: Arc<Counted>,
    inner: BoxStream<'static, Result<ObjectMeta>>,
) -> BoxStream<'static, Result<ObjectMeta>> {
    counters.add(RequestKind::List, 1);
    let mut seen = 0u64;
    inner
        .inspect(move |item| {
            if item.is_ok() {
                if seen > 0 && seen.is_multiple_of(LIST_PAGE) {
                    counters.add(RequestKind::List, 1);
                }
                seen += 1;
            }
        })
        .boxed()
}

impl fmt::Debug for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingStore({})", self.inner)
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[derive(Debug)]
struct CountingUpload {
    inner: Box<dyn MultipartUpload>,
    counters: Arc<Counted>,
}

#[async_trait]
impl MultipartUpload for CountingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.counters.add(RequestKind::MultipartPart, 1);
        self.counters
            .add_written_bytes(data.content_length() as u64);
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.counters.add(RequestKind::MultipartComplete, 1);
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        // AbortMultipartUpload is a DELETE (not billed on S3).
        self.counters.add(RequestKind::Delete, 1);
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.counters.add(RequestKind::Put, 1);
        self.counters
            .add_written_bytes(payload.content_length() as u64);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.counters.add(RequestKind::MultipartCreate, 1);
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(CountingUpload {
            inner,
            counters: self.counters.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let kind = if options.head {
            RequestKind::Head
        } else if options.range.is_some() {
            RequestKind::GetRange
        } else {
            RequestKind::Get
        };
        self.counters.add(kind, 1);
        let r = self.inner.get_opts(location, options).await?;
        if kind != RequestKind::Head {
            self.counters.add_read_bytes(r.range.end - r.range.start);
        }
        Ok(r)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.counters.add(
            RequestKind::GetRange,
            coalesced_requests(ranges, OBJECT_STORE_COALESCE_DEFAULT),
        );
        let r = self.inner.get_ranges(location, ranges).await?;
        self.counters
            .add_read_bytes(r.iter().map(|b| b.len() as u64).sum());
        Ok(r)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        // The S3 client deletes in bulk: one request per 1,000 objects.
        let counters = self.counters.clone();
        let mut seen = 0u64;
        let locations = locations
            .inspect(move |p| {
                if p.is_ok() {
                    if seen.is_multiple_of(DELETE_BATCH) {
                        counters.add(RequestKind::Delete, 1);
                    }
                    seen += 1;
                }
            })
            .boxed();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        counted_listing(self.counters.clone(), self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        counted_listing(
            self.counters.clone(),
            self.inner.list_with_offset(prefix, offset),
        )
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.counters.add(RequestKind::List, 1);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.counters.add(RequestKind::Copy, 1);
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.counters.add(RequestKind::Copy, 1);
        self.counters.add(RequestKind::Delete, 1);
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    #[test]
    fn ranges_read_together_count_one_request_per_coalesced_group() {
        let mb = 1 << 20;
        // (ranges, coalesce distance, requests)
        let cases: &[(&[Range<u64>], u64, u64)] = &[
            (&[], mb, 0),
            (&[0..10, 0..10], mb, 1),
            (&[0..10, 20..30, 40..50], mb, 1),
            (&[0..10, 3 * mb..3 * mb + 1], mb, 2),
            // Unsorted, overlapping, and exactly `coalesce` apart (merged, as object_store does).
            (&[5 * mb..5 * mb + 1, 0..10, 5..8, 10 + mb..11 + mb], mb, 2),
            (&[0..10, 20..30], 0, 2),
        ];
        for (i, &(ranges, coalesce, want)) in cases.iter().enumerate() {
            assert_eq!(coalesced_requests(ranges, coalesce), want, "case {i}");
        }
    }

    #[test]
    fn every_request_is_counted_by_kind() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let counters = Arc::new(RequestCounters::default());
        let s = CountingStore::new(Arc::new(InMemory::new()), counters.clone());
        rt.block_on(async {
            for i in 0..1001 {
                s.put(&Path::from(format!("d/{i:04}")), Bytes::from("abcd").into())
                    .await
                    .unwrap();
            }
            let a = Path::from("d/0000");
            s.get(&a).await.unwrap().bytes().await.unwrap();
            s.get_range(&a, 1..3).await.unwrap();
            s.get_ranges(&a, &[0..1, 2..3]).await.unwrap();
            s.head(&a).await.unwrap();
            let n = s.list(Some(&Path::from("d"))).count().await;
            assert_eq!(n, 1001);
            s.copy(&a, &Path::from("e/x")).await.unwrap();
            s.delete(&Path::from("e/x")).await.unwrap();
            let mut up = s.put_multipart(&Path::from("m")).await.unwrap();
            up.put_part(Bytes::from("xy").into()).await.unwrap();
            up.complete().await.unwrap();
        });
        let c = counters.snapshot();
        let got: Vec<(&str, u64)> = c.by_kind().map(|(k, n)| (k.name(), n)).collect();
        assert_eq!(
            got,
            vec![
                ("get", 1),
                ("get_range", 2),
                ("head", 1),
                ("put", 1001),
                ("multipart_create", 1),
                ("multipart_part", 1),
                ("multipart_complete", 1),
                ("list", 2), // 1,001 objects: two pages
                ("delete", 1),
                ("copy", 1),
            ]
        );
        assert_eq!(c.bytes_written, 1001 * 4 + 2);
        assert_eq!(c.bytes_read, 4 + 2 + 2);
    }
}
