//! The control plane over TLS (rustls) with a self-signed certificate: the engine's client and
//! a raw client reach it with the CA and the token; a call without the token, and a plain-text
//! client, are refused.

use std::time::Duration;

use strata::compaction::remote::{
    CompactionService, ControlMetadata, JobStorage, RemoteJob, Started,
};
use strata::compaction::{CompactionInput, CompactionJob, CompactionReason};
use strata_compaction::plane::{self, ControlPlane, PlaneConfig};
use strata_compaction::proto::compaction_service_client::CompactionServiceClient;
use strata_compaction::proto::StatusRequest;
use strata_compaction::{auth, tls, RemoteService};
use tonic::transport::Endpoint;

const TOKEN: &str = "tls-token-123";

fn job(dir: &std::path::Path) -> RemoteJob {
    let meta = strata::version::FileMeta {
        id: 7,
        size: 100,
        smallest: b"a".to_vec(),
        largest: b"z".to_vec(),
        largest_exclusive: false,
        smallest_seq: 1,
        largest_seq: 2,
        num_entries: 2,
        num_deletions: 0,
        num_range_deletions: 0,
        tier: strata::tier::Tier::Fast,
    };
    let j = CompactionJob {
        id: 1,
        reason: CompactionReason::L0FileCount,
        inputs: vec![CompactionInput {
            level: 0,
            files: vec![meta],
            run: 0,
        }],
        output_level: 1,
        output_tier: strata::tier::Tier::Fast,
        route: None,
        promoted: Vec::new(),
        forest: None,
        snapshots: Vec::new(),
        bottommost: true,
        target_file_size: 1 << 20,
        table: strata::sst::TableBuilderOptions {
            data_block_hash_ratio: 0.75,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: strata::Compression::None,
            capacity_index: strata::sst::index::IndexKind::Block,
            bytes_per_sync: 0,
        },
        score: 1.0,
        filter: None,
        merge_operator: None,
        output_ids: None,
    };
    RemoteJob::new(
        ControlMetadata::of("tls-test", &j),
        JobStorage {
            fast_dir: dir.to_path_buf(),
            capacity_url: None,
        },
        j,
        100,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(plane::serve(
        addr,
        ControlPlane::new(PlaneConfig::default(), TOKEN),
        Some(tls::server(&cert, &key).unwrap()),
        async {
            let _ = stopped.await;
        },
    ));
    let url = format!("https://127.0.0.1:{port}");
    let ep = Endpoint::from_shared(url.clone())
        .unwrap()
        .tls_config(tls::client(&cert, Some("localhost")).unwrap())
        .unwrap();
    let mut client = None;
    for _ in 0..100 {
        if let Ok(c) = ep.connect().await {
            client = Some(CompactionServiceClient::new(c));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = client.expect("the TLS control plane accepts connections");
    // Without the token: refused; with it: answered.
    let e = client
        .status(tonic::Request::new(StatusRequest {}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);
    let mut r = tonic::Request::new(StatusRequest {});
    auth::attach(&mut r, TOKEN).unwrap();
    let s = client.status(r).await.unwrap().into_inner();
    assert_eq!(s.counters.unwrap().rejected_auth, 1);
    // The engine's client over TLS: with no worker registered the job comes back "use local".
    let tls_cfg = tls::client(&cert, Some("localhost")).unwrap();
    let (u, d) = (url.clone(), dir.path().to_path_buf());
    let started = tokio::task::spawn_blocking(move || {
        let svc = RemoteService::connect(&u, TOKEN, Some(tls_cfg)).unwrap();
        svc.start(&job(&d))
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        matches!(&started, Started::UseLocal(why) if why.contains("no compaction workers")),
        "{started:?}"
    );
    // A plain-text client cannot talk to it.
    let plain = Endpoint::from_shared(format!("http://127.0.0.1:{port}")).unwrap();
    let mut r = tonic::Request::new(StatusRequest {});
    auth::attach(&mut r, TOKEN).unwrap();
    let refused = match plain.connect().await {
        Ok(c) => CompactionServiceClient::new(c).status(r).await.is_err(),
        Err(_) => true,
    };
    assert!(refused, "plain text must not reach a TLS control plane");
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
