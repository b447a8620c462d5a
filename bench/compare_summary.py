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

Rows also carry, where the runs measured them, medians for both engines of p50/p99.9
("strata_p50_us", "peer_p999_us", ...), "write_amp" and "space_amp" ({engine: median}), storage
bytes read/written and CPU µs per operation, peak resident memory and stall seconds
({"read_bytes_per_op": {engine: median}, ...} under "resources").

The scale suites (scale-100, scale-1k) name files <suite>-<engine>-<step>[-t<T>]-r<k>: the step
is one run on the database the previous step left; rows are named by operation (seekrandom-10,
readrandom-deleted, readseq-deleted...). The ycsb suite names files
ycsb-<engine>[-nohotrap]-<workload>[-t<T>]-r<k>; rows are ycsb-a ... ycsb-f, and Strata without
HotRAP is a peer of its own (strata-nohotrap).
"""
import glob
import json
import os
import re
import statistics
import sys

NAME = re.compile(
    r"^(?P<suite>scale-100|scale-1k|[a-z]+)-(?P<rest>.+?)(?:-t(?P<t>\d+))?(?:-r(?P<r>\d+))?$")
SCALE = ("scale-100", "scale-1k")
# The order the steps of a scale suite and the ycsb workloads run in (rows follow it).
STEPS = ["load", "read", "seek10", "seek100", "rww", "deleted", "scan", "a", "b", "c", "f", "d", "e"]
METRICS = ("write_amp", "space_amp")
RESOURCES = ("read_bytes_per_op", "write_bytes_per_op", "cpu_micros_per_op", "peak_rss_mib",
             "stall_secs")


def pct_of(phase, key="p99_us"):
    lat = phase.get("latency") or []
    if phase["name"] == "readwhilewriting":
        lat = [l for l in lat if l["op"] == "read"]
    return max((l[key] for l in lat), default=0.0)


def p99_of(phase):
    return pct_of(phase, "p99_us")


def row_name(suite, step, phase, args):
    """The row a phase of a scale-suite step or a ycsb run is."""
    name = phase["name"]
    if suite == "ycsb" and args.get("workload"):
        return args["workload"]
    if suite in SCALE:
        if name == "seekrandom":
            return f"seekrandom-{args['seek_nexts']}"
        if step in ("deleted", "scan") and name != "deleterandom":
            return f"{name}-deleted"
    return name


def figures(r, ph, last):
    """Everything a row shows of one phase."""
    proc = ph.get("process") or {}
    delta = (ph.get("tier") or {}).get("delta") or {}
    space = r.get("space") if last else None
    stall = delta.get("stall_micros")
    return {
        "ops": ph["ops_per_sec"],
        "p50": pct_of(ph, "p50_us"),
        "p99": pct_of(ph, "p99_us"),
        "p999": pct_of(ph, "p999_us"),
        "write_amp": (ph.get("tier") or {}).get("write_amp"),
        "space_amp": (space or {}).get("space_amp"),
        "read_bytes_per_op": proc.get("read_bytes_per_op"),
        "write_bytes_per_op": proc.get("write_bytes_per_op"),
        "cpu_micros_per_op": proc.get("cpu_micros_per_op"),
        "peak_rss_mib": proc["peak_rss_bytes"] / 2**20 if proc.get("peak_rss_bytes") else None,
        "stall_secs": stall / 1e6 if stall is not None else None,
    }


def load(out):
    """{(suite, benchmark, variant, threads): {engine: {repeat: figures}}}, machine, args, and
    each row's place in the order the runs produced them."""
    rows, machine, args, place = {}, None, None, {}
    sizes = set()
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
        suite = m.group("suite")
        rest = m.group("rest")
        variant = rest[len(engine) + 1:] if rest.startswith(engine + "-") else ""
        step = ""
        if suite in SCALE or suite == "ycsb":
            # The last part is the step (scale) or the workload (ycsb); before it, a variant.
            head, _, step = variant.rpartition("-")
            variant = ""
            if head == "nohotrap":
                engine = f"{engine}-nohotrap"
        threads = r["args"]["threads"]
        repeat = int(m.group("r") or 1)
        phases = [ph for ph in r["phases"] if ph["role"] != "load"]
        for i, ph in enumerate(phases):
            key = (suite, row_name(suite, step, ph, r["args"]), variant, threads)
            place.setdefault(key, (STEPS.index(step) if step in STEPS else 0, i))
            rows.setdefault(key, {}).setdefault(engine, {})[repeat] = figures(
                r, ph, i == len(phases) - 1)
        machine, args = r["machine"], r["args"]
        sizes.add((r["args"]["key_size"], r["args"]["value_size"]["min"]))
    return rows, machine, sizes, place


def main():
    out = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "unknown"
    rows, machine, sizes, place = load(out)
    if not rows:
        sys.exit(f"{out}: no strata-bench results")
    engines = sorted({e for by in rows.values() for e in by}, key=lambda e: (e != "strata", e))
    peers = [e for e in engines if e != "strata"]
    table = []
    for (suite, bench, variant, threads), by in rows.items():
        s = by.get("strata", {})
        for p in [p for p in peers if p in by] or [None]:
            q = by.get(p, {}) if p else {}
            paired = sorted(k for k in s if k in q and q[k]["ops"] > 0)
            ratios = [s[k]["ops"] / q[k]["ops"] for k in paired]

            def med(runs, f):
                v = [x[f] for x in runs.values() if x.get(f) is not None]
                return statistics.median(v) if v else None

            pair = {"strata": s, **({p: q} if p else {})}
            table.append({
                "suite": suite,
                "benchmark": bench,
                "variant": variant,
                "threads": threads,
                "peer": p,
                "ratio_median": statistics.median(ratios) if ratios else None,
                "ratio_min": min(ratios) if ratios else None,
                "ratio_max": max(ratios) if ratios else None,
                "strata_ops_median": med(s, "ops"),
                "peer_ops_median": med(q, "ops"),
                "strata_p99_us": med(s, "p99"),
                "peer_p99_us": med(q, "p99"),
                "strata_p50_us": med(s, "p50"),
                "peer_p50_us": med(q, "p50"),
                "strata_p999_us": med(s, "p999"),
                "peer_p999_us": med(q, "p999"),
                **{f: {e: med(runs, f) for e, runs in pair.items()} for f in METRICS},
                "resources": {f: {e: med(runs, f) for e, runs in pair.items()} for f in RESOURCES},
                "runs": len(paired) if p else len(s),
            })
    order = {"onetier": 0, "sync": 1, "tiered": 2, "scale-100": 3, "scale-1k": 4, "ycsb": 5}
    # Rows in the order the runs produced them.
    table.sort(key=lambda t: (order.get(t["suite"], 9), t["variant"], t["threads"],
                              place[(t["suite"], t["benchmark"], t["variant"], t["threads"])],
                              t["peer"] or ""))
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump([{k: v for k, v in t.items()} for t in table], f, indent=2)

    def num(x, fmt):
        return "" if x is None else format(x, fmt)

    print(f"### strata-bench comparison, commit `{commit}`\n")
    print(f"Machine: {machine['cpus']} cpus {machine.get('cpu_model') or ''}, "
          f"{(machine.get('memory_bytes') or 0) / 2**30:.1f} GiB, {machine['os']}; "
          f"records of {', '.join(f'{k}+{v} B' for k, v in sorted(sizes))}. Ratios are Strata / peer: "
          f"median of interleaved runs [min–max]; ops/s and p99 are medians.\n")
    tails = any(t["strata_p999_us"] for t in table if t["suite"] in SCALE + ("ycsb",))
    head = ["benchmark", "threads", "peer", "strata ops/s", "peer ops/s", "strata / peer",
            "strata p99 µs", "peer p99 µs", "runs"]
    if tails:
        head[6:8] = ["strata p50/p99/p99.9 µs", "peer p50/p99/p99.9 µs"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))

    def bench_of(t):
        return f"{t['suite']}: {t['benchmark']}" + (f" ({t['variant']})" if t["variant"] else "")

    def tail(t, who):
        if not tails:
            return num(t[f"{who}_p99_us"], ",.1f")
        return "/".join(num(t[f"{who}_{k}_us"], ",.0f") or "-" for k in ("p50", "p99", "p999"))

    for t in table:
        ratio = ""
        if t["ratio_median"] is not None:
            ratio = f"**{t['ratio_median']:.2f}×** [{t['ratio_min']:.2f}–{t['ratio_max']:.2f}]"
        print("| " + " | ".join([
            bench_of(t), str(t["threads"]), t["peer"] or "", num(t["strata_ops_median"], ",.0f"),
            num(t["peer_ops_median"], ",.0f"), ratio, tail(t, "strata"), tail(t, "peer"),
            str(t["runs"]),
        ]) + " |")

    # Where the runs measured them: amplification and what each operation cost the machine.
    measured = [t for t in table if t["peer"] and any(
        v is not None for f in RESOURCES for v in t["resources"][f].values())]
    if measured:
        print("\nAmplification and resources (Strata / peer, medians): write and space "
              "amplification; storage bytes read and written and CPU µs per operation "
              "(the whole process, background work included); peak resident memory; "
              "write-stall seconds.\n")
        cols = [("write amp", "write_amp", ".2f"), ("space amp", "space_amp", ".2f"),
                ("read B/op", "read_bytes_per_op", ",.0f"),
                ("written B/op", "write_bytes_per_op", ",.0f"),
                ("CPU µs/op", "cpu_micros_per_op", ",.1f"), ("peak MiB", "peak_rss_mib", ",.0f"),
                ("stall s", "stall_secs", ",.1f")]
        print("| benchmark | threads | peer | " + " | ".join(c[0] for c in cols) + " |")
        print("|" + "---|" * (3 + len(cols)))
        for t in measured:
            cells = []
            for _, f, fmt in cols:
                by = t[f] if f in METRICS else t["resources"][f]
                a, b = by.get("strata"), by.get(t["peer"])
                cells.append("" if a is None and b is None
                             else f"{num(a, fmt) or '-'} / {num(b, fmt) or '-'}")
            print("| " + " | ".join([bench_of(t), str(t["threads"]), t["peer"]] + cells) + " |")


if __name__ == "__main__":
    main()
