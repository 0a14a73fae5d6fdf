#!/usr/bin/env bash
# Fails when generated code (deepcopy, OpenAPI, model names, Peer CRD, the
# member identity and its services rights, the mcs-api CRDs it ships, the
# host-services and CoreDNS rules, the documents listing the member's rights)
# is not what the generators make from the current sources.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tar -C "$ROOT" --exclude=.git --exclude=./bin --exclude=./_output -cf - . | tar -C "$TMP" -xf -
CODEGEN_BIN="$ROOT/_output/codegen" bash "$TMP/hack/update-codegen.sh"
for path in pkg/apis pkg/generated artifacts/crds artifacts/member artifacts/charts/kilo-mesh-member/templates artifacts/charts/kilo-mesh-member/crds artifacts/components/host-services artifacts/charts/kilo-mesh-apiserver/files artifacts/components/coredns artifacts/charts/kilo-mesh-member/files \
  artifacts/components/member-services artifacts/charts/kilo-mesh-member/README.md artifacts/charts/kilo-mesh-member/values.yaml \
  README.md docs/tutorial.md docs/security.md docs/install.md docs/reference.md; do
  if ! diff -ru "$ROOT/$path" "$TMP/$path"; then
    echo "generated files under $path are stale: run 'make generate'" >&2
    exit 1
  fi
done
echo "generated code is up to date"
