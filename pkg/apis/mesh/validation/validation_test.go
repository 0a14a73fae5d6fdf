package validation

import (
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func validMesh() *meshv1alpha1.ClusterMesh {
	m := &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "tenant-a"},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{
				Name:          "eu",
				Local:         true,
				PodCIDRs:      []string{"10.42.0.0/16", "fd00:42::/56"},
				WireguardCIDR: "10.4.0.0/16",
				ServiceCIDR:   "10.43.0.0/16",
				NodeCIDRs:     []string{"192.168.1.0/24"},
			},
			{
				Name:                "us",
				KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "us-kubeconfig"},
				PodCIDRs:            []string{"10.52.0.0/16"},
				WireguardCIDR:       "10.5.0.0/16",
				AdditionalCIDRs:     []string{"172.20.0.0/16"},
				PersistentKeepalive: 25,
				Granularity:         meshv1alpha1.GranularityFull,
			},
		}},
	}
	meshv1alpha1.SetDefaults(m)
	return m
}

func TestValidateClusterMesh(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *meshv1alpha1.ClusterMesh)
		// want lists the field paths of the expected errors; empty means valid.
		want []string
	}{
		{name: "valid", mutate: func(*meshv1alpha1.ClusterMesh) {}},
		{name: "valid three clusters", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters = append(m.Spec.Clusters, meshv1alpha1.ClusterEntry{
				Name: "ap", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "ap", Key: "config"},
				PodCIDRs: []string{"10.62.0.0/16"}, WireguardCIDR: "10.6.0.0/16", WireguardPort: 51821,
				Granularity: meshv1alpha1.GranularityCross, TopologyLabel: "topology.kubernetes.io/zone",
			})
		}},
		{name: "services enabled", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
		}},
		{name: "relay named, spoke behind NAT", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.RelayCluster, m.Spec.Clusters[1].BehindNAT = "eu", true
		}},
		{name: "relay not a member", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.RelayCluster = "hub" }, want: []string{"spec.relayCluster"}},
		{name: "relay behind NAT", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.RelayCluster, m.Spec.Clusters[1].BehindNAT = "us", true
		}, want: []string{"spec.relayCluster"}},
		{name: "services neither Enabled nor Disabled", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.MultiClusterServices = "enabled" },
			want: []string{"spec.multiClusterServices"}},
		{name: "mesh name not a DNS label", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Name = "prod.mesh" }, want: []string{"metadata.name"}},
		{name: "one cluster", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters = m.Spec.Clusters[:1] }, want: []string{"spec.clusters"}},
		{name: "no clusters", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters = nil }, want: []string{"spec.clusters"}},
		{name: "cluster name missing", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].Name = "" }, want: []string{"spec.clusters[1].name"}},
		{name: "cluster name not a label", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].Name = "US_East" }, want: []string{"spec.clusters[1].name"}},
		{name: "duplicate cluster name", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].Name = "eu" }, want: []string{"spec.clusters[1].name"}},
		// A mesh between a tenant's own remote clusters asks nothing of the host.
		{name: "valid without a local cluster", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[0].Local = false
			m.Spec.Clusters[0].KubeconfigSecretRef = &meshv1alpha1.SecretKeyReference{Name: "eu", Key: "kubeconfig"}
		}},
		{name: "two local clusters", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[1].Local = true
			m.Spec.Clusters[1].KubeconfigSecretRef = nil
		}, want: []string{"spec.clusters[1].local"}},
		{name: "secret ref on local cluster", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[0].KubeconfigSecretRef = &meshv1alpha1.SecretKeyReference{Name: "x", Key: "kubeconfig"}
		}, want: []string{"spec.clusters[0].kubeconfigSecretRef"}},
		{name: "secret ref missing on remote", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].KubeconfigSecretRef = nil }, want: []string{"spec.clusters[1].kubeconfigSecretRef"}},
		{name: "secret name missing", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].KubeconfigSecretRef.Name = "" }, want: []string{"spec.clusters[1].kubeconfigSecretRef.name"}},
		{name: "secret name invalid", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].KubeconfigSecretRef.Name = "Bad/Name" }, want: []string{"spec.clusters[1].kubeconfigSecretRef.name"}},
		{name: "secret key invalid", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].KubeconfigSecretRef.Key = "..etc" }, want: []string{"spec.clusters[1].kubeconfigSecretRef.key"}},
		{name: "no pod CIDRs", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].PodCIDRs = nil }, want: []string{"spec.clusters[1].podCIDRs"}},
		{name: "pod CIDR garbage", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].PodCIDRs = []string{"10.52.0.0"} }, want: []string{"spec.clusters[1].podCIDRs[0]"}},
		{name: "pod CIDR not canonical", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].PodCIDRs = []string{"10.52.0.1/16"} }, want: []string{"spec.clusters[1].podCIDRs[0]"}},
		{name: "IPv6 not canonical", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[0].PodCIDRs[1] = "FD00:0042:0::/56" }, want: []string{"spec.clusters[0].podCIDRs[1]"}},
		{name: "default route", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].AdditionalCIDRs = []string{"0.0.0.0/0"} }, want: []string{"spec.clusters[1].additionalCIDRs[0]"}},
		{name: "IPv4-mapped IPv6", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[1].AdditionalCIDRs = []string{"::ffff:172.20.0.0/112"}
		}, want: []string{"spec.clusters[1].additionalCIDRs[0]"}},
		{name: "wireguard CIDR missing", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].WireguardCIDR = "" }, want: []string{"spec.clusters[1].wireguardCIDR"}},
		{name: "wireguard CIDR invalid", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].WireguardCIDR = "10.5.0.0/33" }, want: []string{"spec.clusters[1].wireguardCIDR"}},
		{name: "service CIDR invalid", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[0].ServiceCIDR = "services" }, want: []string{"spec.clusters[0].serviceCIDR"}},
		{name: "node CIDR invalid", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[0].NodeCIDRs = []string{"192.168.1.0/24", "192.168.2.7/24"}
		}, want: []string{"spec.clusters[0].nodeCIDRs[1]"}},
		{name: "overlap inside one cluster", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[0].ServiceCIDR = "10.42.128.0/17" }, want: []string{"spec.clusters[0].serviceCIDR"}},
		{name: "overlap across clusters", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].PodCIDRs = []string{"10.42.0.0/16"} }, want: []string{"spec.clusters[1].podCIDRs[0]"}},
		{name: "same kilo subnet on both clusters", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].WireguardCIDR = "10.4.0.0/16" }, want: []string{"spec.clusters[1].wireguardCIDR"}},
		{name: "IPv6 overlap across clusters", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].AdditionalCIDRs = []string{"fd00:42::/64"} }, want: []string{"spec.clusters[1].additionalCIDRs[0]"}},
		{name: "port zero", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].WireguardPort = -1 }, want: []string{"spec.clusters[1].wireguardPort"}},
		{name: "port too large", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].WireguardPort = 70000 }, want: []string{"spec.clusters[1].wireguardPort"}},
		{name: "keepalive negative", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].PersistentKeepalive = -5 }, want: []string{"spec.clusters[1].persistentKeepalive"}},
		{name: "keepalive too large", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].PersistentKeepalive = 65536 }, want: []string{"spec.clusters[1].persistentKeepalive"}},
		{name: "granularity unknown", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].Granularity = "location" }, want: []string{"spec.clusters[1].granularity"}},
		{name: "topology label invalid", mutate: func(m *meshv1alpha1.ClusterMesh) { m.Spec.Clusters[1].TopologyLabel = "not a label" }, want: []string{"spec.clusters[1].topologyLabel"}},
		{name: "every error at once", mutate: func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[0].PodCIDRs = []string{"nope"}
			m.Spec.Clusters[1].WireguardPort = 0
			m.Spec.Clusters[1].KubeconfigSecretRef = nil
		}, want: []string{"spec.clusters[0].podCIDRs[0]", "spec.clusters[1].kubeconfigSecretRef", "spec.clusters[1].wireguardPort"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMesh()
			tt.mutate(m)
			var got []string
			for _, e := range ValidateClusterMesh(m) {
				got = append(got, e.Field)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("want errors at %v, got %v: %v", tt.want, got, ValidateClusterMesh(m))
			}
		})
	}
}

func TestValidateClusterMeshStatusUpdate(t *testing.T) {
	old := validMesh()
	old.ResourceVersion = "1"
	tests := []struct {
		name   string
		status meshv1alpha1.ClusterMeshStatus
		want   string
	}{
		{name: "valid", status: meshv1alpha1.ClusterMeshStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: meshv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "AllPeersApplied", LastTransitionTime: metav1.Now(),
		}}}},
		{name: "condition without reason", status: meshv1alpha1.ClusterMeshStatus{Conditions: []metav1.Condition{{
			Type: meshv1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now(),
		}}}, want: "status.conditions[0].reason"},
		{name: "negative observed generation", status: meshv1alpha1.ClusterMeshStatus{ObservedGeneration: -1}, want: "status.observedGeneration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := old.DeepCopy()
			m.Status = tt.status
			errs := ValidateClusterMeshStatusUpdate(m, old)
			if tt.want == "" && len(errs) > 0 || tt.want != "" && (len(errs) == 0 || errs[0].Field != tt.want) {
				t.Fatalf("want error at %q, got %v", tt.want, errs)
			}
		})
	}
}
