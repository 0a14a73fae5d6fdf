#!/usr/bin/env bash
# Latency of the plan and peers views through the aggregation layer, on real
# kube-apiservers: 3 clusters x 2,000 Kilo nodes by default.
# Usage: hack/bench-views.sh [-clusters N] [-nodes N] [-requests N]
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl >/dev/null
echo "# $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
go run ./hack/benchviews "$@"
