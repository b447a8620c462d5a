#!/usr/bin/env python3
"""Summarizes a bench/logstore.sh directory: per workload, the median (and range) of ops/s and
of the fast tier's share of table reads for static placement, LogStore, HotRAP and
LogStore+HotRAP, the ratios against static, and LogStore's compactions by kind. For the burst
workload the write burst (overwrite) and the reads after it are reported separately."""
import json
import os
import re
import statistics
import sys

CONFIGS = ["static", "logstore", "hotrap", "both"]


def load(out):
    runs = {}
    for f in sorted(os.listdir(out)):
        m = re.match(r"(\w+)-(static|logstore|hotrap|both)-(\d+)\.json$", f)
        if not m:
            continue
        w, c, _ = m.groups()
        r = json.load(open(os.path.join(out, f)))
        for p in r["phases"]:
            if w == "burst":
                name = {"overwrite": "burst writes", "readrandom": "burst reads"}.get(p["name"])
            else:
                name = w if p["role"] == "run" else None
            if not name:
                continue
            t = p["tier"]
            runs.setdefault(name, {}).setdefault(c, []).append(
                {
                    "ops": p["ops_per_sec"],
                    "hit": t.get("fast_hit_rate"),
                    "logstore": p.get("logstore"),
                    "stall": t["delta"].get("stall_micros"),
                }
            )
    return runs


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, None
    return statistics.median(xs), min(xs), max(xs)


def fmt(m, pct=False):
    v, lo, hi = m
    if v is None:
        return "n/a"
    if pct:
        return f"{v*100:.1f}% ({lo*100:.1f}–{hi*100:.1f})"
    return f"{v:,.0f} ({lo:,.0f}–{hi:,.0f})"


def ratio(a, b):
    rs = [x["ops"] / y["ops"] for x, y in zip(a, b) if y["ops"]]
    if not rs:
        return "n/a"
    m = med(rs)
    return f"{m[0]:.2f}× ({m[1]:.2f}–{m[2]:.2f})"


def main(out):
    runs = load(out)
    print("| workload | " + " | ".join(f"{c} ops/s" for c in CONFIGS)
          + " | logstore / static | hotrap / static | both / static | fast-tier share of table reads (static / logstore / hotrap / both) |")
    print("|---|" + "---|" * (len(CONFIGS) + 4))
    for w, cs in sorted(runs.items()):
        st = cs.get("static", [])
        cells = [fmt(med([a["ops"] for a in cs.get(c, [])])) for c in CONFIGS]
        hits = " / ".join(fmt(med([a["hit"] for a in cs.get(c, [])]), pct=True) for c in CONFIGS)
        print(f"| {w} | " + " | ".join(cells)
              + f" | {ratio(cs.get('logstore', []), st)} | {ratio(cs.get('hotrap', []), st)}"
              + f" | {ratio(cs.get('both', []), st)} | {hits} |")
    print()
    print("LogStore's compactions at the end of each run (median over repeats):")
    print()
    print("| workload | config | informed | reverse (MiB) | staging (MiB) | deferred ticks / ticks |")
    print("|---|---|---|---|---|---|")
    for w, cs in sorted(runs.items()):
        for c in ("logstore", "both"):
            ls = [a["logstore"] for a in cs.get(c, []) if a["logstore"]]
            if not ls:
                continue
            g = lambda k: statistics.median(x[k] for x in ls)
            print(f"| {w} | {c} | {g('informed_compactions'):.0f} | {g('reverse_compactions'):.0f} "
                  f"({g('reverse_bytes') / 2**20:.0f}) | {g('staging_compactions'):.0f} "
                  f"({g('staging_bytes') / 2**20:.0f}) | {g('deferred_ticks'):.0f} / {g('ticks'):.0f} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
