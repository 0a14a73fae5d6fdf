// Command genmember writes artifacts/member/rbac.yaml from pkg/member, the
// one definition of the member-cluster identity that `kubectl mesh join`
// applies. hack/update-codegen.sh runs it; hack/verify-codegen.sh diffs.
package main

import (
	"fmt"
	"os"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genmember OUTPUT.yaml")
		os.Exit(2)
	}
	data, err := member.Manifest()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
