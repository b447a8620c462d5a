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
  blocked   K clients connect (PING), then each sends `BLPOP bench-q:<i> 0` on a key of its own
            and stays blocked: RSS before and after a settling pause gives the memory per
            blocked client (connection included). A reply before the measurement is an error;
            afterwards one element pushed to each of a sample of keys must reach its client.
  subscribers  S clients connect (PING), then each sends `SUBSCRIBE bench-news bench-ch:<i>`
            (a channel all share and one of its own) and reads both confirmations: memory per
            subscriber as above; then one PUBLISH to the shared channel must reach every one.

Prints one JSON object. `bench/serve-conns.sh` runs it against strata serve and redis-server
interleaved and prints the comparison table.

  python3 bench/serve_conns.py --port 6379 --pid 1234 --idle 10000 --sequential 5000 --burst 1000
  python3 bench/serve_conns.py --port 6379 --pid 1234 --blocked 10000 --subscribers 1000
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


def command(*args):
    """One request in RESP (bulk strings)."""
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_reply(sock, timeout, count=1):
    """Reads `count` whole replies (of any shape) and returns their bytes, all of them (a
    server may send several in one segment, so they are read together); raises on a timeout."""
    sock.settimeout(timeout)
    buf = b""
    need = count  # values still to read, nested ones included
    pos = 0
    while True:
        progressed = True
        while need and progressed:
            progressed = False
            end = buf.find(b"\r\n", pos)
            if end < 0:
                break
            kind, rest, nxt = buf[pos:pos + 1], buf[pos + 1:end], end + 2
            if kind in (b"+", b"-", b":"):
                need, pos, progressed = need - 1, nxt, True
            elif kind == b"$":
                n = int(rest)
                if n < 0:
                    need, pos, progressed = need - 1, nxt, True
                elif len(buf) >= nxt + n + 2:
                    need, pos, progressed = need - 1, nxt + n + 2, True
            elif kind in (b"*", b">"):
                n = int(rest)
                need += n - 1 if n > 0 else -1
                pos, progressed = nxt, True
            else:
                raise RuntimeError(f"unexpected reply {buf!r}")
        if not need:
            if pos != len(buf):
                raise RuntimeError(f"more than {count} replies: {buf!r}")
            return buf
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk


def silent(socks):
    """How many of `socks` have bytes to read (a blocked or subscribed client must have none)."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    ready = len(sel.select(timeout=0))
    sel.close()
    return ready


def held(args, n, request, check, finish):
    """N clients connect, each sends `request(i)` (and `check` reads what it must answer at
    once), the server settles: RSS before and after, per client. `finish(socks)` then verifies
    the clients are still waiting as they should and returns what it counted."""
    time.sleep(0.5)
    before = rss_kib(args.pid)
    socks = []
    try:
        for _ in range(n):
            socks.append(connect_ping(args.host, args.port, args.timeout))
        for i, s in enumerate(socks):
            s.sendall(request(i))
            check(s, i)
        time.sleep(args.settle)
        answered_early = silent(socks)
        during = rss_kib(args.pid)
        verified = finish(socks)
    finally:
        close_all(socks)
    return {
        "clients": n,
        "rss_before_kib": before,
        "rss_held_kib": during,
        "kib_per_client": round((during - before) / max(n, 1), 2),
        "answered_early": answered_early,
        "verified": verified,
    }


def blocked(args):
    sample = min(args.blocked, 100)

    def finish(socks):
        pusher = connect_ping(args.host, args.port, args.timeout)
        served = 0
        try:
            step = max(len(socks) // sample, 1)
            for i in range(0, len(socks), step)[:sample]:
                pusher.sendall(command("RPUSH", f"bench-q:{i}", "job"))
                read_reply(pusher, args.timeout)
                got = read_reply(socks[i], args.timeout)
                served += got.endswith(b"$3\r\njob\r\n")
        finally:
            pusher.close()
        return served

    out = held(
        args,
        args.blocked,
        lambda i: command("BLPOP", f"bench-q:{i}", 0),
        lambda s, i: None,
        finish,
    )
    out["sample"] = sample
    return out


def subscribers(args):
    def check(s, i):
        # Two confirmations: the shared channel, then the client's own.
        if read_reply(s, args.timeout, 2).count(b"subscribe") != 2:
            raise RuntimeError("no subscribe confirmation")

    def finish(socks):
        publisher = connect_ping(args.host, args.port, args.timeout)
        try:
            publisher.sendall(command("PUBLISH", "bench-news", "hello"))
            receivers = read_reply(publisher, args.timeout)
        finally:
            publisher.close()
        got = sum(read_reply(s, args.timeout).endswith(b"$5\r\nhello\r\n") for s in socks)
        if receivers != b":%d\r\n" % len(socks):
            raise RuntimeError(f"PUBLISH reached {receivers!r}, not {len(socks)}")
        return got

    return held(
        args,
        args.subscribers,
        lambda i: command("SUBSCRIBE", "bench-news", f"bench-ch:{i}"),
        check,
        finish,
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, help="server process, for its RSS (needed by --idle)")
    p.add_argument("--idle", type=int, default=0, help="idle clients to hold (0: skip)")
    p.add_argument("--sequential", type=int, default=0, help="connections in sequence (0: skip)")
    p.add_argument("--burst", type=int, default=0, help="connections at once (0: skip)")
    p.add_argument("--blocked", type=int, default=0, help="clients blocked in BLPOP (0: skip)")
    p.add_argument("--subscribers", type=int, default=0, help="subscribed clients (0: skip)")
    p.add_argument("--settle", type=float, default=2.0, help="seconds idle before measuring RSS")
    p.add_argument("--timeout", type=float, default=30.0, help="per connect / burst, seconds")
    args = p.parse_args()

    need = max(args.idle, args.sequential, args.burst, args.blocked, args.subscribers) + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            sys.exit(f"need {need} open files, the hard limit is {hard} (ulimit -Hn)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))

    out = {}
    if (args.idle or args.blocked or args.subscribers) and not args.pid:
        sys.exit("--idle, --blocked and --subscribers need --pid")
    if args.idle:
        out["idle"] = idle(args)
    if args.blocked:
        out["blocked"] = blocked(args)
    if args.subscribers:
        out["subscribers"] = subscribers(args)
    if args.sequential:
        out["sequential"] = sequential(args)
    if args.burst:
        out["burst"] = burst(args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
