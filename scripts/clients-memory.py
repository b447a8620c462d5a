#!/usr/bin/env python3
"""Server memory per client: opens N connections to a running server and reports the growth of
the server process's RSS per connection, for idle clients (each sent one PING), blocked ones
(each sent BLPOP on one of 100 empty keys, timeout 0) or subscribers (each SUBSCRIBEd to one of
100 channels).

Usage: scripts/clients-memory.py PORT N idle|blocked|subscribed SERVER_PID
(raise `ulimit -n` above N first). Loopback only.
"""
import socket
import sys
import time

port, n, mode, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])


def rss():
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


socks = []
base = rss()
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if mode == "blocked":
        k = f"k{i % 100}".encode()
        s.sendall(b"*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(k), k))
    elif mode == "subscribed":
        ch = f"ch{i % 100}".encode()
        s.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(ch), ch))
        s.recv(100)
    else:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        s.recv(100)
    socks.append(s)
time.sleep(2)
print(f"{mode}: {n} clients, RSS +{(rss() - base) / n:.0f} bytes per client")
