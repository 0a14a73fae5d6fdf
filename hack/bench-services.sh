#!/usr/bin/env bash
# Multi-cluster services through the real binary on real kube-apiservers:
# 3 member clusters (a fourth runs the server), 500 Services of 10 endpoints
# exported from one by default. Prints the time until every import exists,
# the latency of single endpoint changes until both importing clusters'
# EndpointSlices hold them (p50/p99/slowest over 200, watch-based), the
# services writes per minute in steady state, and the server's memory
# without and with services.
# Usage: hack/bench-services.sh [-services N] [-endpoints N] [-namespaces N]
#                               [-changes N] [-spacing 250ms] [-steady 60s] [-settle 20s]
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl >/dev/null
echo "# $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# go run ./hack/benchservices $*"
go run ./hack/benchservices "$@"
