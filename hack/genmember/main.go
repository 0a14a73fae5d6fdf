// Command genmember writes the member-cluster artifacts from pkg/member:
// the identity that `kubectl mesh join` applies (OUTPUT.yaml); with -services
// FILE its services rights (kustomize's member-services component), with
// -chart-services FILE the same as the member chart's template; with -crds
// DIR the mcs-api CRDs copied from the module of go.mod; with
// -host-services FILE or -host-services-rules FILE the services rights of
// the server's own identity on the host (kustomize's component, the chart's
// rules); with -coredns FILE or -coredns-rules FILE the rights of a
// cluster's CoreDNS to read ServiceImports (kustomize's component, the
// member chart's rules); with -docs ROOT the lists of the identity's rights
// in the documents of pkg/member's DocFiles under ROOT, in place.
// hack/update-codegen.sh runs it; hack/verify-codegen.sh diffs.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

func main() {
	crds := flag.String("crds", "", "write the mcs-api CRDs into this directory instead of the identity")
	docs := flag.String("docs", "", "rewrite the lists of the identity's rights in the documents under this repository root instead of the identity")
	services := flag.String("services", "", "write the member identity's services ClusterRole and binding into this file instead of the identity")
	chartServices := flag.String("chart-services", "", "write the member chart's services template into this file instead of the identity")
	hostServices := flag.String("host-services", "", "write the host-services ClusterRole and binding into this file instead of the identity")
	hostServicesRules := flag.String("host-services-rules", "", "write the host-services rules alone into this file instead of the identity")
	coreDNS := flag.String("coredns", "", "write CoreDNS's ServiceImports ClusterRole and binding into this file instead of the identity")
	coreDNSRules := flag.String("coredns-rules", "", "write CoreDNS's ServiceImports rules alone into this file instead of the identity")
	flag.Parse()
	outputs := map[string]func() ([]byte, error){
		*services: member.ServicesManifest, *chartServices: member.ChartServicesTemplate,
		*hostServices: member.HostServicesManifest, *hostServicesRules: member.HostServicesRulesYAML,
		*coreDNS: member.CoreDNSManifest, *coreDNSRules: member.CoreDNSRulesYAML,
	}
	if err := run(*crds, *docs, outputs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run writes the CRDs into crdDir, else the documents under docsRoot, else
// the one output whose file is named (the key "" stands for the flags not
// given), else the identity.
func run(crdDir, docsRoot string, outputs map[string]func() ([]byte, error), args []string) error {
	switch {
	case crdDir != "":
		return writeCRDs(crdDir)
	case docsRoot != "":
		return writeDocs(docsRoot)
	}
	for path, render := range outputs {
		if path != "" {
			return write(path, render)
		}
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: genmember OUTPUT.yaml | genmember -crds DIR | genmember -docs ROOT | genmember -services FILE | " +
			"genmember -chart-services FILE | genmember -host-services FILE | genmember -host-services-rules FILE | genmember -coredns FILE | genmember -coredns-rules FILE")
	}
	return write(args[0], member.Manifest)
}

func writeCRDs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, crd := range member.CRDs() {
		if err := os.WriteFile(filepath.Join(dir, crd.File), crd.YAML, 0o644); err != nil {
			return fmt.Errorf("writing CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

func writeDocs(root string) error {
	for _, doc := range member.DocFiles {
		path := filepath.Join(root, doc)
		err := write(path, func() ([]byte, error) {
			content, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			return member.RenderDocs(content, strings.HasSuffix(doc, ".yaml"))
		})
		if err != nil {
			return fmt.Errorf("%s: %w", doc, err)
		}
	}
	return nil
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
