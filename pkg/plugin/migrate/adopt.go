package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// AnnotationAdoptedFrom records on a handed-over Peer which predecessor
// mesh wrote it, for whoever wonders where it came from before the server
// replaces it.
const AnnotationAdoptedFrom = "mesh.kilo.squat.ai/adopted-from"

// listPredecessorPeers lists, on every open member, the Peers labelled with
// the predecessor's mesh name.
func listPredecessorPeers(ctx context.Context, members map[string]*cli.Clients, oldName string) (map[string][]kilov1alpha1.Peer, error) {
	out := map[string][]kilov1alpha1.Peer{}
	sel := metav1.ListOptions{LabelSelector: LabelPredecessorMesh + "=" + oldName}
	for name, c := range members {
		list, err := listPeers(ctx, c, sel)
		if err != nil {
			return nil, fmt.Errorf("listing the predecessor's Peers on %s: %w", name, err)
		}
		if len(list) > 0 {
			out[name] = list
		}
	}
	return out, nil
}

func listPeers(ctx context.Context, c *cli.Clients, opts metav1.ListOptions) ([]kilov1alpha1.Peer, error) {
	list, err := c.Dynamic.Resource(kilov1alpha1.PeerResource).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]kilov1alpha1.Peer, 0, len(list.Items))
	for _, u := range list.Items {
		var p kilov1alpha1.Peer
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
			return nil, fmt.Errorf("Peer %s: %w", u.GetName(), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// handedPeer is a Peer handed over to the server.
type handedPeer struct {
	target string
	name   string
	uid    types.UID
}

// handOver relabels every Peer adopted or removed as the mesh's own, and
// drops the predecessor's labels: from then on the server manages it (and
// the predecessor, were it started again, no longer does). The server then
// creates the group Peers and deletes these in one pass, so no traffic is
// cut for longer than that pass; a Peer whose source cluster the server
// cannot see is kept by it as it is. The resourceVersion makes each patch
// fail on a Peer changed since it was classified.
func handOver(ctx context.Context, members map[string]*cli.Clients, mesh *meshv1alpha1.ClusterMesh, oldNamespace, oldName string, fates []PeerFate) ([]handedPeer, error) {
	var handed []handedPeer
	for _, f := range fates {
		if f.Action == ActionLeave {
			continue
		}
		labels := map[string]any{LabelPredecessorMesh: nil, LabelPredecessorSource: nil}
		for k, v := range planner.ManagedLabels(mesh.Namespace, mesh.Name, mesh.UID, f.Source) {
			labels[k] = v
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": f.Peer.ResourceVersion,
			"labels":          labels,
			"annotations":     map[string]any{AnnotationAdoptedFrom: fmt.Sprintf("kilo-clustermesh-operator %s/%s (%s)", oldNamespace, oldName, f.Action)},
		}})
		if err != nil {
			return handed, err
		}
		_, err = members[f.Target].Dynamic.Resource(kilov1alpha1.PeerResource).Patch(ctx, f.Peer.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: cli.FieldManager})
		if err != nil {
			return handed, fmt.Errorf("handing Peer %s on %s over: %w", f.Peer.Name, f.Target, err)
		}
		handed = append(handed, handedPeer{target: f.Target, name: f.Peer.Name, uid: f.Peer.UID})
	}
	return handed, nil
}

// waitConverged waits until the server has deleted every handed-over Peer
// and the plan has nothing left to create, update or delete on any
// reachable cluster, or until timeout.
func waitConverged(ctx context.Context, w io.Writer, api *cli.MeshAPI, members map[string]*cli.Clients, mesh *meshv1alpha1.ClusterMesh, handed []handedPeer, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		pending, err := pendingWork(ctx, api, members, mesh, handed)
		if err == nil && pending == "" {
			return nil
		}
		if err != nil {
			pending = err.Error()
		}
		if pending != last {
			fmt.Fprintf(w, "  waiting for the server: %s\n", pending)
			last = pending
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not finish within %s: %s", timeout, pending)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func pendingWork(ctx context.Context, api *cli.MeshAPI, members map[string]*cli.Clients, mesh *meshv1alpha1.ClusterMesh, handed []handedPeer) (string, error) {
	left := 0
	for _, h := range handed {
		u, err := members[h.target].Dynamic.Resource(kilov1alpha1.PeerResource).Get(ctx, h.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", err
		case u.GetUID() == h.uid:
			left++
		}
	}
	plan, err := api.Plan(ctx, mesh.Namespace, mesh.Name)
	if err != nil {
		return "", err
	}
	changes := 0
	for _, t := range plan.Targets {
		changes += len(t.Create) + len(t.Update) + len(t.Delete)
	}
	if left == 0 && changes == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d handed-over Peers not yet replaced, %d Peer changes planned", left, changes), nil
}

// verify checks the result on every open member: one Peer of the mesh per
// exported group of every other cluster, and no public key on two Peers
// (kg keys peers by public key, so two would clobber each other).
func verify(ctx context.Context, members map[string]*cli.Clients, plan *meshv1alpha1.ClusterMeshPlan, mesh *meshv1alpha1.ClusterMesh) ([]string, error) {
	var problems []string
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, target := range names {
		all, err := listPeers(ctx, members[target], metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing Peers on %s: %w", target, err)
		}
		byKey := map[string][]string{}
		perGroup := map[string]int{}
		for i := range all {
			p := &all[i]
			byKey[p.Spec.PublicKey] = append(byKey[p.Spec.PublicKey], p.Name)
			if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) {
				perGroup[p.Labels[planner.LabelSourceCluster]+" "+p.Annotations[planner.AnnotationSourceGroup]]++
			}
		}
		for key, peers := range byKey {
			if len(peers) > 1 {
				slices.Sort(peers)
				problems = append(problems, fmt.Sprintf("%s: Peers %s share the public key %s", target, strings.Join(peers, ", "), key))
			}
		}
		for _, c := range plan.Clusters {
			if c.Name == target || !c.Reachable {
				continue
			}
			for _, g := range c.Groups {
				if n := perGroup[c.Name+" "+g.Name]; g.Ready && n != 1 {
					problems = append(problems, fmt.Sprintf("%s: %d Peers of the mesh for group %s of %s, want 1 (kubectl mesh plan %s)", target, n, g.Name, c.Name, mesh.Name))
				}
			}
		}
	}
	slices.Sort(problems)
	return problems, nil
}
