#!/usr/bin/env python3
"""Replica staleness under a paced write load (bench/replica-lag.sh runs it).

A writer connection sends SETs of VALUE-byte values at RATE bytes per second to the writer
(pipelined in ticks of 10 ms), each tick also setting `lag:clock` to the time it was sent. A
reader polls the replica for `lag:clock` every 20 ms: the staleness of what the replica serves
is the time since the newest stamp it returns was written. Prints one JSON object: the
achieved write rate, p50/p90/p99/max staleness in ms, and the samples count.

Only the standard library: a minimal RESP client.
"""

import argparse
import json
import socket
import threading
import time


class Resp:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def send(self, cmds):
        out = bytearray()
        for cmd in cmds:
            out += b"*%d\r\n" % len(cmd)
            for a in cmd:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return [self.reply() for _ in cmds]

    def reply(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        raise RuntimeError(f"unexpected reply {line!r}")


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writer", type=int, required=True)
    ap.add_argument("--replica", type=int, required=True)
    ap.add_argument("--rate-mb", type=float, required=True, help="MB/s of values written")
    ap.add_argument("--value", type=int, default=4096)
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--secs", type=float, default=20)
    a = ap.parse_args()

    w, r = Resp(a.writer), Resp(a.replica)
    value = b"v" * a.value
    per_sec = a.rate_mb * 1e6 / a.value
    tick = 0.01
    stop = threading.Event()
    samples = []

    def read():
        while not stop.is_set():
            got = r.send([["GET", "lag:clock"]])[0]
            now = time.time_ns()
            if got is not None:
                samples.append((now - int(got)) / 1e6)
            time.sleep(0.02)

    reader = threading.Thread(target=read)
    start = time.monotonic()
    sent = 0
    written = 0
    i = 0
    reader_started = False
    while (elapsed := time.monotonic() - start) < a.secs:
        due = int(per_sec * (elapsed + tick)) - sent
        cmds = []
        for _ in range(max(due, 0)):
            cmds.append(["SET", f"lag:{i % a.keys}", value])
            i += 1
        sent += max(due, 0)
        cmds.append(["SET", "lag:clock", str(time.time_ns())])
        w.send(cmds)
        written += max(due, 0) * a.value
        if not reader_started:
            reader.start()
            reader_started = True
        left = start + (int(elapsed / tick) + 1) * tick - time.monotonic()
        if left > 0:
            time.sleep(left)
    stop.set()
    reader.join()
    took = time.monotonic() - start
    # The first seconds follow the replica catching up with the stamp's first appearance.
    steady = samples[len(samples) // 10 :]
    print(
        json.dumps(
            {
                "target_mb_per_sec": a.rate_mb,
                "achieved_mb_per_sec": round(written / took / 1e6, 2),
                "value_bytes": a.value,
                "secs": round(took, 1),
                "samples": len(steady),
                "staleness_ms": {
                    "p50": round(pct(steady, 50), 1) if steady else None,
                    "p90": round(pct(steady, 90), 1) if steady else None,
                    "p99": round(pct(steady, 99), 1) if steady else None,
                    "max": round(max(steady), 1) if steady else None,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
