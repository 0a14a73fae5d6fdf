package member

import (
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// crdHeader opens each mcs-api CRD file the member artifacts ship.
const crdHeader = `# Copied by hack/genmember from sigs.k8s.io/mcs-api (config/crd) at the
# version go.mod requires; do not edit. Run 'make generate'.
`

// CRD is one CustomResourceDefinition of the Multi-Cluster Services API.
type CRD struct {
	// Name is the CRD's metadata.name.
	Name string
	// File is the file name it is shipped under.
	File string
	// YAML is the manifest as shipped: a header, then upstream's bytes.
	YAML []byte
}

// CRDs returns the mcs-api CRDs (ServiceExport, ServiceImport) a member
// cluster needs for multi-cluster services, taken from the mcs-api module
// itself so that the shipped copies cannot drift from the types the server
// reads and writes.
func CRDs() []CRD {
	return []CRD{
		{Name: mcsv1beta1.ServiceExportFullName, File: "multicluster.x-k8s.io_serviceexports.yaml", YAML: withHeader(mcscrd.ServiceExportCRD)},
		{Name: mcsv1beta1.ServiceImportFullName, File: "multicluster.x-k8s.io_serviceimports.yaml", YAML: withHeader(mcscrd.ServiceImportCRD)},
	}
}

func withHeader(upstream []byte) []byte {
	return append([]byte(crdHeader), upstream...)
}
