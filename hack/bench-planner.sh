#!/usr/bin/env bash
# Runs the planner benchmarks with -benchmem and prints the figures per
# plan: wall time, CPU time on all threads (GC included), memory allocated.
# Usage: hack/bench-planner.sh [count] [benchtime]   (defaults: 5, 1s)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COUNT=${1:-5}
BENCHTIME=${2:-1s}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

cd "$ROOT"
echo "# $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# go test -run '^\$' -bench '^BenchmarkPlan' -benchmem -count=$COUNT -benchtime=$BENCHTIME ./pkg/planner"
go test -run '^$' -bench '^BenchmarkPlan' -benchmem -count="$COUNT" -benchtime="$BENCHTIME" ./pkg/planner | tee "$OUT" | grep -E '^(goos|goarch|cpu|Benchmark)' >&2

# The median of the runs of each benchmark, so that one disturbed run
# (the machine may be shared) does not skew the figures.
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "ns/op") wall[name] = wall[name] " " $i
		if ($(i+1) == "cpu-ns/op") cpu[name] = cpu[name] " " $i
		if ($(i+1) == "B/op") mem[name] = $i
		if ($(i+1) == "allocs/op") allocs[name] = $i
	}
	if (!(name in seen)) { seen[name] = 1; order[n++] = name }
}
function median(list,    a, k, i, j, t) {
	k = split(list, a, " ")
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
	printf "\n%-40s %10s %10s %10s %10s\n", "benchmark (median of runs)", "wall ms", "cpu ms", "MB/op", "allocs/op"
	for (i = 0; i < n; i++) {
		b = order[i]
		printf "%-40s %10.1f %10.1f %10.1f %10d\n", b, median(wall[b]) / 1e6, median(cpu[b]) / 1e6, mem[b] / 1e6, allocs[b]
	}
}' "$OUT"
