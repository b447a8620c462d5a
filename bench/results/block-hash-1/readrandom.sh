#!/bin/bash
cd /tmp/rr
for rep in 1 2 3; do
for e in strata rocksdb; do for r in 0 0.75; do
  echo "== rep $rep $e ratio $r $(head -1 /proc/pressure/cpu)"
  /tmp/strata-rocks bench --engine $e --db /tmp/rr/db-$e --benchmarks fillrandom,readrandom --num 2000000 --value-size 100 --reads 2000000 --cache-size 512MiB --write-buffer-size 16MiB --data-block-hash-ratio $r --threads 1 --hotrap false 2>&1 | grep -E "^(fillrandom|readrandom)" 
done; done; done
rm -rf /tmp/rr/db-*
echo ALLDONE
