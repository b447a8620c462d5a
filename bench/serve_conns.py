#!/usr/bin/env python3
"""Connection benchmark for a Redis-protocol server: memory per idle client and accept rate.

Measures, against one running server (standard library only):

  idle      N clients connect one after another, each sends PING and reads +PONG, and all stay
            connected; the server's resident memory (VmRSS of --pid) is read before and after a
            settling pause: (after - before) / N is the memory per idle connection. Then every
            client sends PING at once and all replies are checked; RSS after that burst and a
            second pause is reported too (buffers the burst needed and the allocator kept).
  sequential  M connections opened one after another (connect, PING, +PONG, keep open): total
            time, the slowest connect, how many took more than 100 ms.
  burst     B connections started at once (non-blocking connects, then every one sends PING):
            how many were answered, and the time until the last answer.

Prints one JSON object. `bench/serve-conns.sh` runs it against strata serve and redis-server
interleaved and prints the comparison table.

  python3 bench/serve_conns.py --port 6379 --pid 1234 --idle 10000 --sequential 5000 --burst 1000
"""

import argparse
import json
import resource
import selectors
import socket
import sys
import time

PING = b"*1\r\n$4\r\nPING\r\n"
PONG = b"+PONG\r\n"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    return buf


def connect_ping(host, port, timeout):
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(PING)
    reply = read_exact(s, len(PONG))
    if reply != PONG:
        raise RuntimeError(f"unexpected reply {reply!r}")
    return s


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
    socks.clear()


def idle(args):
    time.sleep(0.5)
    before = rss_kib(args.pid)
    socks = []
    try:
        for _ in range(args.idle):
            socks.append(connect_ping(args.host, args.port, args.timeout))
        # Every client has been answered; let the server settle (freed buffers, idle shrink).
        time.sleep(args.settle)
        connected = rss_kib(args.pid)
        # Each connection answers PING again after the wait (all at once), and the server
        # settles again.
        for s in socks:
            s.sendall(PING)
        for s in socks:
            if read_exact(s, len(PONG)) != PONG:
                raise RuntimeError("bad PONG")
        time.sleep(args.settle)
        after = rss_kib(args.pid)
    finally:
        close_all(socks)
    return {
        "clients": args.idle,
        "rss_before_kib": before,
        "rss_connected_kib": connected,
        "rss_after_kib": after,
        "kib_per_connection": round((connected - before) / max(args.idle, 1), 2),
        "kib_per_connection_after_burst": round((after - before) / max(args.idle, 1), 2),
    }


def sequential(args):
    socks = []
    slowest = 0.0
    over_100ms = 0
    start = time.perf_counter()
    try:
        for _ in range(args.sequential):
            t = time.perf_counter()
            socks.append(connect_ping(args.host, args.port, args.timeout))
            d = time.perf_counter() - t
            slowest = max(slowest, d)
            over_100ms += d > 0.1
        total = time.perf_counter() - start
    finally:
        close_all(socks)
    return {
        "connections": args.sequential,
        "seconds": round(total, 3),
        "slowest_ms": round(slowest * 1000, 2),
        "over_100ms": over_100ms,
    }


def burst(args):
    sel = selectors.DefaultSelector()
    socks = []
    answered = 0
    failed = 0
    start = time.perf_counter()
    try:
        for _ in range(args.burst):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((args.host, args.port))
            socks.append(s)
            sel.register(s, selectors.EVENT_WRITE, [b""])
        pending = len(socks)
        deadline = start + args.timeout
        while pending and time.perf_counter() < deadline:
            for key, ev in sel.select(timeout=0.5):
                s, state = key.fileobj, key.data
                if ev & selectors.EVENT_WRITE:
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        failed += 1
                        pending -= 1
                        sel.unregister(s)
                        continue
                    s.sendall(PING)
                    sel.modify(s, selectors.EVENT_READ, state)
                    continue
                try:
                    chunk = s.recv(64)
                except OSError:
                    chunk = b""
                if not chunk:
                    failed += 1
                    pending -= 1
                    sel.unregister(s)
                    continue
                state[0] += chunk
                if len(state[0]) >= len(PONG):
                    answered += state[0] == PONG
                    failed += state[0] != PONG
                    pending -= 1
                    sel.unregister(s)
        total = time.perf_counter() - start
    finally:
        sel.close()
        close_all(socks)
    return {
        "connections": args.burst,
        "answered": answered,
        "failed": failed,
        "seconds": round(total, 3),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, help="server process, for its RSS (needed by --idle)")
    p.add_argument("--idle", type=int, default=0, help="idle clients to hold (0: skip)")
    p.add_argument("--sequential", type=int, default=0, help="connections in sequence (0: skip)")
    p.add_argument("--burst", type=int, default=0, help="connections at once (0: skip)")
    p.add_argument("--settle", type=float, default=2.0, help="seconds idle before measuring RSS")
    p.add_argument("--timeout", type=float, default=30.0, help="per connect / burst, seconds")
    args = p.parse_args()

    need = max(args.idle, args.sequential, args.burst) + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            sys.exit(f"need {need} open files, the hard limit is {hard} (ulimit -Hn)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))

    out = {}
    if args.idle:
        if not args.pid:
            sys.exit("--idle needs --pid")
        out["idle"] = idle(args)
    if args.sequential:
        out["sequential"] = sequential(args)
    if args.burst:
        out["burst"] = burst(args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
