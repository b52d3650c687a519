#!/usr/bin/env bash
# The kernels' performance figures in one call, ON the GPU machine from the repo root, given a
# cuda build made on the development machine (BUILD, default build/cuda). Under $OUT:
#   graph.log    graph_test: forward and forward+backward captured in a CUDA graph and replayed
#                bit-exact, with each shape's launch count and microseconds a call (stream, graph)
#   bench/       `normcheck bench` on the issue's shapes in every dtype (PEERS="--peer eager"
#                adds torch beside it)
#   ncu-*.csv    ncu (--clock-control none) per kernel at 4096x4096 and 16384x8192 bf16:
#                DRAM throughput (% of peak), bytes and duration (ncu-*.log: the bench's output)
# About two minutes; every step is bounded (GRAPH_LIMIT 120, BENCH_LIMIT 240, NCU_LIMIT 120 s each).
set -uo pipefail
OUT=$(realpath -m "${OUT:-perf-check}") BUILD=${BUILD:-build/cuda} status=0
cd "$(dirname "$0")/../.." && mkdir -p "$OUT" || exit 1

echo "=== graph_test"
timeout "${GRAPH_LIMIT:-120}" "$BUILD/bin/graph_test" 2>&1 | tee "$OUT/graph.log" || status=1

echo "=== normcheck bench"
# shellcheck disable=SC2086
timeout "${BENCH_LIMIT:-240}" "$BUILD/bin/normcheck" bench --out "$OUT/bench" ${PEERS:-} \
  --shapes 128x257,4096x4096,32768x4096,16384x8192,65536x1024,8192x16384 --dtypes fp32,fp16,bf16 \
  2>&1 | tee "$OUT/bench.log" || status=1

NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for shape in 4096x4096 16384x8192; do
  echo "=== ncu $shape bf16"
  # one call of each timing (forward, forward+backward): the first dozen kernels cover every
  # kernel the two calls launch
  # ncu's own output (the CSV) to its log file: the bench's lines stay out of it
  timeout "${NCU_LIMIT:-120}" "$NCU" --clock-control none --csv --log-file "$OUT/ncu-$shape-bf16.csv" --launch-count 12 \
    --kernel-name regex:'forward|backward|dgamma' \
    --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    "$BUILD/bin/normcheck" bench --out "$OUT/ncu-bench-$shape" --shapes "$shape" --dtypes bf16 \
    --warmup 0 --samples 1 --calls 1 > "$OUT/ncu-$shape-bf16.log" 2>&1 || status=1
  # kernel, metric, value: the short form
  python3 - "$OUT/ncu-$shape-bf16.csv" <<'EOF' || status=1
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
# the header is the first row naming the kernel column (ncu may print ==PROF== lines first)
rows = rows[next(i for i, r in enumerate(rows) if "Kernel Name" in r):]
head = rows[0]
k, m, v, u = (head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Value", "Metric Unit"))
for r in rows[1:]:
    print(f"  {r[k][:60]:60} {r[m]:52} {r[v]:>12} {r[u]}")
EOF
  [ -s "$OUT/ncu-$shape-bf16.csv" ] || { echo "no ncu output; its log ends:"; tail -5 "$OUT/ncu-$shape-bf16.log"; }
done
echo "perf_check: exit $status"
exit $status
