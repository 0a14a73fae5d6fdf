package hollow

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// maxBody is the largest request body read, a kube-apiserver's limit.
const maxBody = 3 << 20

// readBody reads a request's body within maxBody.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest("reading the request body: " + err.Error())
	}
	if len(b) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	return b, nil
}

// decode decodes a body in JSON, YAML or protobuf into the resource's type.
func decode(res *resource, body []byte) (runtime.Object, metav1.Object, error) {
	obj, gvk, err := codecs.UniversalDeserializer().Decode(body, nil, res.newObject())
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	if gvk != nil && gvk.Kind != "" && (gvk.Kind != res.kind || gvk.GroupVersion() != res.gvr.GroupVersion()) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), res.gvr.GroupVersion()))
	}
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	return obj, m, nil
}

// Seed stores obj as if created, without a request: the benchmarks' Nodes
// and the namespaces every cluster has.
func (m *Member) Seed(obj runtime.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	var res *resource
	for _, r := range resources {
		if reflect.TypeOf(r.newObject()) == reflect.TypeOf(obj) {
			res = r
		}
	}
	if res == nil {
		return fmt.Errorf("hollow members hold no %T (%s)", obj, gvk)
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	md, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	s := m.store
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	key := objectKey(md.GetNamespace(), md.GetName())
	if prev := s.objects[res][key]; prev != nil {
		md.SetUID(prev.meta().GetUID())
		md.SetCreationTimestamp(prev.meta().GetCreationTimestamp())
	} else {
		if md.GetUID() == "" {
			md.SetUID(uuid.NewUUID())
		}
		md.SetCreationTimestamp(metav1.NewTime(now.Truncate(time.Second)))
	}
	s.commitLocked(res, key, obj, now)
	return nil
}

// Mutate changes a stored object in place of a client, as Kilo's agent on
// every node writes its check-in: f gets a copy to change. It reports
// whether the object exists.
func (m *Member) Mutate(res *resource, namespace, name string, f func(runtime.Object)) bool {
	s := m.store
	s.mu.Lock()
	defer s.mu.Unlock()
	key := objectKey(namespace, name)
	prev := s.objects[res][key]
	if prev == nil {
		return false
	}
	obj := prev.obj.DeepCopyObject()
	f(obj)
	s.commitLocked(res, key, obj, time.Now())
	return true
}

// readObject reads the object a request's body carries (JSON, YAML or
// protobuf) for req: in the request's namespace, and with the URL's name
// when the URL names one.
func (m *Member) readObject(r *http.Request, req *request) (runtime.Object, metav1.Object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	obj, md, err := decode(req.res, body)
	if err != nil {
		return nil, nil, err
	}
	if req.name != "" && md.GetName() != req.name {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", md.GetName(), req.name))
	}
	if err := m.checkNamespace(req, md); err != nil {
		return nil, nil, err
	}
	return obj, md, nil
}

func (m *Member) create(w http.ResponseWriter, r *http.Request, req *request) error {
	obj, md, err := m.readObject(r, req)
	if err != nil {
		return err
	}
	if md.GetName() == "" && md.GetGenerateName() != "" {
		md.SetName(md.GetGenerateName() + utilrand.String(5))
	}
	if md.GetName() == "" {
		return apierrors.NewBadRequest("name or generateName is required")
	}
	s := m.store
	s.mu.Lock()
	o, err := m.createLocked(req, obj, md, r.URL.Query().Get("fieldManager"), metav1.ManagedFieldsOperationUpdate)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return m.writeStored(w, r, req.res, http.StatusCreated, o)
}

// checkNamespace puts the request's namespace on a namespaced object, and
// refuses one that names another.
func (m *Member) checkNamespace(req *request, md metav1.Object) error {
	if !req.res.namespaced {
		md.SetNamespace("")
		return nil
	}
	if md.GetNamespace() != "" && md.GetNamespace() != req.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	md.SetNamespace(req.namespace)
	return nil
}

// createLocked stores a new object with the fields a kube-apiserver sets
// on create; the status of a resource with a status subresource starts
// empty.
func (m *Member) createLocked(req *request, obj runtime.Object, md metav1.Object, manager string, op metav1.ManagedFieldsOperationType) (*stored, error) {
	s := m.store
	if req.res.namespaced && s.objects[namespaces][objectKey("", md.GetNamespace())] == nil {
		return nil, apierrors.NewNotFound(gr("namespaces"), md.GetNamespace())
	}
	key := objectKey(md.GetNamespace(), md.GetName())
	if s.objects[req.res][key] != nil {
		return nil, apierrors.NewAlreadyExists(req.res.gvr.GroupResource(), md.GetName())
	}
	now := time.Now()
	md.SetUID(uuid.NewUUID())
	md.SetCreationTimestamp(metav1.NewTime(now.Truncate(time.Second)))
	md.SetDeletionTimestamp(nil)
	md.SetResourceVersion("")
	md.SetGeneration(0)
	if req.res.generation {
		md.SetGeneration(1)
	}
	md.SetManagedFields(nil)
	managed(md, manager, op, req.res, now)
	if req.res.status && !req.res.createStatus {
		setField(obj, "Status", reflect.Zero(fieldOf(obj, "Status").Type()))
	}
	if svc, ok := obj.(*corev1.Service); ok {
		s.allocateClusterIP(svc)
	}
	return s.commitLocked(req.res, key, obj, now), nil
}

func (m *Member) update(w http.ResponseWriter, r *http.Request, req *request) error {
	obj, md, err := m.readObject(r, req)
	if err != nil {
		return err
	}
	s := m.store
	s.mu.Lock()
	o, err := m.updateLocked(req, obj, md, r.URL.Query().Get("fieldManager"), metav1.ManagedFieldsOperationUpdate)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return m.writeStored(w, r, req.res, http.StatusOK, o)
}

// updateLocked replaces a stored object with obj as a kube-apiserver's
// update does: at obj's resourceVersion when it names one, keeping what
// the client may not set (and the status, or all but the status, for a
// resource with a status subresource). An update that changes nothing
// writes nothing, as in a kube-apiserver.
func (m *Member) updateLocked(req *request, obj runtime.Object, md metav1.Object, manager string, op metav1.ManagedFieldsOperationType) (*stored, error) {
	s := m.store
	key := objectKey(req.namespace, req.name)
	prev := s.objects[req.res][key]
	if prev == nil {
		return nil, apierrors.NewNotFound(req.res.gvr.GroupResource(), req.name)
	}
	pm := prev.meta()
	if rv := md.GetResourceVersion(); rv != "" && rv != pm.GetResourceVersion() {
		return nil, apierrors.NewConflict(req.res.gvr.GroupResource(), req.name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := md.GetUID(); uid != "" && uid != pm.GetUID() {
		return nil, apierrors.NewConflict(req.res.gvr.GroupResource(), req.name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, pm.GetUID()))
	}
	next := obj
	if req.subresource == "status" {
		next = prev.obj.DeepCopyObject()
		setField(next, "Status", fieldOf(obj, "Status"))
	} else {
		md.SetUID(pm.GetUID())
		md.SetCreationTimestamp(pm.GetCreationTimestamp())
		md.SetDeletionTimestamp(pm.GetDeletionTimestamp())
		md.SetDeletionGracePeriodSeconds(pm.GetDeletionGracePeriodSeconds())
		md.SetGeneration(pm.GetGeneration())
		md.SetManagedFields(pm.GetManagedFields())
		if req.res.status {
			setField(next, "Status", fieldOf(prev.obj, "Status"))
		}
		if req.res.generation && !specEqual(prev.obj, next) {
			md.SetGeneration(pm.GetGeneration() + 1)
		}
	}
	nm, _ := meta.Accessor(next)
	nm.SetResourceVersion(pm.GetResourceVersion())
	if equality.Semantic.DeepEqual(prev.obj, next) {
		return prev, nil
	}
	managed(nm, manager, op, req.res, time.Now())
	if nm.GetDeletionTimestamp() != nil && len(nm.GetFinalizers()) == 0 {
		return s.commitLocked(req.res, key, nil, time.Now()), nil
	}
	return s.commitLocked(req.res, key, next, time.Now()), nil
}

func (m *Member) delete(w http.ResponseWriter, r *http.Request, req *request) error {
	var opts metav1.DeleteOptions
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		if _, _, err := codecs.UniversalDeserializer().Decode(body, nil, &opts); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	s := m.store
	s.mu.Lock()
	key := objectKey(req.namespace, req.name)
	prev := s.objects[req.res][key]
	if prev == nil {
		s.mu.Unlock()
		return apierrors.NewNotFound(req.res.gvr.GroupResource(), req.name)
	}
	pm := prev.meta()
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != pm.GetUID() {
			s.mu.Unlock()
			return apierrors.NewConflict(req.res.gvr.GroupResource(), req.name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, pm.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != pm.GetResourceVersion() {
			s.mu.Unlock()
			return apierrors.NewConflict(req.res.gvr.GroupResource(), req.name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, pm.GetResourceVersion()))
		}
	}
	var o *stored
	if len(pm.GetFinalizers()) > 0 {
		// Finalizers hold the object, marked for deletion, until the
		// last is removed by an update.
		o = prev
		if pm.GetDeletionTimestamp() == nil {
			next := prev.obj.DeepCopyObject()
			nm, _ := meta.Accessor(next)
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			nm.SetDeletionTimestamp(&now)
			nm.SetDeletionGracePeriodSeconds(new(int64))
			o = s.commitLocked(req.res, key, next, time.Now())
		}
	} else {
		o = s.commitLocked(req.res, key, nil, time.Now())
	}
	s.mu.Unlock()
	return m.writeStored(w, r, req.res, http.StatusOK, o)
}

// allocateClusterIP gives a ClusterIP Service without one an address of
// 10.96.0.0/12, as a kube-apiserver's allocator does; the server copies
// it into the ServiceImports it writes.
func (s *store) allocateClusterIP(svc *corev1.Service) {
	if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != "" {
		return
	}
	s.clusterIPs++
	ip := offset(netip.MustParseAddr("10.96.0.0"), s.clusterIPs%(1<<20)).String()
	single := corev1.IPFamilyPolicySingleStack
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
	svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy = []corev1.IPFamily{corev1.IPv4Protocol}, &single
}

// managed records that manager wrote the object, in the shape of
// metadata.managedFields (without the fields themselves: nothing here
// reads them).
func managed(md metav1.Object, manager string, op metav1.ManagedFieldsOperationType, res *resource, now time.Time) {
	if manager == "" {
		return
	}
	t := metav1.NewTime(now.Truncate(time.Second))
	entry := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: res.gvr.GroupVersion().String(), Time: &t, FieldsType: "FieldsV1"}
	fields := slices.Clone(md.GetManagedFields())
	for i := range fields {
		if fields[i].Manager == manager && fields[i].Operation == op && fields[i].Subresource == "" {
			fields = append(fields[:i:i], fields[i+1:]...)
			break
		}
	}
	md.SetManagedFields(append(fields, entry))
}

func fieldOf(obj runtime.Object, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

func setField(obj runtime.Object, name string, v reflect.Value) {
	if f := fieldOf(obj, name); f.IsValid() && f.CanSet() {
		f.Set(v)
	}
}

// specEqual compares what the client owns besides metadata and status.
func specEqual(a, b runtime.Object) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		switch va.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return false
		}
	}
	return true
}
