package member

import (
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// Right is one rule of the member identity with what it is for: the rule
// is granted, the words are what every document that lists the rights
// shows (RenderDocs), so the two cannot say different things.
type Right struct {
	Rule rbacv1.PolicyRule
	// What says the right in a few words, e.g. "read Nodes".
	What string
	// Why says what the server does with it.
	Why string
}

var (
	readVerbs   = []string{"get", "list", "watch"}
	manageVerbs = []string{"get", "list", "watch", "create", "update", "delete"}
)

// BaseRights are what every mesh needs of a member cluster: read its Nodes,
// manage Kilo Peers there, and read the one namespace whose UID tells which
// cluster a kubeconfig reaches.
func BaseRights() []Right {
	return []Right{
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: readVerbs},
			What: "read Nodes",
			Why:  "Kilo's annotations: keys, endpoints, leaders, locations",
		},
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{IdentityNamespace}, Verbs: []string{"get"}},
			What: "get the namespace " + IdentityNamespace,
			Why:  "its UID verifies which cluster a kubeconfig reaches",
		},
		{
			Rule: rbacv1.PolicyRule{
				APIGroups: []string{kilov1alpha1.GroupName},
				Resources: []string{kilov1alpha1.PeerResource.Resource},
				Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			},
			What: "manage Kilo Peers",
			Why:  "the mesh's Peers: server-side apply, updates, deletes with a UID precondition",
		},
	}
}

// ServicesRights are what multi-cluster services need of a member cluster
// besides BaseRights, each as narrow as the code that uses it: lists and
// watches are cluster-wide because exports may be in any namespace and
// imports follow them (namespace sameness); nothing is patched; ServiceExports
// are only read and their status written.
func ServicesRights() []Right {
	return append([]Right{{
		Rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
		What: "list namespaces",
		Why:  "a service is imported only where its namespace exists (namespaces are never created)",
	}}, servicesObjectRights()...)
}

// servicesObjectRights are ServicesRights on the services objects alone:
// the server's own identity on the host needs these (HostServicesRules),
// as it reads namespaces there anyway.
func servicesObjectRights() []Right {
	return []Right{
		{
			// Services and EndpointSlices cannot be limited to the mesh's own
			// by RBAC; the server only writes and deletes those carrying its
			// labels (docs/security.md).
			Rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: manageVerbs},
			What: "manage Services",
			Why:  "exported Services are read; the derived Services of ClusterSetIP imports are written (only those carrying the mesh's labels are updated or deleted)",
		},
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: manageVerbs},
			What: "manage EndpointSlices",
			Why:  "exported endpoints are read; the imports' EndpointSlices are written (only those carrying the mesh's labels are updated or deleted)",
		},
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceExportPluralName}, Verbs: []string{"list", "watch"}},
			What: "read ServiceExports",
			Why:  "users create exports; the server never writes them",
		},
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceExportPluralName + "/status"}, Verbs: []string{"update"}},
			What: "write ServiceExports' status",
			Why:  "the Valid, Ready and Conflict conditions",
		},
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceImportPluralName}, Verbs: manageVerbs},
			What: "manage ServiceImports",
			Why:  "the imports",
		},
		{
			Rule: rbacv1.PolicyRule{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceImportPluralName + "/status"}, Verbs: []string{"update"}},
			What: "write ServiceImports' status",
			Why:  "status.clusters and the Ready condition",
		},
	}
}

// BaseRules are the rules of the ClusterRole every member gets.
func BaseRules() []rbacv1.PolicyRule { return rules(BaseRights()) }

// ServicesRules are the rules of the ClusterRole a member of a mesh with
// multi-cluster services gets as well.
func ServicesRules() []rbacv1.PolicyRule { return rules(ServicesRights()) }

// HostServicesRules are the services rules the server's own identity needs
// on the host cluster when a local cluster takes part in services
// (HostServicesObjects): ServicesRules on the services objects.
func HostServicesRules() []rbacv1.PolicyRule { return rules(servicesObjectRights()) }

func rules(rights []Right) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rights))
	for i, r := range rights {
		out[i] = r.Rule
	}
	return out
}

// resourceOf names a rule's resource as kubectl does: resource.group,
// with the subresource after a slash.
func resourceOf(r rbacv1.PolicyRule) string {
	res, sub, _ := strings.Cut(r.Resources[0], "/")
	if g := r.APIGroups[0]; g != "" {
		res += "." + g
	}
	if sub != "" {
		res += "/" + sub
	}
	return res
}
