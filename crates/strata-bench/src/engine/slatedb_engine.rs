//! [`SlateDbEngine`]: SlateDB behind [`KvEngine`], over the same object store as Strata's
//! capacity tier, wrapped in Strata's own `EmulatedStore` (equal latency and bandwidth), with an
//! in-memory block cache of the block-cache budget, a local disk cache of the persistent-cache
//! budget in the fast directory, the memtable budget as its L0 table size, equal bloom bits,
//! block size and compression. Without a capacity tier it runs on a local-filesystem object
//! store in the fast directory. SlateDB is async: calls are driven on a runtime this engine
//! owns. Compiled only with the `slatedb` cargo feature.

use std::sync::Arc;

use object_store::ObjectStore;
use slatedb::config::{
    CompressionCodec, FlushOptions, FlushType, ObjectStoreCacheOptions, Settings,
};
use slatedb::db_cache::moka::{MokaCache, MokaCacheOptions};
use slatedb::{BloomFilterPolicy, Db, SstBlockSize, WriteBatch};
use strata::stats::RequestCounters;
use strata::storage::object::{store_from_url, CountingStore, EmulatedStore, Emulation};

use super::{CompressionKind, EngineConfig, EngineCounters, EngineKind, KvEngine};

/// See the module docs.
pub struct SlateDbEngine {
    db: Db,
    rt: tokio::runtime::Runtime,
    emulated: Option<Arc<EmulatedStore>>,
    /// Every request SlateDB sends its store, by kind (Strata's own counting layer: both
    /// engines' bills are counted by one rule).
    requests: Arc<RequestCounters>,
    settings: Vec<(String, String)>,
    /// `--sync`: wait until each write is durable in the object store.
    sync: bool,
}

/// Local disk cache part size: SlateDB's default (4 MiB) would leave a cache of a tenth of a
/// benchmark's data only a few parts; 64 KiB keeps the cache's granularity near the blocks'.
const CACHE_PART_BYTES: usize = 64 << 10;

fn block_size(b: u64) -> SstBlockSize {
    match b {
        0..=1024 => SstBlockSize::Block1Kib,
        1025..=2048 => SstBlockSize::Block2Kib,
        2049..=4096 => SstBlockSize::Block4Kib,
        4097..=8192 => SstBlockSize::Block8Kib,
        8193..=16384 => SstBlockSize::Block16Kib,
        _ => SstBlockSize::Block32Kib,
    }
}

impl SlateDbEngine {
    pub fn open(cfg: &EngineConfig) -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let mut settings: Vec<(String, String)> = vec![("engine".into(), "slatedb".into())];
        let (store, prefix): (Arc<dyn ObjectStore>, String) = match &cfg.capacity {
            Some(url) => {
                let (s, p) = store_from_url(url)?;
                (s, p.to_string())
            }
            None => {
                let dir = cfg.fast_dir.join("objects");
                std::fs::create_dir_all(&dir)?;
                (
                    Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&dir)?),
                    String::new(),
                )
            }
        };
        let emulated = cfg.emulation.map(|e| {
            Arc::new(EmulatedStore::new(
                store.clone(),
                Emulation {
                    latency: e.latency,
                    bandwidth: e.bandwidth,
                    ..Default::default()
                },
            ))
        });
        let store: Arc<dyn ObjectStore> = match &emulated {
            Some(e) => e.clone(),
            None => store,
        };
        let requests = Arc::new(RequestCounters::default());
        let store: Arc<dyn ObjectStore> = Arc::new(CountingStore::new(store, requests.clone()));
        let mut s = Settings {
            l0_sst_size_bytes: cfg.write_buffer_bytes as usize,
            max_unflushed_bytes: (cfg.write_buffer_bytes as usize) * cfg.max_write_buffers,
            compression_codec: match cfg.compression {
                CompressionKind::None => None,
                CompressionKind::Lz4 => Some(CompressionCodec::Lz4),
                CompressionKind::Zstd => Some(CompressionCodec::Zstd),
            },
            ..Settings::default()
        };
        if cfg.persistent_cache_bytes > 0 {
            s.object_store_cache_options = ObjectStoreCacheOptions {
                root_folder: Some(cfg.fast_dir.join("slatedb-cache")),
                max_cache_size_bytes: Some(cfg.persistent_cache_bytes as usize),
                part_size_bytes: CACHE_PART_BYTES,
                ..Default::default()
            };
        }
        settings.push(("l0_sst_size_bytes".into(), s.l0_sst_size_bytes.to_string()));
        settings.push((
            "max_unflushed_bytes".into(),
            s.max_unflushed_bytes.to_string(),
        ));
        settings.push((
            "compression_codec".into(),
            format!("{:?}", s.compression_codec),
        ));
        settings.push((
            "object_store_cache".into(),
            format!(
                "{:?} {} bytes, parts of {} bytes",
                s.object_store_cache_options.root_folder,
                cfg.persistent_cache_bytes,
                s.object_store_cache_options.part_size_bytes
            ),
        ));
        settings.push((
            "block_cache".into(),
            format!("moka {} bytes", cfg.block_cache_bytes),
        ));
        settings.push(("block_size".into(), cfg.block_size.to_string()));
        settings.push(("bloom_bits_per_key".into(), cfg.bloom_bits.to_string()));
        settings.push(("wal".into(), "on (object store)".into()));
        settings.push(("sync".into(), format!("{} (await_durable)", cfg.sync)));
        let mut b = Db::builder(prefix, store)
            .with_settings(s)
            .with_sst_block_size(block_size(cfg.block_size));
        if cfg.block_cache_bytes > 0 {
            b = b.with_db_cache(
                Arc::new(MokaCache::new_with_opts(MokaCacheOptions {
                    max_capacity: cfg.block_cache_bytes,
                    ..Default::default()
                })),
                1,
            );
        } else {
            b = b.with_db_cache_disabled();
        }
        if cfg.bloom_bits > 0.0 {
            b = b.with_filter_policies(vec![Arc::new(BloomFilterPolicy::new(
                cfg.bloom_bits.round() as u32,
            ))]);
        }
        let db = rt.block_on(b.build())?;
        Ok(SlateDbEngine {
            db,
            rt,
            emulated,
            requests,
            settings,
            sync: cfg.sync,
        })
    }
}

impl SlateDbEngine {
    fn write(&self, b: WriteBatch) -> anyhow::Result<()> {
        self.rt.block_on(async {
            let h = self.db.write(b).await?;
            if self.sync {
                h.await_durable().await?;
            }
            Ok(())
        })
    }
}

impl KvEngine for SlateDbEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Slatedb
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }

    fn put_batch(&self, pairs: &[(&[u8], &[u8])]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in pairs {
            b.put(k, v);
        }
        self.write(b)
    }

    fn delete(&self, key: &[u8]) -> anyhow::Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.rt.block_on(self.db.get(key))?.is_some())
    }

    fn scan(&self, start: &[u8], n: usize, last: &mut Vec<u8>) -> anyhow::Result<usize> {
        self.rt.block_on(async {
            let mut it = self.db.scan(start.to_vec()..).await?;
            let mut got = 0;
            while got < n {
                let Some(kv) = it.next().await? else { break };
                std::hint::black_box(&kv.value);
                if got + 1 == n {
                    last.clear();
                    last.extend_from_slice(&kv.key);
                }
                got += 1;
            }
            Ok(got)
        })
    }

    fn settle(&self) -> anyhow::Result<()> {
        // Memtables to L0 tables in the object store (SlateDB has no wait for its compactor).
        self.rt.block_on(self.db.flush_with_options(FlushOptions {
            flush_type: FlushType::MemTable,
        }))?;
        Ok(())
    }

    fn counters(&self) -> EngineCounters {
        let e = self.emulated.as_ref().map(|e| e.stats());
        let g = |f: fn(&strata::storage::object::EmulationStats) -> u64| e.map(f);
        use std::sync::atomic::Ordering::Relaxed;
        EngineCounters {
            capacity_gets: g(|s| s.gets.load(Relaxed)),
            capacity_get_bytes: g(|s| s.bytes_read.load(Relaxed)),
            capacity_puts: g(|s| s.puts.load(Relaxed)),
            capacity_put_bytes: g(|s| s.bytes_written.load(Relaxed)),
            capacity_deletes: g(|s| s.deletes.load(Relaxed)),
            capacity_lists: g(|s| s.lists.load(Relaxed)),
            capacity_requests: Some(
                self.requests
                    .snapshot()
                    .by_kind()
                    .map(|(k, n)| (k.name().to_string(), n))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn stats_text(&self) -> String {
        String::new()
    }

    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }

    fn close(&self) -> anyhow::Result<()> {
        self.rt.block_on(self.db.close())?;
        Ok(())
    }
}
