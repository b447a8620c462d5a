//! Every object-store wrapper Strata writes passes object_store's own conformance suite:
//! `EmulatedStore` (latency, bandwidth, counting; faults off) over the in-memory store and over
//! the local file system store, with the same checks each inner store passes on its own, and
//! `CountingStore` (the request bill) over memory. The S3-compatible server the tests run on
//! (`STRATA_S3_URL`: SeaweedFS in CI, or moto) passes the suite's checks Strata relies on —
//! conditional creates (the log location's lease), multipart uploads, listing after deletes,
//! ranged and conditional GETs — through `CountingStore`, in a bucket of its own.

use std::sync::Arc;
use std::time::Duration;

use object_store::integration::*;
use object_store::ObjectStore;
use strata::stats::{RequestCounters, RequestKind};
use strata::storage::object::{CountingStore, EmulatedStore, Emulation};

fn emulation() -> Emulation {
    Emulation {
        latency: Duration::from_micros(200),
        bandwidth: Some(1 << 30),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulated_over_memory_passes_the_suite() {
    let inner: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let store = EmulatedStore::new(inner, emulation());
    put_get_delete_list(&store).await;
    list_with_offset_exclusivity(&store).await;
    get_opts(&store).await;
    list_uses_directories_correctly(&store).await;
    list_with_delimiter(&store).await;
    rename_and_copy(&store).await;
    copy_if_not_exists(&store).await;
    copy_rename_nonexistent_object(&store).await;
    stream_get(&store).await;
    put_opts(&store, true).await;
    put_get_attributes(&store).await;
    multipart_out_of_order(&store).await;
    multipart_race_condition(&store, true).await;
    let s = store.stats();
    assert!(s.gets.load(std::sync::atomic::Ordering::Relaxed) > 0);
    assert!(s.puts.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulated_over_local_files_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn ObjectStore> =
        Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let store = EmulatedStore::new(inner, emulation());
    put_get_delete_list(&store).await;
    get_opts(&store).await;
    list_uses_directories_correctly(&store).await;
    list_with_delimiter(&store).await;
    rename_and_copy(&store).await;
    copy_if_not_exists(&store).await;
    copy_rename_nonexistent_object(&store).await;
    stream_get(&store).await;
    multipart_out_of_order(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_are_transient_errors_and_can_be_switched_off() {
    let inner: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let store = EmulatedStore::new(
        inner,
        Emulation {
            error_rate: 1.0,
            ..Default::default()
        },
    );
    let p = object_store::path::Path::from("x");
    let e = object_store::ObjectStoreExt::put(&store, &p, "v".into())
        .await
        .unwrap_err();
    assert!(matches!(e, object_store::Error::Generic { .. }), "{e}");
    store.set(Emulation::default());
    object_store::ObjectStoreExt::put(&store, &p, "v".into())
        .await
        .unwrap();
    assert_eq!(
        store
            .stats()
            .injected_errors
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counting_over_memory_passes_the_suite() {
    let counters = Arc::new(RequestCounters::default());
    let inner: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let store = CountingStore::new(inner, counters.clone());
    counted_suite(&store, &counters).await;
    copy_if_not_exists(&store).await;
    copy_rename_nonexistent_object(&store).await;
}

/// Creates `bucket` on the S3-compatible server at `endpoint` (an anonymous PUT, which the
/// test servers accept) and returns a store over it.
fn s3_bucket(endpoint: &str, bucket: &str) -> Arc<dyn ObjectStore> {
    use std::io::{Read, Write};
    let hostport = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut conn = std::net::TcpStream::connect(hostport).expect("connect to the S3 server");
    write!(
        conn,
        "PUT /{bucket} HTTP/1.1\r\nHost: {hostport}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.1 409"),
        "creating bucket {bucket}: {reply}"
    );
    Arc::new(
        object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .build()
            .unwrap(),
    )
}

/// The suite's checks Strata relies on, against the S3-compatible server the tests run on.
/// Runs when `STRATA_S3_URL` and `AWS_ENDPOINT_URL` are set (scripts/test.sh sets them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s3_server_passes_the_suite_through_the_counting_layer() {
    let (Ok(_), Ok(endpoint)) = (
        std::env::var("STRATA_S3_URL"),
        std::env::var("AWS_ENDPOINT_URL"),
    ) else {
        eprintln!("the_s3_server_passes_the_suite: STRATA_S3_URL is not set; skipped");
        return;
    };
    let bucket = format!("strata-conformance-{}", std::process::id());
    let inner = s3_bucket(&endpoint, &bucket);
    let counters = Arc::new(RequestCounters::default());
    let store = CountingStore::new(inner, counters.clone());
    // (Not `copy_if_not_exists` nor `copy_rename_nonexistent_object`: they need S3's
    // copy-if-not-exists, offered only with a configured mechanism; Strata never copies.)
    counted_suite(&store, &counters).await;
}

/// The suite's checks Strata relies on — among them create-if-absent (the lease's conditional
/// PUT, If-None-Match: *) and update-if-match — through a `CountingStore`, which must have
/// counted every request kind by the end.
async fn counted_suite(store: &CountingStore, counters: &RequestCounters) {
    put_get_delete_list(store).await;
    list_with_offset_exclusivity(store).await;
    get_opts(store).await;
    put_opts(store, true).await;
    list_uses_directories_correctly(store).await;
    list_with_delimiter(store).await;
    rename_and_copy(store).await;
    stream_get(store).await;
    multipart_race_condition(store, true).await;
    multipart_out_of_order(store).await;
    let c = counters.snapshot();
    for kind in RequestKind::ALL {
        assert!(c.get(kind) > 0, "{} never counted", kind.name());
    }
}

/// The capacity tier's table writer on the S3-compatible server: an object of several parts
/// (5 MiB, S3's smallest, the last one short) comes back byte for byte with its size, written
/// in appends that do not line up with the parts; an object within one part is one PUT; a
/// writer dropped before `sync` leaves nothing (its upload aborted). Runs when `STRATA_S3_URL`
/// is set (scripts/test.sh sets it).
#[test]
fn the_table_writer_uploads_parts_and_completes_on_s3() {
    use strata::storage::object::{CapacityOptions, CapacityTier};
    use strata::storage::WritableFile;
    let Ok(url) = std::env::var("STRATA_S3_URL") else {
        eprintln!(
            "the_table_writer_uploads_parts_and_completes_on_s3: STRATA_S3_URL is not set; skipped"
        );
        return;
    };
    let root = format!(
        "{}/table-writer-{}",
        url.trim_end_matches('/'),
        std::process::id()
    );
    let mut c = CapacityOptions::new(root);
    c.part_size = 5 << 20;
    let tier = CapacityTier::open(&c, None, Default::default()).unwrap();
    let data: Vec<u8> = (0..(12u32 << 20) + 12345)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let mut w = tier.writer("000001.sst");
    for chunk in data.chunks(1_000_003) {
        w.append(chunk).unwrap();
    }
    w.sync().unwrap();
    assert_eq!(w.len(), data.len() as u64);
    let mut small = tier.writer("000002.sst");
    small.append(&data[..4096]).unwrap();
    small.sync().unwrap();
    let mut dropped = tier.writer("000003.sst");
    dropped.append(&data[..(6 << 20)]).unwrap();
    drop(dropped);
    let listed: Vec<(String, u64)> = tier.list("").unwrap();
    assert_eq!(
        listed,
        vec![
            ("000001.sst".to_string(), data.len() as u64),
            ("000002.sst".to_string(), 4096)
        ]
    );
    let path = tier.path("000001.sst");
    for (offset, len) in [(0, 100), ((5 << 20) - 7, 20), (data.len() - 99, 99)] {
        let got = tier.get_range(&path, offset as u64, len).unwrap();
        assert_eq!(&got[..], &data[offset..offset + len], "at {offset}");
    }
}
