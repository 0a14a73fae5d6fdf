package join

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// Outcomes of a write, as join reports them.
const (
	outcomeCreated    = "created"
	outcomeConfigured = "configured"
	outcomeUnchanged  = "unchanged"
	outcomeDryRun     = "would be applied (server dry run)"
)

// LabelCluster names the mesh entry a kubeconfig Secret written by join is for.
const LabelCluster = "mesh.kilo.squat.ai/cluster"

// identityResources maps the kinds of the member identity to their resources.
var identityResources = map[string]schema.GroupVersionResource{
	"Namespace":          {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

// identityObjects are pkg/member's objects, as applied: the identity, and
// with services its services rights.
func identityObjects(services bool) ([]*unstructured.Unstructured, error) {
	objs := member.Objects()
	if services {
		objs = append(objs, member.ServicesObjects()...)
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		u, err := member.Unstructured(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// applyIdentity server-side-applies the member identity on the member
// cluster with the caller's credentials, forcing: the identity must be
// exactly pkg/member's, not what someone widened it to. A resourceVersion
// that stays the same tells an unchanged object.
func applyIdentity(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured, dryRun bool) ([]string, error) {
	var report []string
	newNamespaces := map[string]bool{}
	for _, u := range objs {
		gvr, ok := identityResources[u.GetKind()]
		if !ok {
			return nil, fmt.Errorf("no resource known for kind %s", u.GetKind())
		}
		res := dyn.Resource(gvr).Namespace(u.GetNamespace())
		before := ""
		if have, err := res.Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
			before = have.GetResourceVersion()
			if have.GetDeletionTimestamp() != nil {
				// Left a moment ago (leave deletes the identity): gone first, then new.
				if err := awaitGone(ctx, res, u.GetKind(), u.GetName()); err != nil {
					return nil, err
				}
				before = ""
			}
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s %s on the member cluster: %w", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "Namespace" && before == "" {
			newNamespaces[u.GetName()] = true
		}
		if dryRun && newNamespaces[u.GetNamespace()] {
			// A dry run creates no namespace, so the server cannot check
			// what would live in it.
			report = append(report, fmt.Sprintf("%s/%s: would be created with its namespace", u.GetKind(), u.GetName()))
			continue
		}
		opts := metav1.ApplyOptions{FieldManager: cli.FieldManager, Force: true}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		after, err := res.Apply(ctx, u.GetName(), u, opts)
		if err != nil {
			return nil, fmt.Errorf("applying %s %s on the member cluster: %w", u.GetKind(), u.GetName(), err)
		}
		report = append(report, fmt.Sprintf("%s/%s: %s", u.GetKind(), u.GetName(), outcome(before, after.GetResourceVersion(), dryRun)))
	}
	return report, nil
}

func outcome(before, after string, dryRun bool) string {
	switch {
	case dryRun:
		return outcomeDryRun
	case before == "":
		return outcomeCreated
	case before == after:
		return outcomeUnchanged
	default:
		return outcomeConfigured
	}
}

// secretApply is the apply configuration of the kubeconfig Secret: only
// the key of the mesh entry, so other keys someone keeps there stay.
func secretApply(ns, name, key, cluster string, kubeconfig []byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, ns).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": cli.FieldManager, LabelCluster: cluster}).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{key: kubeconfig})
}

// applySecret writes the kubeconfig Secret on the host, unless it holds
// that kubeconfig already.
func applySecret(ctx context.Context, kube kubernetes.Interface, s *corev1ac.SecretApplyConfiguration, have *corev1.Secret, dryRun bool) (string, error) {
	for k, v := range s.Data {
		if have != nil && bytes.Equal(have.Data[k], v) && have.Labels[LabelCluster] == s.Labels[LabelCluster] {
			return outcomeUnchanged, nil
		}
	}
	opts := metav1.ApplyOptions{FieldManager: cli.FieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := kube.CoreV1().Secrets(*s.Namespace).Apply(ctx, s, opts); err != nil {
		return "", fmt.Errorf("writing Secret %s/%s on the host cluster: %w", *s.Namespace, *s.Name, err)
	}
	if dryRun {
		return outcomeDryRun, nil
	}
	if have == nil {
		return outcomeCreated, nil
	}
	return outcomeConfigured, nil
}

// entryApply is the apply configuration of one spec.clusters entry; the
// list is a map keyed by name, so applying it touches no other entry.
type entryApply struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   entryMeta      `json:"metadata"`
	Spec       entryApplySpec `json:"spec"`
}

type entryMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

type entryApplySpec struct {
	Clusters []map[string]any `json:"clusters"`
}

// entry is the apply configuration of the member's mesh entry. A field not
// given as a flag keeps the entry's value: the apply owns what it sends, and
// a rerun without the flag must not drop what an earlier one set.
func (o *Options) entry(have *meshv1alpha1.ClusterEntry, secretName, key string, n Networks) map[string]any {
	e := map[string]any{
		"name":                o.Name,
		"kubeconfigSecretRef": map[string]any{"name": secretName, "key": key},
		"podCIDRs":            n.PodCIDRs.Values,
		"wireguardCIDR":       n.WireguardCIDR.Values[0],
	}
	if len(n.ServiceCIDR.Values) > 0 {
		e["serviceCIDR"] = n.ServiceCIDR.Values[0]
	}
	if len(n.AdditionalCIDRs.Values) > 0 {
		e["additionalCIDRs"] = n.AdditionalCIDRs.Values
	}
	if have == nil {
		have = &meshv1alpha1.ClusterEntry{}
	}
	switch {
	case n.NodeCIDRs.Values != nil:
		e["nodeCIDRs"] = n.NodeCIDRs.Values
	case len(have.NodeCIDRs) > 0:
		e["nodeCIDRs"] = have.NodeCIDRs
	}
	switch {
	case o.WireguardPort != nil:
		e["wireguardPort"] = *o.WireguardPort
	case have.WireguardPort != 0 && have.WireguardPort != meshv1alpha1.DefaultWireguardPort:
		e["wireguardPort"] = have.WireguardPort
	}
	switch {
	case o.PersistentKeepalive != nil:
		e["persistentKeepalive"] = *o.PersistentKeepalive
	case have.PersistentKeepalive != 0:
		e["persistentKeepalive"] = have.PersistentKeepalive
	}
	switch {
	case o.Granularity != nil:
		e["granularity"] = *o.Granularity
	case have.Granularity != "" && have.Granularity != meshv1alpha1.GranularityAuto:
		e["granularity"] = have.Granularity
	}
	// false is the default: left out, the apply removes what it set before.
	if (o.BehindNAT != nil && *o.BehindNAT) || (o.BehindNAT == nil && have.BehindNAT) {
		e["behindNAT"] = true
	}
	return e
}

// entryFieldManager owns one entry: a manager per entry, because an apply
// removes what its manager set before and leaves out now, and joining a
// second cluster must not remove the first.
func entryFieldManager(cluster string) string { return cli.FieldManager + "-join-" + cluster }

// entryPatch renders the apply configuration of entry in mesh.
func entryPatch(mesh *meshv1alpha1.ClusterMesh, entry map[string]any) ([]byte, error) {
	return json.Marshal(entryApply{
		APIVersion: meshv1alpha1.SchemeGroupVersion.String(),
		Kind:       "ClusterMesh",
		Metadata:   entryMeta{Name: mesh.Name, Namespace: mesh.Namespace},
		Spec:       entryApplySpec{Clusters: []map[string]any{entry}},
	})
}

// entryUpToDate reports whether the mesh's entry already has every field
// of the apply configuration, so that a rerun writes nothing.
func entryUpToDate(have *meshv1alpha1.ClusterEntry, entry map[string]any) (bool, error) {
	if have == nil {
		return false, nil
	}
	raw, err := json.Marshal(have)
	if err != nil {
		return false, err
	}
	var current map[string]any
	if err := json.Unmarshal(raw, &current); err != nil {
		return false, err
	}
	want, err := json.Marshal(entry)
	if err != nil {
		return false, err
	}
	var wanted map[string]any
	if err := json.Unmarshal(want, &wanted); err != nil {
		return false, err
	}
	for k, v := range wanted {
		if !jsonEqual(current[k], v) {
			return false, nil
		}
	}
	return true, nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// findEntry returns the mesh's entry named name.
func findEntry(mesh *meshv1alpha1.ClusterMesh, name string) *meshv1alpha1.ClusterEntry {
	i := slices.IndexFunc(mesh.Spec.Clusters, func(c meshv1alpha1.ClusterEntry) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &mesh.Spec.Clusters[i]
}
