#!/usr/bin/env bash
# Prints the product version the Makefile stamps into pkg/version:
# `git describe --tags` (v0.1.0, or v0.1.0-3-g1234abcd after it), or
# v0.0.0-<commit> before the first tag; "-dirty" with uncommitted changes;
# v0.0.0-unknown outside a git checkout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if v=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
	echo "${v}"
elif c=$(git rev-parse --short=12 HEAD 2>/dev/null); then
	dirty=""
	git diff --quiet HEAD -- 2>/dev/null || dirty="-dirty"
	echo "v0.0.0-${c}${dirty}"
else
	echo "v0.0.0-unknown"
fi
