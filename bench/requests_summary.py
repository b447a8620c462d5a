#!/usr/bin/env python3
"""Summarises the `requests` suite of a bench/compare.sh directory: object-store requests per
1,000 operations and their monthly cost, Strata beside SlateDB, and Strata under a request
budget.

    python3 bench/requests_summary.py DIR [COMMIT]

Reads DIR/requests-<engine>-<variant>-r<k>.json (variant: a, b, c, or budget-a) written by
strata-bench. Rows: the load (every run's load phase) and the run phase of YCSB-A, B and C.
For each row and engine: the median over repeats of requests per 1,000 operations, of the
requests' monthly cost at the phase's rate (S3 Standard prices unless --price said otherwise),
and of ops/s; the ratio pairs repeat k of Strata with repeat k of SlateDB (median [min-max]).
Writes DIR/requests.json with the same figures.
"""
import glob
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"^requests-(?P<engine>strata|slatedb)-(?P<variant>.+)-r(?P<r>\d+)$")


def load(out):
    """{(row, variant): {engine: {repeat: phase}}}, machine, args of one run."""
    rows, machine, args = {}, None, None
    for path in sorted(glob.glob(os.path.join(out, "requests-*.json"))):
        m = NAME.match(os.path.basename(path)[:-5])
        if not m:
            sys.exit(f"{path}: unexpected file name")
        with open(path) as f:
            r = json.load(f)
        variant, engine, rep = m.group("variant"), m.group("engine"), int(m.group("r"))
        wl = variant.split("-")[-1].upper()
        budget = variant.startswith("budget")
        for ph in r["phases"]:
            row = "load" if ph["role"] == "load" else f"YCSB-{wl}"
            if row == "load" and budget:
                row = "load (budget)"
            key = (row, "budget" if budget else "")
            # Three loads per engine and repeat (one per workload): keep them all.
            rows.setdefault(key, {}).setdefault(engine, {}).setdefault(rep, []).append(ph)
        machine, args = r["machine"], r["args"]
    return rows, machine, args


def per_kop(ph):
    return ph["tier"].get("capacity_requests_per_kop")


def rate(ph):
    n = sum((ph["tier"].get("capacity_requests") or {}).values())
    return n / ph["elapsed_secs"] if ph["elapsed_secs"] > 0 else 0.0


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    out = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "unknown"
    rows, machine, args = load(out)
    if not rows:
        sys.exit(f"{out}: no requests-suite results")
    table = []
    order = {"load": 0, "YCSB-A": 1, "YCSB-B": 2, "YCSB-C": 3, "load (budget)": 4}
    for (row, variant), by in sorted(rows.items(), key=lambda kv: (kv[0][1], order.get(kv[0][0], 9))):
        t = {"row": row, "variant": variant}
        for e in ("strata", "slatedb"):
            reps = by.get(e, {})
            phases = [p for ps in reps.values() for p in ps]
            t[f"{e}_requests_per_kop"] = med(per_kop(p) for p in phases)
            t[f"{e}_requests_per_sec"] = med(rate(p) for p in phases)
            t[f"{e}_requests_usd_per_month"] = med(p["cost"]["requests_dollars_per_month"] for p in phases)
            t[f"{e}_ops_per_sec"] = med(p["ops_per_sec"] for p in phases)
        s, q = by.get("strata", {}), by.get("slatedb", {})
        ratios = []
        for k in sorted(set(s) & set(q)):
            a = med(per_kop(p) for p in s[k])
            b = med(per_kop(p) for p in q[k])
            if a is not None and b:
                ratios.append(a / b)
        t["ratio_median"] = statistics.median(ratios) if ratios else None
        t["ratio_min"] = min(ratios) if ratios else None
        t["ratio_max"] = max(ratios) if ratios else None
        t["runs"] = len(ratios) if ratios else len(s)
        table.append(t)
    with open(os.path.join(out, "requests.json"), "w") as f:
        json.dump(table, f, indent=2)

    def num(x, fmt):
        return "" if x is None else format(x, fmt)

    print(f"### Object-store requests, commit `{commit}`\n")
    print(f"Machine: {machine['cpus']} cpus, {(machine.get('memory_bytes') or 0) / 2**30:.1f} GiB; "
          f"{args['num']} records of {args['key_size']}+{args['value_size']['min']} B, "
          f"{args['threads']} threads, zipfian keys. Requests per 1,000 operations of the phase; "
          f"Strata / SlateDB pairs interleaved repeats (median [min–max]); $/month is the "
          f"requests at the phase's rate for 30 days at S3 Standard prices.\n")
    head = ["phase", "Strata req/kop", "SlateDB req/kop", "Strata / SlateDB",
            "Strata req $/month", "SlateDB req $/month", "Strata ops/s", "SlateDB ops/s", "runs"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for t in table:
        if t["variant"]:
            continue
        ratio = ""
        if t["ratio_median"] is not None:
            ratio = f"**{t['ratio_median']:.2f}×** [{t['ratio_min']:.2f}–{t['ratio_max']:.2f}]"
        print("| " + " | ".join([
            t["row"], num(t["strata_requests_per_kop"], ",.2f"), num(t["slatedb_requests_per_kop"], ",.2f"),
            ratio, num(t["strata_requests_usd_per_month"], ",.2f"),
            num(t["slatedb_requests_usd_per_month"], ",.2f"), num(t["strata_ops_per_sec"], ",.0f"),
            num(t["slatedb_ops_per_sec"], ",.0f"), str(t["runs"]),
        ]) + " |")
    base = {t["row"]: t for t in table if not t["variant"]}
    budget = [t for t in table if t["variant"] == "budget"]
    if budget:
        print("\nStrata's YCSB-A with --capacity-request-budget at half the unbudgeted run's request "
              "rate (load and run phases together):\n")
        print("| phase | unbudgeted requests/s | budgeted requests/s | unbudgeted ops/s | budgeted ops/s |")
        print("|---|---|---|---|---|")
        for t in budget:
            b = base.get("load" if t["row"].startswith("load") else t["row"], {})
            print(f"| {t['row']} | {num(b.get('strata_requests_per_sec'), ',.1f')} | "
                  f"{num(t['strata_requests_per_sec'], ',.1f')} | {num(b.get('strata_ops_per_sec'), ',.0f')} | "
                  f"{num(t['strata_ops_per_sec'], ',.0f')} |")


if __name__ == "__main__":
    main()
