// Command genmember writes the member-cluster artifacts from pkg/member:
// the identity that `kubectl mesh join` applies (OUTPUT.yaml), and with
// -crds DIR the mcs-api CRDs copied from the module of go.mod.
// hack/update-codegen.sh runs it; hack/verify-codegen.sh diffs.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

func main() {
	crds := flag.String("crds", "", "write the mcs-api CRDs into this directory instead of the identity")
	flag.Parse()
	if err := run(*crds, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(crdDir string, args []string) error {
	if crdDir != "" {
		if err := os.MkdirAll(crdDir, 0o755); err != nil {
			return err
		}
		for _, crd := range member.CRDs() {
			if err := os.WriteFile(filepath.Join(crdDir, crd.File), crd.YAML, 0o644); err != nil {
				return fmt.Errorf("writing CRD %s: %w", crd.Name, err)
			}
		}
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: genmember OUTPUT.yaml | genmember -crds DIR")
	}
	data, err := member.Manifest()
	if err != nil {
		return err
	}
	return os.WriteFile(args[0], data, 0o644)
}
