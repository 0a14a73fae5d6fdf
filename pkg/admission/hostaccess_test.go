package admission

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
)

// verbsAllowed answers reviews of peers.kilo.squat.ai from a set of verbs.
type verbsAllowed map[string]bool

func (v verbsAllowed) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetAPIGroup() == "kilo.squat.ai" && a.GetResource() == "peers" && a.GetNamespace() == "" && v[a.GetVerb()] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

type coverageOf map[string]grants.Coverage

func (c coverageOf) Coverage(ns string) (grants.Coverage, error) {
	cov := c[ns]
	cov.Namespace = ns
	return cov, nil
}

func admitted(t *testing.T, p *Plugin, obj, old *meshv1alpha1.ClusterMesh) (*meshv1alpha1.ClusterMesh, error) {
	t.Helper()
	op, oldObj := admission.Create, runtime.Object(nil)
	if old != nil {
		op, oldObj = admission.Update, old
	}
	attrs := admission.NewAttributesRecord(obj, oldObj, meshv1alpha1.SchemeGroupVersion.WithKind("ClusterMesh"), "tenant-a", obj.Name,
		meshv1alpha1.SchemeGroupVersion.WithResource("clustermeshes"), "", op, nil, false, &user.DefaultInfo{Name: "someone"})
	return obj, p.Admit(context.Background(), attrs, nil)
}

func TestAdmitRecordsHostAccess(t *testing.T) {
	withLocal := func(annotation string) *meshv1alpha1.ClusterMesh {
		m := mesh(
			meshv1alpha1.ClusterEntry{Name: "a", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
			meshv1alpha1.ClusterEntry{Name: "b", PodCIDRs: []string{"10.52.0.0/16"}, WireguardCIDR: "10.5.0.0/16"},
		)
		m.Name, m.Namespace = "m", "tenant-a"
		if annotation != "" {
			m.Annotations = map[string]string{meshv1alpha1.AnnotationHostAccess: annotation}
		}
		return m
	}
	granted := coverageOf{"tenant-a": {Grants: []string{"g"}, MemberNetworks: []netip.Prefix{netip.MustParsePrefix("10.52.0.0/16")}}}
	all := verbsAllowed{"create": true, "update": true, "delete": true}
	tests := []struct {
		name    string
		rights  verbsAllowed
		grants  coverageOf
		obj     *meshv1alpha1.ClusterMesh
		old     *meshv1alpha1.ClusterMesh
		want    string // the recorded value
		refused string // a part of the 403
	}{
		{name: "peer rights", rights: all, obj: withLocal(""), want: meshv1alpha1.HostAccessPeerRights},
		{name: "grant", rights: verbsAllowed{"create": true, "update": true}, grants: granted, obj: withLocal(""), want: meshv1alpha1.HostAccessGrant},
		{name: "neither", rights: verbsAllowed{"create": true}, obj: withLocal(""), refused: `you may not update, delete) or a ClusterMeshGrant covering namespace "tenant-a" (none does)`},
		{name: "a client's record is overwritten", grants: granted, obj: withLocal(meshv1alpha1.HostAccessPeerRights), want: meshv1alpha1.HostAccessGrant},
		{name: "a client's record does not help", obj: withLocal(meshv1alpha1.HostAccessPeerRights), refused: "spec.clusters[0].local"},
		{name: "no local cluster: no record", obj: func() *meshv1alpha1.ClusterMesh {
			m := withLocal(meshv1alpha1.HostAccessPeerRights)
			m.Spec.Clusters[0].Local = false
			return m
		}()},
		{name: "metadata-only write keeps the stored record", obj: withLocal(meshv1alpha1.HostAccessPeerRights), old: withLocal(meshv1alpha1.HostAccessGrant),
			want: meshv1alpha1.HostAccessGrant},
		{name: "metadata-only write cannot remove the record", obj: withLocal(""), old: withLocal(meshv1alpha1.HostAccessGrant), want: meshv1alpha1.HostAccessGrant},
		{name: "metadata-only write of a pre-grant mesh keeps it without one", obj: withLocal(meshv1alpha1.HostAccessGrant), old: withLocal("")},
		{name: "spec write is decided again", rights: all, obj: func() *meshv1alpha1.ClusterMesh {
			m := withLocal("")
			m.Spec.Clusters[1].PersistentKeepalive = 25
			return m
		}(), old: withLocal(meshv1alpha1.HostAccessGrant), want: meshv1alpha1.HostAccessPeerRights},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(nil)
			p.SetAuthorizer(tt.rights)
			g := tt.grants
			if g == nil {
				g = coverageOf{}
			}
			p.SetGrants(g)
			got, err := admitted(t, p, tt.obj, tt.old)
			if tt.refused != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("want 403 saying %q, got %v", tt.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := got.Annotations[meshv1alpha1.AnnotationHostAccess]; v != tt.want || (tt.want == "" && ok) {
				t.Errorf("recorded %q (present %v), want %q", v, ok, tt.want)
			}
		})
	}
}

// TestCheckGrant: on a grant, every network outside it is refused, each
// with its field; other bases are not the grant's to judge.
func TestCheckGrant(t *testing.T) {
	p := New(nil)
	p.SetGrants(coverageOf{"tenant-a": {Grants: []string{"g"},
		MemberNetworks: []netip.Prefix{netip.MustParsePrefix("10.52.0.0/16"), netip.MustParsePrefix("10.5.0.0/16")},
		LocalNetworks:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	m := mesh(
		meshv1alpha1.ClusterEntry{Name: "a", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
		meshv1alpha1.ClusterEntry{Name: "b", PodCIDRs: []string{"10.52.0.0/16"}, WireguardCIDR: "10.5.0.0/16", AdditionalCIDRs: []string{"0.0.0.0/1", "128.0.0.0/1"}},
	)
	m.ObjectMeta = metav1.ObjectMeta{Namespace: "tenant-a", Annotations: map[string]string{meshv1alpha1.AnnotationHostAccess: meshv1alpha1.HostAccessGrant}}
	errs, err := p.checkGrant(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 || errs[0].Field != "spec.clusters[1].additionalCIDRs[0]" || errs[1].Field != "spec.clusters[1].additionalCIDRs[1]" {
		t.Fatalf("errors %v", errs)
	}
	m.Annotations[meshv1alpha1.AnnotationHostAccess] = meshv1alpha1.HostAccessPeerRights
	if errs, _ := p.checkGrant(m); len(errs) != 0 {
		t.Errorf("peer rights held to the grant: %v", errs)
	}
}
