"""The Python binding: basic operations, batches, iteration and range scans, snapshots,
stats, errors as exceptions, the context manager, a capacity tier, column families, and concurrent threads
(the GIL is released during engine calls)."""

import threading

import pytest

import strata


def test_put_get_delete_close(tmp_path):
    db = strata.open(str(tmp_path / "db"))
    db.put(b"k", b"v")
    assert db.get(b"k") == b"v"
    assert isinstance(db.get(b"k"), bytes)
    db.delete(b"k")
    assert db.get(b"k") is None
    assert db.get(b"missing") is None
    db.close()
    assert db.closed
    with pytest.raises(strata.ClosedError):
        db.get(b"k")
    db.close()  # twice is fine


def test_bytes_only(tmp_path):
    with strata.open(str(tmp_path / "db")) as db:
        with pytest.raises(TypeError):
            db.put("text", b"v")
        db.put(b"\x00\xff", b"\x00" * 1000)
        assert db.get(b"\x00\xff") == b"\x00" * 1000


def test_write_batch_and_list_of_ops(tmp_path):
    with strata.open(str(tmp_path / "db")) as db:
        b = strata.WriteBatch()
        b.put(b"a", b"1")
        b.put(b"b", b"2")
        b.delete(b"a")
        assert len(b) == 3
        db.write_batch(b, sync=True)
        assert db.get(b"a") is None and db.get(b"b") == b"2"
        db.write_batch([("put", b"c", b"3"), ("put", b"d", b"4"), ("delete_range", b"b", b"d")])
        assert [k for k, _ in db] == [b"d"]
        with pytest.raises(strata.InvalidArgumentError):
            db.write_batch([("frob", b"x")])


def test_merge_counters(tmp_path):
    one = (1).to_bytes(8, "little")
    with strata.open(str(tmp_path / "db"), merge_operator="strata.u64add") as db:
        for _ in range(5):
            db.merge(b"hits", one)
        b = strata.WriteBatch()
        b.merge(b"hits", (10).to_bytes(8, "little"))
        db.write_batch(b)
        db.write_batch([("merge", b"hits", one)])
        assert int.from_bytes(db.get(b"hits"), "little") == 16
        with pytest.raises(strata.InvalidArgumentError):
            db.merge(b"hits", b"not eight bytes")
    with strata.open(str(tmp_path / "plain")) as db:
        with pytest.raises(strata.InvalidArgumentError):
            db.merge(b"k", one)
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(str(tmp_path / "x"), merge_operator="no.such")


def test_iteration_and_range_scans(tmp_path):
    with strata.open(str(tmp_path / "db")) as db:
        for i in range(100):
            db.put(b"key%03d" % i, b"val%03d" % i)
        db.flush()
        for i in range(100, 120):  # some in the memtable, some in a table
            db.put(b"key%03d" % i, b"val%03d" % i)
        items = list(db.iter())
        assert len(items) == 120
        assert items[0] == (b"key000", b"val000")
        assert [k for k, _ in items] == sorted(k for k, _ in items)
        assert [k for k, _ in db.range(b"key010", b"key013")] == [b"key010", b"key011", b"key012"]
        rev = [k for k, _ in db.iter(lower=b"key100", reverse=True)]
        assert rev[0] == b"key119" and rev[-1] == b"key100" and len(rev) == 20
        assert list(db.range(b"x", b"y")) == []


def test_multi_get_answers_in_order_at_one_snapshot(tmp_path):
    with strata.open(str(tmp_path / "db"), write_buffer_size=64 * 1024) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v%d" % i)
        db.delete(b"k00007")
        keys = [b"k00003", b"nope", b"k00007", b"k01999", b"k00003"]
        assert db.multi_get(keys) == [b"v3", None, None, b"v1999", b"v3"]
        assert db.multi_get([]) == []
        with db.snapshot() as snap:
            db.put(b"k00003", b"new")
            assert db.multi_get([b"k00003"], snapshot=snap) == [b"v3"]
            assert db.multi_get([b"k00003"]) == [b"new"]
        with pytest.raises(strata.InvalidArgumentError):
            db.multi_get(["not bytes"])


def test_snapshot_sees_the_past(tmp_path):
    with strata.open(str(tmp_path / "db")) as db:
        db.put(b"k", b"old")
        with db.snapshot() as snap:
            db.put(b"k", b"new")
            db.put(b"k2", b"added")
            assert db.get(b"k", snapshot=snap) == b"old"
            assert db.get(b"k") == b"new"
            assert [k for k, _ in db.iter(snapshot=snap)] == [b"k"]
        with pytest.raises(strata.InvalidArgumentError):
            db.get(b"k", snapshot=snap)  # released


def test_stats_and_errors(tmp_path):
    path = str(tmp_path / "db")
    with strata.open(path) as db:
        db.put(b"k", b"v")
        db.get(b"k")
        s = db.stats()
        assert s["keys_written"] >= 1 and s["gets"] >= 1
        assert isinstance(s["levels"], list) and "text" in s
        # A second handle on the same directory is refused.
        with pytest.raises(strata.LockedError) as e:
            strata.open(path)
        assert isinstance(e.value, strata.StrataError)
    with pytest.raises(strata.InvalidArgumentError):
        strata.open(str(tmp_path / "other"), no_such_option=1)
    (tmp_path / "plain").mkdir()
    with pytest.raises(strata.StrataError):
        strata.open(str(tmp_path / "plain" / "db"), create_if_missing=False)


def test_capacity_tier_and_reopen(tmp_path):
    cap = "file://" + str(tmp_path / "capacity")
    opts = dict(capacity=cap, write_buffer_size=256 << 10, target_file_size_base=256 << 10,
                max_bytes_for_level_base=1 << 20, persistent_cache_size=16 << 20)
    with strata.open(str(tmp_path / "db"), **opts) as db:
        for i in range(20000):
            db.put(b"user%08d" % i, (b"%08d" % i) * 12)
        db.compact_range()
        s = db.stats()
        assert s["capacity_table_bytes"] > 0, s["text"]
    with strata.open(str(tmp_path / "db"), **opts) as db:
        assert db.get(b"user00012345") == b"00012345" * 12
    # persistent_cache_size turned on the LAP cache: its files are on the fast tier.
    assert (tmp_path / "db" / "lap").is_dir(), sorted(p.name for p in (tmp_path / "db").iterdir())


def test_threads_run_concurrently(tmp_path):
    with strata.open(str(tmp_path / "db")) as db:
        errors = []

        def work(t):
            try:
                for i in range(2000):
                    db.put(b"t%d-%05d" % (t, i), b"x" * 100)
                for i in range(2000):
                    assert db.get(b"t%d-%05d" % (t, i)) == b"x" * 100
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        assert len(list(db)) == 8000


def test_gil_is_released_during_engine_calls(tmp_path):
    """While one thread is inside a long engine call (one write of a 40 MB batch), another
    Python thread keeps running: it sees the call in progress for most of its duration. Were
    the GIL held, it could only observe the call's edges (a switch interval, ~5 ms)."""
    import time

    with strata.open(str(tmp_path / "db")) as db:
        batch = strata.WriteBatch()
        value = b"v" * 100
        for i in range(400_000):
            batch.put(b"k%07d" % i, value)
        state = {"in_call": False, "done": False, "call": 0.0}

        def write():
            state["in_call"] = True
            t = time.perf_counter()
            db.write_batch(batch)
            state["call"] = time.perf_counter() - t
            state["in_call"] = False
            state["done"] = True

        th = threading.Thread(target=write)
        first = last = None
        th.start()
        while not state["done"]:
            if state["in_call"]:
                now = time.perf_counter()
                first = first if first is not None else now
                last = now
        th.join()
        assert state["call"] > 0.05, "the call must take a while for this test to mean anything"
        seen = (last - first) if first is not None else 0.0
        assert seen > 0.5 * state["call"], (seen, state["call"])
        assert db.get(b"k0399999") == value


def test_column_families(tmp_path):
    path = str(tmp_path / "db")
    db = strata.open(path, write_buffer_size=64 * 1024)
    assert db.column_families() == ["default"]
    users = db.create_cf("users")
    events = db.create_cf("events", compaction_style="split_forest", write_buffer_size=32 * 1024)
    assert (users.name, events.name) == ("users", "events")
    assert users.id != events.id
    with pytest.raises(strata.InvalidArgumentError):
        db.create_cf("users")
    with pytest.raises(strata.InvalidArgumentError):
        db.create_cf("x", no_such_option=1)
    # LogStore placement per family: leveled families only.
    hot_cold = db.create_cf("hot-cold", logstore=True)
    db.put(b"t", b"1", cf=hot_cold)
    assert db.get(b"t", cf=hot_cold) == b"1"
    with pytest.raises(strata.InvalidArgumentError):
        db.create_cf("y", logstore=True, compaction_style="split_forest")

    db.put(b"k", b"default")
    db.put(b"k", b"user", cf=users)
    assert db.get(b"k") == b"default"
    assert db.get(b"k", cf=users) == b"user"
    assert db.get(b"k", cf=events) is None

    # One batch across families: atomic, one WAL record.
    wb = strata.WriteBatch()
    for i in range(500):
        wb.put(b"u%04d" % i, b"v%d" % i, cf=users)
        wb.put(b"e%04d" % i, b"u%04d" % i, cf=events)
    wb.delete(b"k", cf=users)
    db.write_batch(wb)
    assert db.get(b"k", cf=users) is None
    assert db.multi_get([b"u0001", b"nope"], cf=users) == [b"v1", None]
    assert [k for k, _ in db.range(b"e0000", b"e0003", cf=events)] == [b"e0000", b"e0001", b"e0002"]
    snap = db.snapshot()
    db.delete_range(b"u0000", b"u0100", cf=users)
    assert db.get(b"u0050", cf=users) is None
    assert db.get(b"u0050", cf=users, snapshot=snap) == b"v50"
    assert sum(1 for _ in db.iter(cf=users)) == 400
    db.close()

    db = strata.open(path)
    assert db.column_families() == ["default", "users", "events", "hot-cold"]
    users, events = db.cf("users"), db.cf("events")
    assert db.get(b"u0499", cf=users) == b"v499"
    assert sum(1 for _ in db.iter(cf=events)) == 500
    assert db.cf("nope") is None
    db.drop_cf("events")
    assert db.cf("events") is None
    with pytest.raises(strata.InvalidArgumentError):
        db.get(b"e0001", cf=events)
    db.close()
