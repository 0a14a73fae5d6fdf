#!/usr/bin/env bash
# The server at scale on hollow member clusters (hack/hollowmembers): by
# default one mesh of 100 clusters x 100 nodes in location granularity with
# Kilo's check-in stream (every node every 30 s), the floor (the simplest
# controller) timed in the same run on the same members. Prints the time
# until every Peer exists, a change's latency to every other member (p50/p99)
# beside the floor's, writes at rest, the views' answer times, and the
# server's memory and CPU. One real kube-apiserver hosts the server.
# Usage: hack/bench-scale.sh [-members N] [-nodes N] [-granularity Full|Location]
#                            [-meshes N -clusters-per-mesh N [-tenant-credentials]]
#                            [-changes N] [-burst N] [-churn R] [-checkins 30s] [-steady 60s]
#                            [-views N] [-floor=false] [-profiles DIR] [-server-arg --flag=value ...]
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl >/dev/null
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/hollowmembers" ./hack/hollowmembers
go build -o "$BIN/benchscale" ./hack/benchscale
echo "# $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uptime)"
echo "# go run ./hack/benchscale $*"
# An interrupt or a timeout reaches the benchmark, which stops what it
# started before it ends.
"$BIN/benchscale" -hollowmembers "$BIN/hollowmembers" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' INT TERM
status=0
wait "$pid" || status=$?
if kill -0 "$pid" 2>/dev/null; then wait "$pid" || status=$?; fi
echo "# $(uptime)"
exit "$status"
