#!/usr/bin/env bash
# Builds the real Kubernetes binaries the test framework (test/framework) and
# `make run` (hack/localenv) start, from the Go module proxy through the
# separate tools module in hack/tools (never the project's own go.mod); and
# Helm, for the chart's tests and `make chart`, from its own module hack/helm
# (it needs newer Kubernetes libraries than hack/tools pins); and CoreDNS, for
# the end-to-end tests of `kubectl mesh dns`, from its own module hack/coredns
# for the same reason.
#
#   hack/build-tools.sh                       # every tool below
#   hack/build-tools.sh etcd kube-apiserver   # only these: what a target needs
#   hack/build-tools.sh --link DIR helm       # and DIR holds links to these alone
#
# A make target gives its tests the --link directory, so that a test using a
# tool its target does not build fails on every machine, not only on one
# whose cache lacks that tool.
#
# Each binary is built only if it is missing, so a second run returns at
# once. A name this script has no build line for is reported and skipped.
#
# Output directory: ${KILO_MESH_TOOLS_BIN:-$HOME/.cache/kilo-mesh-apiserver/tools-v1.36.3/bin}
# Progress goes to stderr (what is built, the expected time up front, a line
# every ${KILO_MESH_TOOLS_TICK:-30} s while a tool builds); the bin directory
# is printed on the last line of stdout, so `BIN=$(hack/build-tools.sh ...)`
# works.
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
COREDNS_MOD="${ROOT}/hack/coredns"
BIN="${KILO_MESH_TOOLS_BIN:-${HOME}/.cache/kilo-mesh-apiserver/tools-${KUBE_VERSION}/bin}"
TICK="${KILO_MESH_TOOLS_TICK:-30}"

# The tools module must not be affected by a go.work the developer may have,
# nor by -mod flags meant for the main module.
export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -mod=readonly -buildvcs=false"

log() { echo "build-tools: $*" >&2; }

# first_build_seconds NAME: how long a cold build of NAME took on 2 cores
# (a fresh module cache, downloads included; docs/performance.md), for the
# estimate printed before building. Unknown: nothing.
first_build_seconds() {
	case "$1" in
	etcd) echo 85 ;;
	kube-apiserver) echo 340 ;;
	kube-controller-manager) echo 240 ;;
	kubectl) echo 105 ;;
	helm) echo 760 ;;
	coredns) echo 300 ;;
	esac
}

minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

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

helm_ldflags() {
	# Helm's version is the one hack/helm/go.mod pins.
	local version flags pkg
	version=$(cd "${HELM_MOD}" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
	flags="-s -w -X helm.sh/helm/v3/internal/version.version=${version} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		flags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${HELM_KUBE_MINOR}"
	done
	echo "${flags}"
}

# The build lines, one per tool: build NAME PACKAGE [go build args...], in
# module $MOD (default hack/tools). They run twice: MODE=plan only notes
# which tools exist and which are missing, MODE=build builds them.
tools() {
	build etcd go.etcd.io/etcd/server/v3
	build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "${LDFLAGS}"
	build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager -ldflags "${LDFLAGS}"
	build kubectl k8s.io/kubernetes/cmd/kubectl -ldflags "${LDFLAGS}"
	MOD="${HELM_MOD}" build helm helm.sh/helm/v3/cmd/helm -ldflags "$(wanted helm && helm_ldflags)"
	MOD="${COREDNS_MOD}" build coredns github.com/coredns/coredns -ldflags "-s -w"
}

# wanted NAME: NAME was asked for, or no name was.
wanted() {
	((${#REQUESTED[@]} == 0)) && return 0
	local r
	for r in "${REQUESTED[@]}"; do
		[[ "${r}" == "$1" ]] && return 0
	done
	return 1
}

KNOWN=()
MISSING=()
# The running build, its progress ticker and its temporary file, ended and
# removed if this script is stopped (SIGTERM, Ctrl-C) mid-build.
BUILD_PID="" TICKER_PID="" TMP=""
cleanup() {
	[[ -z "${TICKER_PID}" ]] || kill "${TICKER_PID}" 2>/dev/null || true
	[[ -z "${BUILD_PID}" ]] || kill "${BUILD_PID}" 2>/dev/null || true
	[[ -z "${TMP}" ]] || rm -f "${TMP}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build() {
	local name="$1" pkg="$2" mod="${MOD:-${TOOLS_MOD}}"
	shift 2
	if [[ "${MODE}" == plan ]]; then
		KNOWN+=("${name}")
		if wanted "${name}" && [[ ! -x "${BIN}/${name}" ]]; then
			MISSING+=("${name}")
		fi
		return 0
	fi
	wanted "${name}" || return 0
	if [[ -x "${BIN}/${name}" ]]; then
		log "${name}: present in ${BIN}"
		return 0
	fi
	local start expect status=0
	expect=$(first_build_seconds "${name}")
	log "${name}: building ${pkg}${expect:+ (about $(minutes "${expect}") on 2 cores)} ..."
	start=$(date +%s)
	# A line every TICK seconds, so that a long build is seen to progress.
	(
		while sleep "${TICK}"; do
			kill -0 $$ 2>/dev/null || exit 0
			log "${name}: still building, $(minutes $(($(date +%s) - start))) so far"
		done
	) &
	TICKER_PID=$!
	# Build next to the final path and rename, so an interrupted build never
	# leaves a half-written binary that a later run would take as done.
	TMP="$(mktemp "${BIN}/.${name}.XXXXXX")"
	(cd "${mod}" && exec go build -o "${TMP}" "$@" "${pkg}") &
	BUILD_PID=$!
	wait "${BUILD_PID}" || status=$?
	BUILD_PID=""
	kill "${TICKER_PID}" 2>/dev/null || true
	wait "${TICKER_PID}" 2>/dev/null || true
	TICKER_PID=""
	if ((status != 0)); then
		log "${name}: build failed"
		return 1
	fi
	chmod 0755 "${TMP}"
	mv -f "${TMP}" "${BIN}/${name}"
	TMP=""
	log "${name}: built in $(minutes $(($(date +%s) - start)))"
}

if ! command -v go >/dev/null 2>&1; then
	log "go not found in PATH"
	exit 1
fi

LINK_DIR=""
if [[ "${1:-}" == --link ]]; then
	LINK_DIR="${2:?--link needs a directory}"
	shift 2
fi
REQUESTED=("$@")
mkdir -p "${BIN}"
LDFLAGS="$(version_ldflags)"

MODE=plan tools
for r in "${REQUESTED[@]}"; do
	if [[ " ${KNOWN[*]} " != *" ${r} "* ]]; then
		log "${r}: this script has no build line for it (it builds ${KNOWN[*]}); skipped"
	fi
done
if ((${#MISSING[@]})); then
	total=0
	for name in "${MISSING[@]}"; do
		s=$(first_build_seconds "${name}")
		total=$((total + ${s:-0}))
	done
	log "to build: ${MISSING[*]}; a first build takes about $(minutes "${total}") on 2 cores, later runs start at once"
fi
MODE=build tools

if [[ -n "${LINK_DIR}" ]]; then
	rm -rf "${LINK_DIR}"
	mkdir -p "${LINK_DIR}"
	BIN="$(cd "${BIN}" && pwd)"
	for r in "${REQUESTED[@]}"; do
		[[ -x "${BIN}/${r}" ]] && ln -s "${BIN}/${r}" "${LINK_DIR}/${r}"
	done
	BIN="${LINK_DIR}"
fi
echo "${BIN}"
