package grants

import (
	"encoding/json"
	"fmt"

	"k8s.io/apiserver/pkg/authentication/user"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Author is who last wrote a mesh's spec, as admission recorded it in
// meshv1alpha1.AnnotationServicesAuthor: the reconciler acts long after the
// requester is gone, and asks SubjectAccessReviews for this user.
type Author struct {
	Name   string              `json:"name"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// AuthorOf is the author recorded on mesh; false when none is, or the
// record does not parse (only admission writes it, so that is a record no
// admission wrote, which grants nothing).
func AuthorOf(mesh *meshv1alpha1.ClusterMesh) (Author, bool) {
	raw := mesh.Annotations[meshv1alpha1.AnnotationServicesAuthor]
	if raw == "" {
		return Author{}, false
	}
	var a Author
	if err := json.Unmarshal([]byte(raw), &a); err != nil || a.Name == "" {
		return Author{}, false
	}
	return a, true
}

// EncodeAuthor is the annotation's value for the requester u.
func EncodeAuthor(u user.Info) (string, error) {
	raw, err := json.Marshal(Author{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()})
	if err != nil {
		return "", fmt.Errorf("recording the author of a mesh: %w", err)
	}
	return string(raw), nil
}

// User is the author as the authorizer takes it.
func (a Author) User() user.Info {
	return &user.DefaultInfo{Name: a.Name, UID: a.UID, Groups: a.Groups, Extra: a.Extra}
}
