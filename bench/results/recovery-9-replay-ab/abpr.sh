#!/bin/bash
# parallel vs replay with one binary (4d6e611), interleaved, on the A/B's 8.5M x 230 B directory log
W=/tmp/strata-dir8
for r in 1 2 3; do
  for mode in parallel replay; do
   rm -rf $W/wal $W/new; cp -a $W/wal.orig $W/wal; sync
   p=$(head -1 /proc/pressure/cpu | cut -d' ' -f2)
   /work/bins/strata-4d6 recover --wal-location $W/wal --db $W/new --recovery $mode --json 2>/dev/null > /tmp/abpr-$mode-$r.json
   python3 -c "import json; d=json.load(open('/tmp/abpr-$mode-$r.json')); print('$r $mode $p', 'total', round(d['total_secs'],2))"
  done
done
