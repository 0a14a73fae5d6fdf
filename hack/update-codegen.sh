#!/usr/bin/env bash
# Regenerates deepcopy, OpenAPI (with model names), the Kilo Peer CRD and the
# member-cluster identity in artifacts/member, the member-services component
# and the member chart (from pkg/member), with the mcs-api CRDs they install,
# and the lists of the identity's rights in the documents.
# verify-codegen.sh runs it on a copy of the tree and diffs.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODULE=github.com/kilo-mesh/kilo-mesh-apiserver
BIN=${CODEGEN_BIN:-$ROOT/_output/codegen}
HEADER=$ROOT/hack/boilerplate.go.txt
APIS=(./pkg/apis/mesh/v1alpha1 ./pkg/apis/kilo/v1alpha1)

(cd "$ROOT/hack/codegen" && go build -o "$BIN/" tool)

cd "$ROOT"
"$BIN/deepcopy-gen" --go-header-file "$HEADER" --output-file zz_generated.deepcopy.go "${APIS[@]}"

APIMACHINERY=(k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/api/resource k8s.io/apimachinery/pkg/util/intstr)
readonly_args=()
for p in "${APIMACHINERY[@]}"; do readonly_args+=(--readonly-pkg "$p"); done
"$BIN/openapi-gen" --go-header-file "$HEADER" \
  --output-dir pkg/generated/openapi --output-pkg "$MODULE/pkg/generated/openapi" \
  --output-file zz_generated.openapi.go --output-model-name-file zz_generated.model_name.go \
  --report-filename /dev/null "${readonly_args[@]}" \
  "${APIMACHINERY[@]}" "${APIS[@]}"

"$BIN/controller-gen" crd paths=./pkg/apis/kilo/v1alpha1 output:crd:dir=artifacts/crds

go run ./hack/genmember artifacts/member/rbac.yaml
# The member chart's only template is the same manifest: Helm renders plain
# YAML as it is.
go run ./hack/genmember artifacts/charts/kilo-mesh-member/templates/identity.yaml
# The services rights, a second ClusterRole of the same ServiceAccount:
# kustomize's component and the chart's template under services.enabled.
go run ./hack/genmember -services artifacts/components/member-services/rbac.yaml
go run ./hack/genmember -chart-services artifacts/charts/kilo-mesh-member/templates/services.yaml
# The mcs-api CRDs, copied from the module of go.mod: kustomize's resources
# and Helm's crds/ (installed before the templates, never upgraded).
go run ./hack/genmember -crds artifacts/member/crds
go run ./hack/genmember -crds artifacts/charts/kilo-mesh-member/crds
# The same services rules for the server's own identity on the host:
# kustomize's component (whole objects) and the chart's rules, which its
# template host-services.yaml wraps with the release's names and labels.
go run ./hack/genmember -host-services artifacts/components/host-services/rbac.yaml
go run ./hack/genmember -host-services-rules artifacts/charts/kilo-mesh-apiserver/files/host-services-rules.yaml
# The rights of a cluster's CoreDNS to read ServiceImports (clusterset.local):
# kustomize's component and the member chart's rules, which its template
# coredns.yaml wraps with the ServiceAccount of its values.
go run ./hack/genmember -coredns artifacts/components/coredns/rbac.yaml
go run ./hack/genmember -coredns-rules artifacts/charts/kilo-mesh-member/files/coredns-rules.yaml
# Every document that lists the member identity's rights (pkg/member's DocFiles).
go run ./hack/genmember -docs .
