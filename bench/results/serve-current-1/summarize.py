# Summarizes the interleaved runs in this directory: median strata/redis ratio [range] per
# test, pipeline depth and binary (old = 23fe398, head = the chaining commit).
import glob, re, statistics
rows = {}
for f in sorted(glob.glob('*-P*-r*.md')):
    b, p, r = re.match(r'(head)-P(\d+)-r(\d)\.md', f).groups()
    for line in open(f):
        c = [x.strip() for x in line.strip().strip('|').split('|')]
        if len(c) == 6 and c[0] in ('SET', 'GET', 'INCR', 'LPUSH', 'HSET', 'ZADD'):
            rows.setdefault((p, c[0], b), []).append((float(c[1]), c[2], float(c[3]), c[4], float(c[5].rstrip('×'))))
for p in ('1', '16'):
    print(f'-P {p}')
    for t in ('SET', 'GET', 'INCR', 'LPUSH', 'HSET', 'ZADD'):
        for b in ('old', 'head'):
            v = rows.get((p, t, b), [])
            if not v:
                continue
            ratios = sorted(x[4] for x in v)
            med = sorted(v, key=lambda x: x[4])[len(v) // 2]
            print(f'  {t:6} {b:5} strata {med[0]:>9.0f} p50/p99 {med[1]:>15} redis {med[2]:>9.0f} p50/p99 {med[3]:>15} ratio {statistics.median(ratios):.2f} [{ratios[0]:.2f}-{ratios[-1]:.2f}] n={len(v)}')
