#!/usr/bin/env python3
"""Summarises repeated bench/redis-compare.sh runs saved in one directory.

    python3 bench/redis_compare_summary.py DIR

Reads DIR/<label>-P<depth>-r<k>.md (each the output of one redis-compare.sh run; <label> names
the binary, e.g. head or old) and prints, per pipeline depth, test and label, the run with the
median strata/redis ratio (strata req/s and p50/p99, redis req/s and p50/p99) and the median
ratio with its [min-max] over the runs.
"""
import glob
import os
import re
import statistics
import sys

TESTS = ('SET', 'GET', 'INCR', 'LPUSH', 'HSET', 'ZADD', 'MSET')


def main(d):
    rows = {}
    labels = []
    for f in sorted(glob.glob(os.path.join(d, '*-P*-r*.md'))):
        m = re.match(r'(.+)-P(\d+)-r(\d+)\.md$', os.path.basename(f))
        if not m:
            continue
        label, depth, _ = m.groups()
        if label not in labels:
            labels.append(label)
        for line in open(f):
            c = [x.strip() for x in line.strip().strip('|').split('|')]
            if len(c) == 6 and c[0] in TESTS:
                rows.setdefault((depth, c[0], label), []).append(
                    (float(c[1]), c[2], float(c[3]), c[4], float(c[5].rstrip('×'))))
    for depth in sorted({k[0] for k in rows}, key=int):
        print(f'-P {depth}')
        for t in TESTS:
            for label in labels:
                v = rows.get((depth, t, label))
                if not v:
                    continue
                ratios = sorted(x[4] for x in v)
                med = sorted(v, key=lambda x: x[4])[len(v) // 2]
                print(f'  {t:6} {label:5} strata {med[0]:>9.0f} p50/p99 {med[1]:>15} '
                      f'redis {med[2]:>9.0f} p50/p99 {med[3]:>15} '
                      f'ratio {statistics.median(ratios):.2f} [{ratios[0]:.2f}-{ratios[-1]:.2f}] n={len(v)}')


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else '.')
