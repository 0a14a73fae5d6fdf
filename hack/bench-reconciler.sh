#!/usr/bin/env bash
# The reconciler through the real binary on real kube-apiservers: 3 clusters
# x 2,000 Kilo nodes by default, one Peer per node (full granularity), with
# Kilo's check-in stream running (every node's last-seen every 30 s). Prints
# the time until every Peer exists, the latency of single node changes
# (p50/p99 over 200) next to the simplest loop's (a Node informer and one Peer
# patch, in the same run), a burst of 100 changes in one second, the server's
# latency budget by stage, writes per minute in steady state and server memory.
# Usage: hack/bench-reconciler.sh [-clusters N] [-nodes N] [-granularity Full|Location]
#                                 [-nodes-per-location N] [-changes N] [-burst N] [-steady 60s]
#                                 [-checkins 30s] [-loop=false] [-cpuprofile FILE] [-heapprofile FILE]
#                                 [-server-arg --member-cluster-qps=200 ...]
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl >/dev/null
echo "# $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# go run ./hack/benchreconciler $*"
go run ./hack/benchreconciler "$@"
