#!/bin/bash
# Run benchmarks from two checkouts alternately (old, new, old, new...) and keep every output.
#
#   OLD=/path/to/old/checkout NEW=/path/to/new/checkout OUT=/tmp/bench NEO4J_URI=bolt://... \
#     scripts/bench_alternate.sh
#
# Each checkout needs its own .venv with kgr importable from that checkout. The benchmarks wipe the
# database NEO4J_URI names. Outputs: $OUT/<bench>-<old|new>-<i>.txt, wall seconds in $OUT/walls.txt.
# The sizes are the small ones of docs/benchmarks.md ("Before and after the house move").
set -u
: "${OLD:?the old checkout}" "${NEW:?the new checkout}" "${OUT:=/tmp/bench-alternate}"
mkdir -p "$OUT"
run() {  # bench pairs args...
  local bench=$1 pairs=$2; shift 2
  for i in $(seq 1 "$pairs"); do
    for side in old new; do
      if [ "$side" = old ]; then dir=$OLD; else dir=$NEW; fi
      s=$(date +%s.%N)
      (cd "$dir" && .venv/bin/python "scripts/bench_$bench.py" "$@") > "$OUT/$bench-$side-$i.txt" 2>&1
      e=$(date +%s.%N)
      echo "$bench $side $i wall $(echo "$e - $s" | bc)" >> "$OUT/walls.txt"
    done
  done
}
run tools 3 -n 30
run stage 2 --n 2000 --repeats 1 --warmup 0
run slice 2 --entities 1000 --edges 3000 --queries 10 --recall-budgets 600
run promotion 2 --streams text --policies votes2,c10b0 --waves 1 --no-speed
