#!/usr/bin/env python3
"""Summarizes a bench/hotrap.sh directory: per workload and distribution, the median (and
range) of throughput and fast-tier hit rate with HotRAP on, off and with everything on the
fast tier, the ratios on/off, and each HotRAP run's distance to the ceiling
h*t_fast + (1-h)*t_capacity per read (h = 0.95; t_fast = the all-fast run's mean read latency;
t_capacity = the mean latency of a capacity read, from the HotRAP-off run of the same mix:
its mean read latency over its share of capacity reads)."""
import json
import os
import re
import statistics
import sys


def load(out):
    runs = {}
    for f in sorted(os.listdir(out)):
        m = re.match(r"(\w+)-(.+)-(on|off|fast)-(\d+)\.json$", f)
        if not m:
            continue
        w, d, c, _ = m.groups()
        r = json.load(open(os.path.join(out, f)))
        run = [p for p in r["phases"] if p["role"] == "run"][-1]
        read = next((l for l in run["latency"] if l["op"] == "read"), None)
        t = run["tier"]
        runs.setdefault((w, d), {}).setdefault(c, []).append(
            {
                "ops": run["ops_per_sec"],
                "hit": t.get("fast_hit_rate"),
                "read_mean_us": read["mean_us"] if read else None,
                "threads": run["threads"],
                "fast_bytes": t["delta"].get("fast_table_bytes"),
                "cap_bytes": t["delta"].get("capacity_table_bytes"),
                "hotrap": run.get("hotrap"),
            }
        )
    return runs


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, None
    return statistics.median(xs), min(xs), max(xs)


def fmt(m, scale=1.0, pct=False):
    v, lo, hi = m
    if v is None:
        return "n/a"
    if pct:
        return f"{v*100:.1f}% ({lo*100:.1f}–{hi*100:.1f})"
    return f"{v*scale:,.0f} ({lo*scale:,.0f}–{hi*scale:,.0f})"


def main(out):
    runs = load(out)
    print("| mix | HotRAP on ops/s | off ops/s | all fast ops/s | on / off | fast-tier hit rate on / off | on / ceiling | fast / capacity table bytes (on) |")
    print("|---|---|---|---|---|---|---|---|")
    for (w, d), cs in sorted(runs.items()):
        on, off, fast = cs.get("on", []), cs.get("off", []), cs.get("fast", [])
        ratio = [a["ops"] / b["ops"] for a, b in zip(on, off)] if on and off else []
        ceiling = []
        for i, a in enumerate(on):
            if not fast or not off:
                break
            f = fast[min(i, len(fast) - 1)]
            o = off[min(i, len(off) - 1)]
            if not (f["read_mean_us"] and o["read_mean_us"] and o["hit"] is not None):
                break
            cap_share = max(1.0 - o["hit"], 1e-9)
            t_cap = o["read_mean_us"] / cap_share
            per_read = 0.95 * f["read_mean_us"] + 0.05 * t_cap
            ceiling.append(a["ops"] / (a["threads"] * 1e6 / per_read))
        fb = med([a["fast_bytes"] for a in on])[0]
        cb = med([a["cap_bytes"] for a in on])[0]
        print(
            f"| {w} {d} | {fmt(med([a['ops'] for a in on]))} | {fmt(med([a['ops'] for a in off]))} "
            f"| {fmt(med([a['ops'] for a in fast]))} | {fmt(med(ratio), 1.0) if False else (f'{med(ratio)[0]:.2f}× ({med(ratio)[1]:.2f}–{med(ratio)[2]:.2f})' if ratio else 'n/a')} "
            f"| {fmt(med([a['hit'] for a in on]), pct=True)} / {fmt(med([a['hit'] for a in off]), pct=True)} "
            f"| {(f'{med(ceiling)[0]:.2f}× ({med(ceiling)[1]:.2f}–{med(ceiling)[2]:.2f})' if ceiling else 'n/a')} "
            f"| {fb/2**20 if fb else 0:.0f} / {cb/2**20 if cb else 0:.0f} MiB |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
