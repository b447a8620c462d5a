#!/bin/bash
# parallel vs replay on 1 core (taskset -c 0) and on 2, interleaved, 62867df, 8.5M x 230 B directory log
W=/tmp/strata-dir8
for r in 1 2; do
 for cpus in 0 0,1; do
  for mode in parallel replay; do
   rm -rf $W/wal $W/new; cp -a $W/wal.orig $W/wal; sync
   p=$(head -1 /proc/pressure/cpu | cut -d' ' -f2)
   taskset -c $cpus /work/main/target/release/strata recover --wal-location $W/wal --db $W/new --recovery $mode --json 2>/dev/null > /tmp/cores-$cpus-$mode-$r.json
   python3 -c "import json; d=json.load(open('/tmp/cores-$cpus-$mode-$r.json')); print('$r cpus=$cpus $mode $p', 'total', round(d['total_secs'],2), 'build', round(d['build_secs'],2), 'open', round(d['open_secs'],2))"
  done
 done
done
