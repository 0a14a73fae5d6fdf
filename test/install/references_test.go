//go:build e2e

package install

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

// builtinRoles are the roles Kubernetes itself provides that the renderings
// bind; every other role a binding names must be in the rendering.
var builtinRoles = map[string]bool{
	"ClusterRole/system:auth-delegator":                          true,
	"Role/kube-system/extension-apiserver-authentication-reader": true,
}

// objects is one rendering, indexed for lookups.
type objects struct {
	all []*unstructured.Unstructured
	by  map[string]*unstructured.Unstructured // Kind/namespace/name or Kind/name
}

func index(all []*unstructured.Unstructured) *objects {
	o := &objects{all: all, by: map[string]*unstructured.Unstructured{}}
	for _, u := range all {
		o.by[key(u.GetKind(), u.GetNamespace(), u.GetName())] = u
	}
	return o
}

func key(kind, ns, name string) string {
	if ns == "" {
		return kind + "/" + name
	}
	return kind + "/" + ns + "/" + name
}

func (o *objects) get(kind, ns, name string) *unstructured.Unstructured {
	return o.by[key(kind, ns, name)]
}

func (o *objects) ofKind(kinds ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range o.all {
		if slices.Contains(kinds, u.GetKind()) {
			out = append(out, u)
		}
	}
	return out
}

// secretSource reports whether Secret ns/name is created by the rendering:
// as a Secret, or as the secretName of a cert-manager Certificate.
func (o *objects) secretSource(ns, name string) bool {
	if o.get("Secret", ns, name) != nil {
		return true
	}
	for _, c := range o.ofKind("Certificate") {
		if c.GetNamespace() == ns && str(c, "spec", "secretName") == name {
			return true
		}
	}
	return false
}

func str(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

func strMap(m map[string]any, field string) map[string]string {
	out := map[string]string{}
	raw, _ := m[field].(map[string]any)
	for k, v := range raw {
		out[k], _ = v.(string)
	}
	return out
}

// checkReferences returns every reference of the rendering that it does
// not satisfy itself: what its workloads mount (Secrets, ConfigMaps, PVCs),
// run as, are served by and talk to (the etcd members in --etcd-servers,
// the files their flags name), what the APIService, the bindings, the
// Certificates, the PodDisruptionBudgets, the ServiceMonitor and the
// NetworkPolicies name.
// The only outside inputs allowed are images, Kubernetes' own roles,
// Secrets that a Certificate of the rendering has cert-manager write, and
// the ServiceAccounts of the user's Prometheus and of the cluster's CoreDNS.
func checkReferences(all []*unstructured.Unstructured) []error {
	o := index(all)
	var errs []error
	fail := func(u *unstructured.Unstructured, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %s/%s: %s", u.GetKind(), u.GetNamespace(), u.GetName(), fmt.Sprintf(format, args...)))
	}
	podLabels := map[string]map[string]string{} // workload key -> pod template labels
	containerPorts := map[string][]string{}     // namespace -> ports its containers declare
	for _, w := range o.ofKind("Deployment", "StatefulSet") {
		ns := w.GetNamespace()
		tmpl, _, _ := unstructured.NestedMap(w.Object, "spec", "template")
		cs, _, _ := unstructured.NestedSlice(tmpl, "spec", "containers")
		for _, c := range cs {
			ports, _, _ := unstructured.NestedSlice(c.(map[string]any), "ports")
			for _, p := range ports {
				containerPorts[ns] = append(containerPorts[ns], fmt.Sprint(p.(map[string]any)["containerPort"]))
			}
		}
		podLabels[key(w.GetKind(), ns, w.GetName())] = strMap(tmpl["metadata"].(map[string]any), "labels")
		selector, _, _ := unstructured.NestedStringMap(w.Object, "spec", "selector", "matchLabels")
		if !labels.SelectorFromSet(selector).Matches(labels.Set(podLabels[key(w.GetKind(), ns, w.GetName())])) {
			fail(w, "selector %v does not match its pods", selector)
		}
		spec := tmpl["spec"].(map[string]any)
		if sa, _ := spec["serviceAccountName"].(string); sa != "" && o.get("ServiceAccount", ns, sa) == nil {
			fail(w, "runs as ServiceAccount %s, which the rendering does not create", sa)
		}
		if w.GetKind() == "StatefulSet" {
			svc := str(w, "spec", "serviceName")
			if s := o.get("Service", ns, svc); s == nil {
				fail(w, "serviceName %s: no such Service", svc)
			}
		}
		volumes := map[string]bool{}
		vols, _ := spec["volumes"].([]any)
		for _, v := range vols {
			vol := v.(map[string]any)
			volumes[vol["name"].(string)] = true
			if s, ok := vol["secret"].(map[string]any); ok && !o.secretSource(ns, s["secretName"].(string)) {
				fail(w, "mounts Secret %s, which neither the rendering nor a Certificate of it creates", s["secretName"])
			}
			if c, ok := vol["configMap"].(map[string]any); ok && o.get("ConfigMap", ns, c["name"].(string)) == nil {
				fail(w, "mounts ConfigMap %s, which the rendering does not create", c["name"])
			}
			if c, ok := vol["persistentVolumeClaim"].(map[string]any); ok && o.get("PersistentVolumeClaim", ns, c["claimName"].(string)) == nil {
				fail(w, "mounts PersistentVolumeClaim %s, which the rendering does not create", c["claimName"])
			}
		}
		claims, _, _ := unstructured.NestedSlice(w.Object, "spec", "volumeClaimTemplates")
		for _, c := range claims {
			volumes[c.(map[string]any)["metadata"].(map[string]any)["name"].(string)] = true
		}
		containers, _ := spec["containers"].([]any)
		for _, c := range containers {
			errs = append(errs, checkContainer(o, w, c.(map[string]any), volumes)...)
		}
	}
	for _, svc := range o.ofKind("Service") {
		selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		if len(selector) == 0 {
			continue
		}
		if !selectsSome(podLabels, svc.GetNamespace(), selector) {
			fail(svc, "selector %v matches no workload of the rendering", selector)
		}
	}
	for _, pdb := range o.ofKind("PodDisruptionBudget") {
		selector, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
		if !selectsSome(podLabels, pdb.GetNamespace(), selector) {
			fail(pdb, "selector %v matches no workload of the rendering", selector)
		}
	}
	for _, a := range o.ofKind("APIService") {
		ns, name := str(a, "spec", "service", "namespace"), str(a, "spec", "service", "name")
		if o.get("Service", ns, name) == nil {
			fail(a, "names Service %s/%s, which the rendering does not create", ns, name)
		}
		if from := a.GetAnnotations()["cert-manager.io/inject-ca-from"]; from != "" {
			ns, name, _ := strings.Cut(from, "/")
			if o.get("Certificate", ns, name) == nil {
				fail(a, "injects the CA of Certificate %s, which the rendering does not create", from)
			}
		}
	}
	for _, b := range o.ofKind("RoleBinding", "ClusterRoleBinding") {
		kind, name := str(b, "roleRef", "kind"), str(b, "roleRef", "name")
		roleNS := ""
		if kind == "Role" {
			roleNS = b.GetNamespace()
		}
		if o.get(kind, roleNS, name) == nil && !builtinRoles[key(kind, roleNS, name)] {
			fail(b, "binds %s %s, which the rendering does not create", kind, name)
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			s := s.(map[string]any)
			// The metrics reader is bound to the user's own Prometheus,
			// CoreDNS's role to the cluster's own CoreDNS.
			if s["kind"] == "ServiceAccount" && b.GetName() != "kilo-mesh-apiserver:metrics-reader" && b.GetName() != member.CoreDNSRole &&
				o.get("ServiceAccount", s["namespace"].(string), s["name"].(string)) == nil {
				fail(b, "binds ServiceAccount %s/%s, which the rendering does not create", s["namespace"], s["name"])
			}
		}
	}
	for _, c := range o.ofKind("Certificate") {
		issuer := str(c, "spec", "issuerRef", "name")
		if str(c, "spec", "issuerRef", "kind") != "Issuer" || o.get("Issuer", c.GetNamespace(), issuer) == nil {
			fail(c, "issued by %s %s, which the rendering does not create", str(c, "spec", "issuerRef", "kind"), issuer)
		}
	}
	for _, i := range o.ofKind("Issuer") {
		if secret := str(i, "spec", "ca", "secretName"); secret != "" {
			ca := false
			for _, c := range o.ofKind("Certificate") {
				isCA, _, _ := unstructured.NestedBool(c.Object, "spec", "isCA")
				ca = ca || (isCA && c.GetNamespace() == i.GetNamespace() && str(c, "spec", "secretName") == secret)
			}
			if !ca {
				fail(i, "signs with Secret %s, which no CA Certificate of the rendering writes", secret)
			}
		}
	}
	for _, sm := range o.ofKind("ServiceMonitor") {
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		found := false
		for _, svc := range o.ofKind("Service") {
			found = found || (svc.GetNamespace() == sm.GetNamespace() && labels.SelectorFromSet(selector).Matches(labels.Set(svc.GetLabels())))
		}
		if !found {
			fail(sm, "selects no Service of the rendering")
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		for _, e := range endpoints {
			secret, _, _ := unstructured.NestedString(e.(map[string]any), "tlsConfig", "ca", "secret", "name")
			if secret != "" && !o.secretSource(sm.GetNamespace(), secret) {
				fail(sm, "verifies with Secret %s, which the rendering does not create", secret)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(e.(map[string]any), "bearerTokenFile"); found {
				fail(sm, "uses bearerTokenFile, which the Prometheus Operator deprecated: use authorization")
			}
			token, _, _ := unstructured.NestedString(e.(map[string]any), "authorization", "credentials", "name")
			if token == "" {
				continue
			}
			s := o.get("Secret", sm.GetNamespace(), token)
			if s == nil {
				fail(sm, "authenticates with Secret %s, which the rendering does not create", token)
				continue
			}
			sa := s.GetAnnotations()["kubernetes.io/service-account.name"]
			if str(s, "type") != "kubernetes.io/service-account-token" || o.get("ServiceAccount", s.GetNamespace(), sa) == nil {
				fail(sm, "authenticates with Secret %s, which is not the token of a ServiceAccount of the rendering", token)
			}
		}
	}
	for _, np := range o.ofKind("NetworkPolicy") {
		selector, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		if !selectsSome(podLabels, np.GetNamespace(), selector) {
			fail(np, "podSelector %v matches no workload of the rendering", selector)
		}
		ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
		for _, rule := range ingress {
			ports, _, _ := unstructured.NestedSlice(rule.(map[string]any), "ports")
			for _, p := range ports {
				if port := fmt.Sprint(p.(map[string]any)["port"]); !slices.Contains(containerPorts[np.GetNamespace()], port) {
					fail(np, "lets in port %s, on which no container of the rendering listens", port)
				}
			}
		}
	}
	return errs
}

func selectsSome(podLabels map[string]map[string]string, ns string, selector map[string]string) bool {
	for k, l := range podLabels {
		if strings.Contains(k, "/"+ns+"/") && labels.SelectorFromSet(selector).Matches(labels.Set(l)) {
			return true
		}
	}
	return false
}

// fileFlags are flags whose value is a file the container must have.
var fileFlags = []string{
	"--etcd-cafile", "--etcd-certfile", "--etcd-keyfile", "--tls-cert-file", "--tls-private-key-file",
	"--trusted-ca-file", "--cert-file", "--key-file", "--peer-trusted-ca-file", "--peer-cert-file", "--peer-key-file",
}

// checkContainer: every mount names a volume of the pod, every file a flag
// names lies on a mount, env references resolve, and every etcd member of
// --etcd-servers is a pod of a StatefulSet of the rendering behind its
// headless Service.
func checkContainer(o *objects, w *unstructured.Unstructured, c map[string]any, volumes map[string]bool) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %s/%s container %s: %s", w.GetKind(), w.GetNamespace(), w.GetName(), c["name"], fmt.Sprintf(format, args...)))
	}
	ns := w.GetNamespace()
	var mounts []string
	ms, _ := c["volumeMounts"].([]any)
	for _, m := range ms {
		m := m.(map[string]any)
		if !volumes[m["name"].(string)] {
			fail("mounts volume %s, which the pod does not have", m["name"])
		}
		mounts = append(mounts, m["mountPath"].(string))
	}
	env, _ := c["env"].([]any)
	for _, e := range env {
		from, _ := e.(map[string]any)["valueFrom"].(map[string]any)
		if ref, ok := from["secretKeyRef"].(map[string]any); ok && !o.secretSource(ns, ref["name"].(string)) {
			fail("reads Secret %s, which the rendering does not create", ref["name"])
		}
		if ref, ok := from["configMapKeyRef"].(map[string]any); ok && o.get("ConfigMap", ns, ref["name"].(string)) == nil {
			fail("reads ConfigMap %s, which the rendering does not create", ref["name"])
		}
	}
	args, _ := c["args"].([]any)
	for _, a := range args {
		flag, value, _ := strings.Cut(a.(string), "=")
		if slices.Contains(fileFlags, flag) && !slices.ContainsFunc(mounts, func(m string) bool { return strings.HasPrefix(value, m+"/") }) {
			fail("%s=%s is on no mounted volume", flag, value)
		}
		if flag != "--etcd-servers" {
			continue
		}
		for _, server := range strings.Split(value, ",") {
			if err := checkEtcdMember(o, server); err != nil {
				fail("--etcd-servers %s: %v", server, err)
			}
		}
	}
	return errs
}

// checkEtcdMember: https://<statefulset>-<i>.<service>.<namespace>.svc:2379
// names member i of a StatefulSet of the rendering with that headless
// Service and a client port 2379.
func checkEtcdMember(o *objects, server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return fmt.Errorf("not TLS")
	}
	parts := strings.Split(u.Hostname(), ".")
	if len(parts) != 4 || parts[3] != "svc" {
		return fmt.Errorf("not a pod of a headless Service")
	}
	pod, svc, ns := parts[0], parts[1], parts[2]
	cut := strings.LastIndex(pod, "-")
	set := o.get("StatefulSet", ns, pod[:cut])
	if set == nil || str(set, "spec", "serviceName") != svc {
		return fmt.Errorf("no StatefulSet %s/%s behind Service %s", ns, pod[:cut], svc)
	}
	replicas, _, _ := unstructured.NestedInt64(set.Object, "spec", "replicas")
	if i, err := strconv.Atoi(pod[cut+1:]); err != nil || i < 0 || int64(i) >= replicas {
		return fmt.Errorf("no member %s among the %d replicas", pod[cut+1:], replicas)
	}
	s := o.get("Service", ns, svc)
	if s == nil || str(s, "spec", "clusterIP") != "None" {
		return fmt.Errorf("Service %s/%s is not headless", ns, svc)
	}
	ports, _, _ := unstructured.NestedSlice(s.Object, "spec", "ports")
	if !slices.ContainsFunc(ports, func(p any) bool { return fmt.Sprint(p.(map[string]any)["port"]) == u.Port() }) {
		return fmt.Errorf("Service %s/%s has no port %s", ns, svc, u.Port())
	}
	return nil
}
