#!/bin/bash
# interleaved replay A/B: old baseline (a98ca0e) vs new (4d6e611), 8.5M x 230 B, directory log
W=/tmp/strata-dir8
for r in 1 2 3; do
  for b in strata-a98 strata-4d6; do
   rm -rf $W/wal $W/new; cp -a $W/wal.orig $W/wal; sync
   p=$(head -1 /proc/pressure/cpu | cut -d' ' -f2)
   /work/bins/$b recover --wal-location $W/wal --db $W/new --recovery replay --json 2>/dev/null > /tmp/abr-$b-$r.json
   python3 -c "import json; d=json.load(open('/tmp/abr-$b-$r.json')); print('$r $b $p', 'total', round(d['total_secs'],2), 'index', round(d['index_secs'],2), 'build', round(d['build_secs'],2), 'open', round(d['open_secs'],2))"
  done
done
