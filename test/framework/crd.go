package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PeerCRDName is the name of Kilo's Peer CustomResourceDefinition.
const PeerCRDName = "peers.kilo.squat.ai"

// PeerGVR is the resource of Kilo Peers (cluster-scoped).
var PeerGVR = schema.GroupVersionResource{Group: "kilo.squat.ai", Version: "v1alpha1", Resource: "peers"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// PeerCRDPath returns the Peer CRD manifest the framework installs:
// Options.PeerCRDPath, else $KILO_MESH_PEER_CRD, else
// artifacts/crds/kilo.squat.ai_peers.yaml in the repository.
func (e *Env) PeerCRDPath() (string, error) {
	if e.opts.PeerCRDPath != "" {
		return e.opts.PeerCRDPath, nil
	}
	if p := os.Getenv(PeerCRDEnv); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "artifacts", "crds", "kilo.squat.ai_peers.yaml"), nil
}

func (e *Env) installPeerCRD(ctx context.Context) error {
	path, err := e.PeerCRDPath()
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("Kilo Peer CRD manifest: %w (it is generated from the Peer types into artifacts/crds; set %s or Options.PeerCRDPath to another file, or Options.SkipPeerCRD)", err, PeerCRDEnv)
	}
	errs := make([]error, len(e.clusters))
	var wg sync.WaitGroup
	for i := range e.clusters {
		wg.Go(func() {
			if _, _, err := e.Kubectl(ctx, i, UserAdmin, "apply", "-f", path); err != nil {
				errs[i] = fmt.Errorf("cluster %d: %w", i, err)
				return
			}
			errs[i] = e.WaitCRDEstablished(ctx, i, PeerCRDName)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WaitCRDEstablished waits until CRD name is Established on cluster i and
// each version it serves is in the cluster's aggregated discovery, through
// which kubectl maps kinds: Established does not imply that.
func (e *Env) WaitCRDEstablished(ctx context.Context, cluster int, name string) error {
	client := e.Dynamic(cluster, UserAdmin).Resource(crdGVR)
	disco := e.Client(cluster, UserAdmin).Discovery()
	return poll(ctx, 50*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		crd, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasCondition(crd, "Established", "True") {
			return fmt.Errorf("CRD %s on cluster %d not Established yet", name, cluster)
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok && m["served"] == true {
				gvr := schema.GroupVersionResource{Group: group, Version: fmt.Sprint(m["name"]), Resource: plural}
				if err := servedInDiscovery(disco, gvr); err != nil {
					return fmt.Errorf("CRD %s on cluster %d: %w", name, cluster, err)
				}
			}
		}
		return nil
	})
}

// hasCondition reports whether obj has status.conditions[type=condType] with
// the given status.
func hasCondition(obj *unstructured.Unstructured, condType, status string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == status {
			return true
		}
	}
	return false
}

// conditionMessage returns reason and message of condition condType, for
// error messages.
func conditionMessage(obj *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType {
			return fmt.Sprintf("%v=%v: %v: %v", condType, m["status"], m["reason"], m["message"])
		}
	}
	return "no " + condType + " condition"
}
