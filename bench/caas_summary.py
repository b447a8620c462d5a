#!/usr/bin/env python3
"""Summarizes bench/caas.sh: per workload and compaction mode, the median and range over the
repeats of ops/s, p99 write latency (µs), stall time (s), the bytes the database itself moved
over its capacity-tier link (GET + PUT, MiB) and remote/local job counts, and each mode's
median ops/s and p99 against local compaction."""
import glob
import json
import os
import statistics
import sys


def measured(report):
    phases = [p for p in report["phases"] if p["role"] in ("benchmark", "run")]
    return phases[-1]


def write_p99(phase):
    lat = [l for l in phase["latency"] if l["op"] in ("write", "update", "insert")]
    return max((l["p99_us"] for l in lat), default=0.0)


def main(out):
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        wl, mode, _ = os.path.basename(path)[:-5].rsplit("-", 2)
        r = json.load(open(path))
        p = measured(r)
        es = r["engine_stats"]
        rc = es.get("remote_compaction") or {}
        rows.setdefault((wl, mode), []).append(
            {
                "ops": p["ops_per_sec"],
                "p99": write_p99(p),
                "stall": es.get("stall_micros", 0) / 1e6,
                "link": (p["tier"]["delta"].get("capacity_get_bytes", 0)
                         + p["tier"]["delta"].get("capacity_put_bytes", 0)) / 2**20,
                "remote": rc.get("remote_jobs", 0),
                "local": rc.get("local_jobs", None),
            }
        )

    def fmt(vals, f="{:.0f}"):
        m = statistics.median(vals)
        return f"{f.format(m)} ({f.format(min(vals))}–{f.format(max(vals))})", m

    for wl in sorted({w for w, _ in rows}):
        print(f"## {wl}")
        print("| mode | ops/s | p99 write µs | stall s | link MiB | remote jobs | local jobs | n |")
        print("|---|---|---|---|---|---|---|---|")
        med = {}
        for mode in ("local", "remote", "hybrid"):
            rs = rows.get((wl, mode))
            if not rs:
                continue
            ops, mo = fmt([x["ops"] for x in rs])
            p99, mp = fmt([x["p99"] for x in rs])
            st, _ = fmt([x["stall"] for x in rs], "{:.1f}")
            link, _ = fmt([x["link"] for x in rs])
            rem, _ = fmt([x["remote"] for x in rs])
            loc = [x["local"] for x in rs if x["local"] is not None]
            loc = fmt(loc)[0] if loc else "all"
            med[mode] = (mo, mp)
            print(f"| {mode} | {ops} | {p99} | {st} | {link} | {rem} | {loc} | {len(rs)} |")
        if "local" in med:
            lo, lp = med["local"]
            for mode in ("remote", "hybrid"):
                if mode in med:
                    o, p = med[mode]
                    print(
                        f"\n{mode} vs local: ops/s {o / max(lo, 1e-9):.2f}x, "
                        f"p99 write {100 * (p - lp) / max(lp, 1e-9):+.0f}%"
                    )
        if "remote" in med and "hybrid" in med:
            print(f"\nhybrid vs remote: ops/s {med['hybrid'][0] / max(med['remote'][0], 1e-9):.2f}x")
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
