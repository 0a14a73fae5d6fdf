#!/usr/bin/env bash
# What the tests need of the machine besides Go and the Kubernetes tools that
# hack/build-tools.sh builds: commands from Debian packages, and root. One
# table for the make targets, which check it up front, and for .ci/run, which
# installs what is missing.
#
#   hack/host-deps.sh unit e2e            # one message naming what is missing
#   hack/host-deps.sh --install test      # apt-get installs the missing packages
#
# Targets: verify, unit, integration, e2e, dataplane, and test (all of them).
set -euo pipefail

# needs TARGET prints the target's needs: command:package pairs, and "root".
needs() {
	case "$1" in
	# The generated-code check copies the tree with tar and compares with diff.
	verify) echo "tar:tar diff:diffutils" ;;
	# The plan's DOT output is checked with Graphviz's dot.
	unit) echo "dot:graphviz" ;;
	integration) echo "" ;;
	# kubectl mesh graph -o svg pipes through dot; the release tests run
	# make and unpack the image with tar; the upgrade test builds the
	# previous release from git; a server with a private /etc/hosts (a
	# member that moves) runs in a mount namespace of its own.
	e2e) echo "dot:graphviz make:make tar:tar git:git unshare:util-linux mount:mount root" ;;
	# Every Kilo node is a network namespace (ip) with nftables standing in
	# for kube-proxy.
	dataplane) echo "ip:iproute2 nft:nftables root" ;;
	test) needs verify && needs unit && needs integration && needs e2e && needs dataplane ;;
	*)
		echo "host-deps: unknown target $1 (verify, unit, integration, e2e, dataplane, test)" >&2
		return 1
		;;
	esac
}

install=false
if [[ "${1:-}" == --install ]]; then
	install=true
	shift
fi
(($#)) || set -- test

for target in "$@"; do
	needs "${target}" >/dev/null
done
packages=() root=false
for target in "$@"; do
	for need in $(needs "${target}"); do
		if [[ "${need}" == root ]]; then
			root=true
		elif ! command -v "${need%%:*}" >/dev/null 2>&1 && [[ " ${packages[*]} " != *" ${need#*:} "* ]]; then
			packages+=("${need#*:}")
		fi
	done
done

if ${install} && ((${#packages[@]})); then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
	packages=()
fi
missing=()
((${#packages[@]} == 0)) || missing+=("the Debian packages ${packages[*]} (apt-get install --no-install-recommends ${packages[*]})")
if ${root} && ((EUID != 0)); then
	missing+=("root (they make network and mount namespaces)")
fi
if ((${#missing[@]})); then
	msg="host-deps: the tests ($*) need"
	for i in "${!missing[@]}"; do
		((i == 0)) || msg+=" and"
		msg+=" ${missing[i]}"
	done
	echo "${msg}" >&2
	exit 1
fi
