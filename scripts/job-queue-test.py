#!/usr/bin/env python3
"""A real job-queue library, Celery (Redis as broker and result backend), end to end against a
running `strata serve`: a task sent and run by a worker, its result read back (the worker
waits in BRPOP; results and worker discovery go over Pub/Sub); and a worker killed with SIGKILL
mid-task, whose task — acknowledged late, so still unacknowledged — Celery's Redis transport
restores after the visibility timeout for a new worker, which runs it to completion, as Celery
promises for `acks_late` tasks.

Usage: scripts/job-queue-test.py PORT   (run with a Python that has `celery` installed; see
scripts/redis-py-tests.sh). Every wait is bounded; workers run in their own process groups
and are killed on exit.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

port = int(sys.argv[1])
url = f"redis://127.0.0.1:{port}/0"
work = tempfile.mkdtemp(prefix="strata-celery-")
with open(os.path.join(work, "strata_celery_tasks.py"), "w") as f:
    f.write(
        '''import os, time
from celery import Celery

url = os.environ["STRATA_URL"]
app = Celery("strata_celery_tasks", broker=url, backend=url)
app.conf.update(
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    # Unacknowledged tasks become visible again after 5 s, and the transport looks for them
    # every second (by default every 10 s, scanning on every 10th look).
    broker_transport_options={
        "visibility_timeout": 5,
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    },
)


@app.task
def add(a, b):
    return a + b


@app.task
def slow(marker):
    # The first run records that it started and never finishes in time (its worker is
    # killed); the redelivered run sees the record and completes.
    if os.path.exists(marker):
        return "redelivered"
    with open(marker, "w") as f:
        f.write("started")
    time.sleep(600)
    return "slept"
'''
    )
os.environ["STRATA_URL"] = url
sys.path.insert(0, work)
import strata_celery_tasks as tasks  # noqa: E402

celery_bin = os.path.join(os.path.dirname(sys.executable), "celery")
workers = []


def worker(name):
    p = subprocess.Popen(
        [celery_bin, "-A", "strata_celery_tasks", "worker", "--pool", "solo", "-n", name,
         "-l", "warning"],
        cwd=work,
        env=dict(os.environ, PYTHONPATH=work),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(work, f"{name}.log"), "w"),
    )
    workers.append(p)
    return p


def kill(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=30)


def wait_for(what, check, timeout=60):
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


try:
    tasks.app.backend.client.flushall()
    # 1. A task sent, run by a worker, its result read back.
    w = worker("one@strata")
    assert tasks.add.delay(2, 3).get(timeout=60) == 5
    print("celery: the worker ran add(2, 3), result 5")

    # 2. The worker is killed mid-task; a new worker gets the task again and completes it.
    marker = os.path.join(work, "slow-started")
    result = tasks.slow.delay(marker)
    wait_for("the slow task to start", lambda: os.path.exists(marker))
    kill(w)
    assert not result.ready(), "the killed task has no result"
    worker("two@strata")
    assert result.get(timeout=120) == "redelivered"
    print("celery: the task of the killed worker was redelivered and completed")
    print("celery end to end: ok")
finally:
    for p in workers:
        kill(p)
