//go:build tools

// Package tools pins the Kubernetes and etcd binaries (kube-apiserver,
// kube-controller-manager, kubectl, etcd) that hack/build-tools.sh
// builds for the test framework and `make run`, and crane, which `make push`
// uploads the image with. The build tag keeps this file out of every build
// while `go mod tidy` still sees the imports.
package tools

import (
	_ "github.com/google/go-containerregistry/cmd/crane"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
