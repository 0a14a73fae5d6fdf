#!/usr/bin/env bash
# Builds the real Kubernetes binaries the test framework (test/framework) and
# `make run` (hack/localenv) start: kube-apiserver, kube-controller-manager,
# etcd and kubectl, all from
# the Go module proxy through the separate tools module in hack/tools (never
# the project's own go.mod); and Helm, for the chart's tests and `make chart`,
# from its own module hack/helm (it needs newer Kubernetes libraries than
# hack/tools pins). Each binary is built only if it is missing, so a second
# run returns at once.
#
# Output directory: ${KILO_MESH_TOOLS_BIN:-$HOME/.cache/kilo-mesh-apiserver/tools-v1.36.3/bin}
# Progress goes to stderr; the bin directory is printed on the last line of
# stdout, so `BIN=$(hack/build-tools.sh)` works.
#
# Cold, on 2 cores: kube-apiserver about 3 min (1.9 GB peak memory),
# kube-controller-manager a few minutes more on its build cache, kubectl
# about 1 min, etcd about 40 s, helm about 3 min.
set -euo pipefail

KUBE_VERSION=v1.36.3
KUBE_MAJOR=1
KUBE_MINOR=36
# The Kubernetes version Helm assumes without a cluster (helm template,
# helm lint), as Helm's own Makefile stamps it from its client-go.
HELM_KUBE_MINOR=37

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_MOD="${ROOT}/hack/tools"
HELM_MOD="${ROOT}/hack/helm"
BIN="${KILO_MESH_TOOLS_BIN:-${HOME}/.cache/kilo-mesh-apiserver/tools-${KUBE_VERSION}/bin}"

# The tools module must not be affected by a go.work the developer may have,
# nor by -mod flags meant for the main module.
export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -mod=readonly -buildvcs=false"

log() { echo "build-tools: $*" >&2; }

version_ldflags() {
	local flags="" pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
		flags+=" -X ${pkg}.gitMajor=${KUBE_MAJOR}"
		flags+=" -X ${pkg}.gitMinor=${KUBE_MINOR}"
		flags+=" -X ${pkg}.gitTreeState=clean"
	done
	echo "${flags# }"
}

# build NAME PACKAGE [extra go build args...], in module $MOD (default
# hack/tools).
build() {
	local name="$1" pkg="$2" mod="${MOD:-${TOOLS_MOD}}"
	shift 2
	if [[ -x "${BIN}/${name}" ]]; then
		log "${name}: present in ${BIN}"
		return 0
	fi
	log "${name}: building ${pkg} ..."
	local start tmp
	start=$(date +%s)
	# Build next to the final path and rename, so an interrupted build never
	# leaves a half-written binary that a later run would take as done.
	tmp="$(mktemp "${BIN}/.${name}.XXXXXX")"
	if ! (cd "${mod}" && go build -o "${tmp}" "$@" "${pkg}"); then
		rm -f "${tmp}"
		log "${name}: build failed"
		return 1
	fi
	chmod 0755 "${tmp}"
	mv -f "${tmp}" "${BIN}/${name}"
	log "${name}: built in $(($(date +%s) - start)) s"
}

if ! command -v go >/dev/null 2>&1; then
	log "go not found in PATH"
	exit 1
fi

mkdir -p "${BIN}"
LDFLAGS="$(version_ldflags)"
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "${LDFLAGS}"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager -ldflags "${LDFLAGS}"
build kubectl k8s.io/kubernetes/cmd/kubectl -ldflags "${LDFLAGS}"
# Helm's version is the one hack/helm/go.mod pins.
HELM_VERSION=$(cd "${HELM_MOD}" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
HELM_LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	HELM_LDFLAGS+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${HELM_KUBE_MINOR}"
done
MOD="${HELM_MOD}" build helm helm.sh/helm/v3/cmd/helm -ldflags "${HELM_LDFLAGS}"

echo "${BIN}"
