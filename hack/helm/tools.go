//go:build tools

// Package tools pins Helm v3, which hack/build-tools.sh builds for the
// chart's tests (helm lint, helm template) and `make chart`. It has a module
// of its own because Helm requires the Kubernetes libraries of v0.37, which
// hack/tools' k8s.io/kubernetes v1.36.3 replaces with v0.36.3. The build
// tag keeps this file out of every build while `go mod tidy` still sees the
// import.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
