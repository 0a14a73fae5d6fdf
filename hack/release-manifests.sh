#!/usr/bin/env bash
# Renders every kustomize install mode with the image of a release into one
# file each, for a release's assets: _output/manifests/kilo-mesh-apiserver-<mode>.yaml, with
# <mode> default, ha, cert-manager and ha-cert-manager, the pods that restore
# a snapshot into the default and the HA store (restore-default, restore-ha),
# and the namespace they run in, kept apart so that deleting a mode's file
# never deletes the data (kilo-mesh-apiserver-namespace.yaml). The image is set as
# docs/install.md tells users to set theirs: an overlay of one's own whose
# `images:` renames the shipped reference.
#
#   hack/release-manifests.sh IMAGE     # e.g. ghcr.io/you/kilo-mesh-apiserver:v0.1.0
set -o errexit -o nounset -o pipefail

IMAGE=${1:?usage: hack/release-manifests.sh REGISTRY/NAME:TAG}
case "$IMAGE" in */*:*) ;; *) echo "IMAGE must be registry/name:tag, got $IMAGE" >&2; exit 1 ;; esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/_output/manifests}
KUBECTL=$(bash "$ROOT/hack/build-tools.sh" kubectl | tail -n 1)/kubectl
# The reference components/images ships, which the overlay renames.
SHIPPED=$(awk '/name: kilo-mesh-apiserver$/ {getline; print $2}' "$ROOT/artifacts/components/images/kustomization.yaml")

rm -rf "$OUT"
mkdir -p "$OUT"
# Kustomize takes only relative paths to other kustomizations.
src=$ROOT/_output/manifests-src
rm -rf "$src"
trap 'rm -rf "$src"' EXIT
for mode in default ha cert-manager ha-cert-manager restore-default restore-ha; do
	base=$ROOT/artifacts/overlays/$mode
	[[ $mode == default ]] && base=$ROOT/artifacts/deploy
	[[ $mode == restore-* ]] && base=$ROOT/artifacts/restore/${mode#restore-}
	mkdir -p "$src/$mode"
	cat >"$src/$mode/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$src/$mode" "$base")
images:
- name: $SHIPPED
  newName: ${IMAGE%:*}
  newTag: ${IMAGE##*:}
YAML
	"$KUBECTL" kustomize "$src/$mode" >"$OUT/kilo-mesh-apiserver-$mode.yaml"
	echo "$OUT/kilo-mesh-apiserver-$mode.yaml"
done
"$KUBECTL" kustomize "$ROOT/artifacts/namespace" >"$OUT/kilo-mesh-apiserver-namespace.yaml"
echo "$OUT/kilo-mesh-apiserver-namespace.yaml"
