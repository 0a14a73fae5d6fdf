//go:build tools

// Package tools pins CoreDNS, which hack/build-tools.sh builds for the
// end-to-end tests of `kubectl mesh dns` (a real CoreDNS answering
// clusterset.local from a member's kube-apiserver). It has a module of its
// own because CoreDNS requires the Kubernetes libraries of v0.37, which
// hack/tools' k8s.io/kubernetes v1.36.3 replaces with v0.36.3. The build tag
// keeps this file out of every build while `go mod tidy` still sees the
// import.
package tools

import _ "github.com/coredns/coredns"
