// Command genmember writes the member-cluster artifacts from pkg/member:
// the identity that `kubectl mesh join` applies (OUTPUT.yaml), with -crds
// DIR the mcs-api CRDs copied from the module of go.mod, and with
// -host-services FILE or -host-services-rules FILE the services rights of the
// server's own identity on the host (kustomize's component, the chart's
// rules). hack/update-codegen.sh runs it; hack/verify-codegen.sh diffs.
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
	hostServices := flag.String("host-services", "", "write the host-services ClusterRole and binding into this file instead of the identity")
	hostServicesRules := flag.String("host-services-rules", "", "write the host-services rules alone into this file instead of the identity")
	flag.Parse()
	if err := run(*crds, *hostServices, *hostServicesRules, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(crdDir, hostServices, hostServicesRules string, args []string) error {
	switch {
	case crdDir != "":
		if err := os.MkdirAll(crdDir, 0o755); err != nil {
			return err
		}
		for _, crd := range member.CRDs() {
			if err := os.WriteFile(filepath.Join(crdDir, crd.File), crd.YAML, 0o644); err != nil {
				return fmt.Errorf("writing CRD %s: %w", crd.Name, err)
			}
		}
		return nil
	case hostServices != "":
		return write(hostServices, member.HostServicesManifest)
	case hostServicesRules != "":
		return write(hostServicesRules, member.HostServicesRulesYAML)
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: genmember OUTPUT.yaml | genmember -crds DIR | genmember -host-services FILE | genmember -host-services-rules FILE")
	}
	return write(args[0], member.Manifest)
}

func write(path string, render func() ([]byte, error)) error {
	data, err := render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
