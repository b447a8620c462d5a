#!/bin/bash
# interleaved: for r: for bin in base new: for mode in parallel replay
W=/tmp/strata-dir8
for r in 1 2 3; do
 for mode in parallel replay; do
  for b in strata-base strata-cur; do
   rm -rf $W/wal $W/new; cp -a $W/wal.orig $W/wal; sync
   p=$(head -1 /proc/pressure/cpu | cut -d' ' -f2)
   /work/bins/$b recover --wal-location $W/wal --db $W/new --recovery $mode --json 2>/dev/null > /tmp/ab-$b-$mode-$r.json
   python3 -c "import json; d=json.load(open('/tmp/ab-$b-$mode-$r.json')); print('$r $mode $b $p', round(d['total_secs'],3), 'build', round(d['build_secs'],3))"
  done
 done
done
