#!/usr/bin/env python3
"""Summarizes bench/forest.sh results: per suite and benchmark the median ops/s of each
compaction style, the split-forest/leveled ratio [min-max] over interleaved repeats, the suite's
write amplification, peak compaction space and tables probed per lookup; and the tiered
parallel-search comparison."""
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def suite_figures(d):
    """Per-benchmark ops/s and the suite's write amplification and compaction figures."""
    ops = {}
    written = user = 0
    comp = None
    for p in d["phases"]:
        ops[p["name"]] = p["ops_per_sec"]
        delta = (p.get("tier") or {}).get("delta") or {}
        written += (delta.get("flush_bytes") or 0) + (delta.get("compaction_write_bytes") or 0)
        user += delta.get("user_bytes_written") or 0
        comp = p.get("compaction") or comp
    return ops, (written / user if user else None), comp


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f"):
    return "n/a" if x is None else format(x, spec)


def main(out):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*-r*.json"))):
        m = re.match(r"(.+)-(strata|rocksdb)-(leveled|split-forest)-r(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        suite, engine, style, r = m.group(1), m.group(2), m.group(3), int(m.group(4))
        runs.setdefault((suite, engine), {}).setdefault(style, {})[r] = suite_figures(load(path))
    lines = ["| suite | engine | benchmark | leveled ops/s | split-forest ops/s | ratio [range] | WA leveled | WA forest | WA ratio | peak extra MiB (lev / forest) | tables/get (lev / forest) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (suite, engine), styles in sorted(runs.items()):
        lev, fo = styles.get("leveled", {}), styles.get("split-forest", {})
        common = sorted(set(lev) & set(fo))
        if not common:
            continue
        benches = list(lev[common[0]][0].keys())
        wa_l = med([lev[r][1] for r in common])
        wa_f = med([fo[r][1] for r in common])
        def cfig(side, key):
            return med([(side[r][2] or {}).get(key) for r in common])
        pe_l, pe_f = cfig(lev, "peak_extra_bytes"), cfig(fo, "peak_extra_bytes")
        tp_l, tp_f = cfig(lev, "table_probes_per_get"), cfig(fo, "table_probes_per_get")
        for i, b in enumerate(benches):
            ratios = [fo[r][0][b] / lev[r][0][b] for r in common if lev[r][0].get(b) and fo[r][0].get(b)]
            lines.append("| {} | {} | {} | {} | {} | {} [{}–{}] | {} | {} | {} | {} | {} |".format(
                suite, engine, b,
                fmt(med([lev[r][0].get(b) for r in common]), ".0f"),
                fmt(med([fo[r][0].get(b) for r in common]), ".0f"),
                fmt(med(ratios)), fmt(min(ratios) if ratios else None), fmt(max(ratios) if ratios else None),
                fmt(wa_l) if i == 0 else "", fmt(wa_f) if i == 0 else "",
                fmt(wa_f / wa_l if wa_l and wa_f else None) if i == 0 else "",
                "{} / {}".format(fmt(pe_l / 2**20 if pe_l is not None else None, ".1f"),
                                 fmt(pe_f / 2**20 if pe_f is not None else None, ".1f")) if i == 0 else "",
                "{} / {}".format(fmt(tp_l), fmt(tp_f)) if b.startswith("read") else ""))
    print("\n".join(lines))
    tiered = {}
    for path in sorted(glob.glob(os.path.join(out, "tiered-search*-r*.json"))):
        m = re.match(r"tiered-search(\d+)-r(\d+)\.json$", os.path.basename(path))
        d = load(path)
        for p in d["phases"]:
            if p["name"] in ("readrandom", "readmissing", "seekrandom"):
                read = next((l for l in p.get("latency") or [] if l.get("op") == "read"), {})
                tiered.setdefault((p["name"], int(m.group(1))), []).append(
                    (p["ops_per_sec"], read.get("p50_us"), read.get("p99_us"),
                     (p.get("compaction") or {}).get("sorted_runs"),
                     (p.get("compaction") or {}).get("parallel_searches")))
    if tiered:
        print("\n| tiered (5 ms, no Bloom filters) | search threads | ops/s | p50 us | p99 us | trees | parallel searches |")
        print("|---|---|---|---|---|---|---|")
        for (bench, st) in sorted(tiered, key=lambda k: (k[0], -k[1])):
            xs = tiered[(bench, st)]
            print("| {} ({} runs) | {} | {} | {} | {} | {} | {} |".format(
                bench, len(xs), st, fmt(med([x[0] for x in xs]), ".0f"), fmt(med([x[1] for x in xs]), ".0f"),
                fmt(med([x[2] for x in xs]), ".0f"), fmt(med([x[3] for x in xs]), ".0f"),
                fmt(med([x[4] for x in xs]), ".0f")))
        for bench in ("readrandom", "readmissing", "seekrandom"):
            if (bench, 16) in tiered and (bench, 0) in tiered:
                par = med([x[0] for x in tiered[(bench, 16)]])
                seq = med([x[0] for x in tiered[(bench, 0)]])
                print("\nparallel / sequential {} throughput: {}".format(bench, fmt(par / seq if seq else None)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
