#!/usr/bin/env python3
"""Summarises a bench/compare.sh directory: median ratios of interleaved repeats.

    python3 bench/compare_summary.py DIR [COMMIT]

Reads every DIR/*.json written by strata-bench (schema strata-bench/1), named
<suite>-<engine>[-<variant>][-t<T>][-r<k>].json, pairs run k of Strata with run k of each peer
for every (suite, benchmark, variant, threads), and prints a Markdown table (median ratio with
[min-max], median ops/s and median p99 of each engine); writes DIR/compare.json, a list of rows
{"suite", "benchmark", "threads", "peer", "ratio_median", "ratio_min", "ratio_max",
"strata_p99_us", "peer_p99_us", "runs"} (plus "variant" and the median ops/s of both engines).
The p99 is the write p99 for write benchmarks and the read p99 for readwhilewriting.
"""
import glob
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"^(?P<suite>[a-z]+)-(?P<rest>.+?)(?:-t(?P<t>\d+))?(?:-r(?P<r>\d+))?$")


def p99_of(phase):
    lat = phase.get("latency") or []
    if phase["name"] == "readwhilewriting":
        lat = [l for l in lat if l["op"] == "read"]
    return max((l["p99_us"] for l in lat), default=0.0)


def load(out):
    """{(suite, benchmark, variant, threads): {engine: {repeat: (ops, p99)}}}, machine, args."""
    rows, machine, args = {}, None, None
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name in ("compare", "requests"):
            continue
        with open(path) as f:
            r = json.load(f)
        if r.get("schema") != "strata-bench/1":
            sys.exit(f"{path}: unknown schema {r.get('schema')!r}")
        m = NAME.match(name)
        if not m:
            sys.exit(f"{path}: unexpected file name")
        if m.group("suite") == "requests":
            continue  # bench/requests_summary.py
        engine = r["engine"]
        rest = m.group("rest")
        variant = rest[len(engine) + 1:] if rest.startswith(engine + "-") else ""
        threads = r["args"]["threads"]
        repeat = int(m.group("r") or 1)
        for ph in r["phases"]:
            if ph["role"] == "load":
                continue
            key = (m.group("suite"), ph["name"], variant, threads)
            rows.setdefault(key, {}).setdefault(engine, {})[repeat] = (ph["ops_per_sec"], p99_of(ph))
        machine, args = r["machine"], r["args"]
    return rows, machine, args


def main():
    out = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "unknown"
    rows, machine, args = load(out)
    if not rows:
        sys.exit(f"{out}: no strata-bench results")
    engines = sorted({e for by in rows.values() for e in by}, key=lambda e: (e != "strata", e))
    peers = [e for e in engines if e != "strata"]
    table = []
    for (suite, bench, variant, threads), by in rows.items():
        s = by.get("strata", {})
        for p in peers or [None]:
            q = by.get(p, {}) if p else {}
            paired = sorted(k for k in s if k in q and q[k][0] > 0)
            ratios = [s[k][0] / q[k][0] for k in paired]
            table.append({
                "suite": suite,
                "benchmark": bench,
                "variant": variant,
                "threads": threads,
                "peer": p,
                "ratio_median": statistics.median(ratios) if ratios else None,
                "ratio_min": min(ratios) if ratios else None,
                "ratio_max": max(ratios) if ratios else None,
                "strata_ops_median": statistics.median(v[0] for v in s.values()) if s else None,
                "peer_ops_median": statistics.median(v[0] for v in q.values()) if q else None,
                "strata_p99_us": statistics.median(v[1] for v in s.values()) if s else None,
                "peer_p99_us": statistics.median(v[1] for v in q.values()) if q else None,
                "runs": len(paired) if p else len(s),
            })
    order = {"onetier": 0, "sync": 1, "tiered": 2}
    table.sort(key=lambda t: (order.get(t["suite"], 9), t["variant"], t["threads"], t["peer"] or ""))
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump([{k: v for k, v in t.items()} for t in table], f, indent=2)

    def num(x, fmt):
        return "" if x is None else format(x, fmt)

    print(f"### strata-bench comparison, commit `{commit}`\n")
    print(f"Machine: {machine['cpus']} cpus {machine.get('cpu_model') or ''}, "
          f"{(machine.get('memory_bytes') or 0) / 2**30:.1f} GiB, {machine['os']}; "
          f"records of {args['key_size']}+{args['value_size']['min']} B. Ratios are Strata / peer: "
          f"median of interleaved runs [min–max]; ops/s and p99 are medians.\n")
    head = ["benchmark", "threads", "peer", "strata ops/s", "peer ops/s", "strata / peer",
            "strata p99 µs", "peer p99 µs", "runs"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for t in table:
        bench = f"{t['suite']}: {t['benchmark']}" + (f" ({t['variant']})" if t["variant"] else "")
        ratio = ""
        if t["ratio_median"] is not None:
            ratio = f"**{t['ratio_median']:.2f}×** [{t['ratio_min']:.2f}–{t['ratio_max']:.2f}]"
        print("| " + " | ".join([
            bench, str(t["threads"]), t["peer"] or "", num(t["strata_ops_median"], ",.0f"),
            num(t["peer_ops_median"], ",.0f"), ratio, num(t["strata_p99_us"], ",.1f"),
            num(t["peer_p99_us"], ",.1f"), str(t["runs"]),
        ]) + " |")


if __name__ == "__main__":
    main()
