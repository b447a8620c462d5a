#!/usr/bin/env bash
# usage: getab-tables.sh BIN PORT -> "GET rps p50 p99" for GETs served from tables (the server
# restarted after 1M SETs: its memtable was flushed on shutdown)
BIN=$1; PORT=$2; D=$(mktemp -d /work/getab.XXXX)
start() {
  $BIN serve --bind 127.0.0.1 --port $PORT --dir $D/data --sync everysec --log-level warn ${STRATA_ARGS:-} 2>>$D/log &
  PID=$!
  for i in $(seq 1 100); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p $PORT ping >/dev/null 2>&1 || { cat $D/log; exit 1; }
}
start
redis-benchmark -h 127.0.0.1 -p $PORT -t set -n 1000000 -r 1000000 -P 16 -c 50 --csv >/dev/null 2>&1
kill $PID; wait $PID 2>/dev/null
start
redis-benchmark -h 127.0.0.1 -p $PORT -t get -n 2000000 -r 1000000 -P ${P:-16} -c 50 --csv 2>/dev/null | awk -F'","' 'NR > 1 { gsub(/"/, "", $0); split($0, f, ","); print "GET", f[2], f[5], f[7]; exit }'
kill $PID; wait $PID 2>/dev/null; rm -rf $D
