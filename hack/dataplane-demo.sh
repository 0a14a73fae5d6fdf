#!/usr/bin/env bash
# Watch packets cross the mesh: builds the data-plane bed of test/dataplane
# (three real kube-apiservers, the real server, every Kilo node a network
# namespace with userspace WireGuard and a stand-in for kg), joins the
# clusters into one mesh, probes every pod and service pair across clusters
# and prints the connectivity matrices. Needs root and iproute2.
# Usage: hack/dataplane-demo.sh [-recoveries N] [-full] [-hold]
#   -recoveries N  also time N key rotations and N leader changes
#   -full          also switch to full granularity and probe again
#   -hold          keep the bed up until Ctrl-C, to look around
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ $(id -u) != 0 ]]; then
  echo "the data-plane bed makes network namespaces and TUN devices: run as root" >&2
  exit 1
fi
bash hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl >/dev/null
echo "# $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# bin/dataplanedemo $*"
go build -o bin/dataplanedemo ./hack/dataplanedemo
# Run, not exec'd through go run, so that Ctrl-C reaches the demo itself
# and it tears the bed down.
exec bin/dataplanedemo "$@"
