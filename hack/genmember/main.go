// Command genmember writes the member-cluster artifacts from pkg/member:
// the identity that `kubectl mesh join` applies (OUTPUT.yaml), with -crds
// DIR the mcs-api CRDs copied from the module of go.mod, and with
// -host-services FILE or -host-services-rules FILE the services rights of the
// server's own identity on the host (kustomize's component, the chart's
// rules), with -coredns FILE or -coredns-rules FILE the rights of a
// cluster's CoreDNS to read ServiceImports (kustomize's component, the
// member chart's rules). hack/update-codegen.sh runs it;
// hack/verify-codegen.sh diffs.
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
	coreDNS := flag.String("coredns", "", "write CoreDNS's ServiceImports ClusterRole and binding into this file instead of the identity")
	coreDNSRules := flag.String("coredns-rules", "", "write CoreDNS's ServiceImports rules alone into this file instead of the identity")
	flag.Parse()
	outputs := map[string]func() ([]byte, error){
		*hostServices: member.HostServicesManifest, *hostServicesRules: member.HostServicesRulesYAML,
		*coreDNS: member.CoreDNSManifest, *coreDNSRules: member.CoreDNSRulesYAML,
	}
	if err := run(*crds, outputs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run writes the CRDs into crdDir, else the one output whose file is
// named (the key "" stands for the flags not given), else the identity.
func run(crdDir string, outputs map[string]func() ([]byte, error), args []string) error {
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
	}
	for path, render := range outputs {
		if path != "" {
			return write(path, render)
		}
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: genmember OUTPUT.yaml | genmember -crds DIR | genmember -host-services FILE | genmember -host-services-rules FILE | genmember -coredns FILE | genmember -coredns-rules FILE")
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
