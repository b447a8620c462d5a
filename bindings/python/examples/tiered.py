"""A tiered database from Python: the last level on a capacity tier (a file:// directory
standing in for s3://bucket/prefix), a batch, a snapshot, a range scan, and where the bytes live.

    python bindings/python/examples/tiered.py [DIR] [NUM_KEYS]     (default 50000 keys)

The test command runs it on a small size after installing the binding (pip install ./bindings/python).
"""

import os
import shutil
import sys

import strata

base = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "./strata-data/python-tiered")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
shutil.rmtree(base, ignore_errors=True)

opts = dict(
    capacity="file://" + os.path.join(base, "capacity"),  # or "s3://bucket/prefix"
    write_buffer_size=256 << 10,  # small memtables and tables so a small load spans both tiers
    target_file_size_base=256 << 10,
    max_bytes_for_level_base=1 << 20,
)
with strata.open(os.path.join(base, "db"), **opts) as db:
    for start in range(0, n, 1000):
        batch = strata.WriteBatch()
        for i in range(start, min(start + 1000, n)):
            batch.put(b"user%08d" % i, (b"%08d" % i) * 12)
        db.write_batch(batch)
    snap = db.snapshot()
    db.put(b"user00000000", b"changed")
    assert db.get(b"user00000000", snapshot=snap) == b"00000000" * 12
    db.compact_range()

    keys = [k for k, _ in db.range(b"user00000100", b"user00000110")]
    assert keys == [b"user%08d" % i for i in range(100, 110)], keys
    s = db.stats()
    print(f"{n} keys: fast tier {s['fast_table_bytes']} bytes, "
          f"capacity tier {s['capacity_table_bytes']} bytes of tables")
    assert s["capacity_table_bytes"] > 0, s["text"]
    for i in range(1, n, max(1, n // 1000)):
        assert db.get(b"user%08d" % i) == (b"%08d" % i) * 12
print("ok: every sampled key read back across both tiers")
