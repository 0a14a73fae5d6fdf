package hollow

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// patch applies a JSON merge, JSON or strategic merge patch (the last for
// built-in types only, as for a kube-apiserver's CRDs), or a server-side
// apply.
func (m *Member) patch(w http.ResponseWriter, r *http.Request, req *request) error {
	pt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if types.PatchType(pt) == types.ApplyYAMLPatchType {
		return m.apply(w, r, req)
	}
	if err := patchable(req.res, types.PatchType(pt)); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	s := m.store
	s.mu.Lock()
	o, err := m.patchLocked(req, types.PatchType(pt), body, r.URL.Query().Get("fieldManager"))
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return m.writeStored(w, r, req.res, http.StatusOK, o)
}

// patchable refuses a patch type the resource is not patched with, before
// the object is looked at, as a kube-apiserver does.
func patchable(res *resource, pt types.PatchType) error {
	switch pt {
	case types.MergePatchType, types.JSONPatchType:
		return nil
	case types.StrategicMergePatchType:
		if res.builtin {
			return nil
		}
	}
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.gvr.GroupResource(), "",
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
			types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType), 0, false)
}

func (m *Member) patchLocked(req *request, pt types.PatchType, body []byte, manager string) (*stored, error) {
	prev := m.store.objects[req.res][objectKey(req.namespace, req.name)]
	if prev == nil {
		return nil, apierrors.NewNotFound(req.res.gvr.GroupResource(), req.name)
	}
	current, err := prev.encoded(jsonMedia)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch pt {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(current, body)
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(body); err == nil {
			patched, err = p.Apply(current)
		}
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(current, body, req.res.newObject())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj, md, err := decode(req.res, patched)
	if err != nil {
		return nil, err
	}
	return m.updateLocked(req, obj, md, manager, metav1.ManagedFieldsOperationUpdate)
}

// apply is a server-side apply, simplified for what the server applies:
// Kilo Peers that it alone manages. It is not field-by-field: the applied
// labels and annotations are set (others stay), and everything else the
// client owns (a Peer's spec) is replaced whole. Without force, an object
// another manager wrote whose applied values differ is a conflict, as
// field ownership would make it; metadata.uid, when given, must be the
// object's. A missing object is created.
func (m *Member) apply(w http.ResponseWriter, r *http.Request, req *request) error {
	manager := r.URL.Query().Get("fieldManager")
	if manager == "" {
		return apierrors.NewBadRequest("PATCH requests with apply patch type require fieldManager")
	}
	force := r.URL.Query().Get("force") == "true"
	obj, md, err := m.readObject(r, req)
	if err != nil {
		return err
	}
	s := m.store
	s.mu.Lock()
	var o *stored
	code := http.StatusOK
	prev := s.objects[req.res][objectKey(req.namespace, req.name)]
	switch {
	case prev == nil && md.GetUID() != "":
		err = apierrors.NewConflict(req.res.gvr.GroupResource(), req.name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: ", md.GetUID()))
	case prev == nil:
		o, err = m.createLocked(req, obj, md, manager, metav1.ManagedFieldsOperationApply)
		code = http.StatusCreated
	default:
		o, err = m.applyLocked(req, prev, obj, md, manager, force)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return m.writeStored(w, r, req.res, code, o)
}

func (m *Member) applyLocked(req *request, prev *stored, obj runtime.Object, md metav1.Object, manager string, force bool) (*stored, error) {
	pm := prev.meta()
	if uid := md.GetUID(); uid != "" && uid != pm.GetUID() {
		return nil, apierrors.NewInvalid(req.res.gvk().GroupKind(), req.name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "uid"), uid, "field is immutable")})
	}
	next := prev.obj.DeepCopyObject()
	nm, _ := meta.Accessor(next)
	nm.SetLabels(merged(pm.GetLabels(), md.GetLabels()))
	nm.SetAnnotations(merged(pm.GetAnnotations(), md.GetAnnotations()))
	vn, vo := reflect.ValueOf(next).Elem(), reflect.ValueOf(obj).Elem()
	for i := range vn.NumField() {
		switch vn.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		vn.Field(i).Set(vo.Field(i))
	}
	if !force && ownedByOthers(pm, manager) && !equality.Semantic.DeepEqual(prev.obj, next) {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
			Message: fmt.Sprintf("Apply failed with conflicts: fields of %s %s are managed by another manager", req.res.kind, req.name),
			Details: &metav1.StatusDetails{Name: req.name, Group: req.res.gvr.Group, Kind: req.res.gvr.Resource,
				Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: "conflict with another manager"}}},
		}}
	}
	if equality.Semantic.DeepEqual(prev.obj, next) {
		return prev, nil
	}
	if req.res.generation && !specEqual(prev.obj, next) {
		nm.SetGeneration(pm.GetGeneration() + 1)
	}
	managed(nm, manager, metav1.ManagedFieldsOperationApply, req.res, time.Now())
	return m.store.commitLocked(req.res, objectKey(req.namespace, req.name), next, time.Now()), nil
}

// ownedByOthers reports whether a manager other than manager wrote the
// object.
func ownedByOthers(md metav1.Object, manager string) bool {
	for _, f := range md.GetManagedFields() {
		if f.Manager != manager {
			return true
		}
	}
	return false
}

func merged(old, applied map[string]string) map[string]string {
	if len(applied) == 0 {
		return old
	}
	out := maps.Clone(old)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, applied)
	return out
}
