//! Every object-store wrapper Strata writes passes object_store's own conformance suite:
//! `EmulatedStore` (latency, bandwidth, counting; faults off) over the in-memory store and over
//! the local file system store, with the same checks each inner store passes on its own.

use std::sync::Arc;
use std::time::Duration;

use object_store::integration::*;
use object_store::ObjectStore;
use strata::storage::object::{EmulatedStore, Emulation};

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
