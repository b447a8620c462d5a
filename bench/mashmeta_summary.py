#!/usr/bin/env python3
"""Summarizes bench/mashmeta.sh results: per key size, key order and read benchmark, the
median (range) over repeats of ops/s and capacity GETs per 1000 reads for each index kind, and
the capacity tables' metadata bytes on the fast tier."""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(xs, f="{:.0f}"):
    if not xs:
        return "-"
    return f"{f.format(med(xs))} ({f.format(min(xs))}–{f.format(max(xs))})"


def main(d):
    rows = defaultdict(lambda: defaultdict(list))
    meta = {}
    for path in sorted(glob.glob(os.path.join(d, "read*.json"))):
        name = os.path.basename(path)[:-5]
        bench, ks, order, idx, _rep = name.split("-")
        r = json.load(open(path))
        p = r["phases"][-1]
        ops = p["ops_per_sec"]
        gets = p["tier"]["delta"].get("capacity_gets") or 0
        reads = p.get("reads") or p.get("ops") or 1
        rows[(bench, ks, order)][idx].append((ops, 1000.0 * gets / reads))
        es = r.get("engine_stats")
        if isinstance(es, dict):
            meta[(ks, order, idx)] = (
                es.get("capacity_meta_bytes"),
                es.get("capacity_meta_tables"),
                es.get("capacity_trie_bytes"),
                es.get("capacity_index_bytes"),
                es.get("capacity_filter_bytes"),
            )
    print("| key | order | benchmark | block ops/s | mashmeta ops/s | ratio | block GETs/1k | mashmeta GETs/1k |")
    print("|---|---|---|---|---|---|---|---|")
    for (bench, ks, order), by in sorted(rows.items()):
        b = [x[0] for x in by.get("block", [])]
        m = [x[0] for x in by.get("mashmeta", [])]
        ratio = [y / x for x, y in zip(b, m) if x]
        print(
            f"| {ks} B | {order} | {bench} | {fmt(b)} | {fmt(m)} | {fmt(ratio, '{:.2f}')}× "
            f"| {fmt([x[1] for x in by.get('block', [])], '{:.1f}')} "
            f"| {fmt([x[1] for x in by.get('mashmeta', [])], '{:.1f}')} |"
        )
    print()
    print("| key | order | index | capacity meta bytes | tables | trie | block index | bloom | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (ks, order, idx), (total, tables, trie, index, bloom) in sorted(meta.items()):
        base = meta.get((ks, order, "block"), (None,))[0]
        ratio = f"{total / base:.2f}×" if total and base else "-"
        print(f"| {ks} B | {order} | {idx} | {total} | {tables} | {trie} | {index} | {bloom} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
