#!/usr/bin/env bash
# Builds the release archives of the kubectl-mesh plugin and its krew
# manifest: _output/plugin/kubectl-mesh_<version>_<os>_<arch>.tar.gz (the
# binary and LICENSE) for every platform of artifacts/krew/mesh.yaml, and
# _output/plugin/mesh.yaml, the manifest with the version and checksums
# filled in.
#
#   hack/plugin-release.sh [VERSION]    # default: hack/version.sh
set -o errexit -o nounset -o pipefail

VERSION=${1:-$(bash "$(dirname "${BASH_SOURCE[0]}")/version.sh")}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/_output/plugin}
PLATFORMS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
PKG=github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version
COMMIT=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
# The commit time, as the Makefile stamps the server: one commit, the same binaries.
DATE=$(date -u -d "@$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)" +%Y-%m-%dT%H:%M:%SZ)

rm -rf "$OUT"
mkdir -p "$OUT"
# The template's header comment is about the template: left out.
manifest=$(grep -v '^#' "$ROOT/artifacts/krew/mesh.yaml")
manifest=${manifest//'${VERSION}'/$VERSION}
for p in "${PLATFORMS[@]}"; do
	os=${p%/*} arch=${p#*/}
	dir=$(mktemp -d)
	echo "building kubectl-mesh $VERSION for $os/$arch"
	(cd "$ROOT" && GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X $PKG.gitVersion=$VERSION -X $PKG.gitCommit=$COMMIT -X $PKG.buildDate=$DATE" \
		-o "$dir/kubectl-mesh" ./cmd/kubectl-mesh)
	cp "$ROOT/LICENSE" "$ROOT/cmd/kubectl-mesh/kubectl_complete-mesh" "$dir/"
	archive="$OUT/kubectl-mesh_${VERSION}_${os}_${arch}.tar.gz"
	tar -C "$dir" -czf "$archive" kubectl-mesh kubectl_complete-mesh LICENSE
	rm -rf "$dir"
	sum=$(sha256sum "$archive" | cut -d' ' -f1)
	var="SHA256_$(echo "${os}_${arch}" | tr '[:lower:]' '[:upper:]')"
	manifest=${manifest//"\${$var}"/$sum}
done
if grep -q '\${' <<<"$manifest"; then
	echo "placeholders left in the manifest:" >&2
	grep '\${' <<<"$manifest" >&2
	exit 1
fi
printf '%s\n' "$manifest" >"$OUT/mesh.yaml"
echo "wrote $OUT/mesh.yaml"
