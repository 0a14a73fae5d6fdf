package dns

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns/corefile"
)

func TestImageVersion(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  Version
		ok    bool
	}{
		{"registry.k8s.io/coredns/coredns:v1.12.2", Version{1, 12, 2}, true},
		{"coredns/coredns:1.11.3", Version{1, 11, 3}, true},
		{"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/coredns:v1.11.4-eksbuild.2", Version{1, 11, 4}, true},
		{"registry.local:5000/coredns/coredns:v1.13.1@sha256:0123", Version{1, 13, 1}, true},
		{"registry.local:5000/coredns/coredns@sha256:0123", Version{}, false},
		{"registry.local:5000/coredns/coredns", Version{}, false},
		{"coredns/coredns:latest", Version{}, false},
	} {
		got, ok := imageVersion(tc.image)
		if got != tc.want || ok != tc.ok {
			t.Errorf("imageVersion(%q) = %v, %v; want %v, %v", tc.image, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		image string
		skip  bool
		want  string
	}{
		{"registry.k8s.io/coredns/coredns:v1.12.2", false, ""},
		{"registry.k8s.io/coredns/coredns:v1.14.2", false, ""},
		{"registry.k8s.io/coredns/coredns:v1.12.1", true, "is CoreDNS 1.12.1, older than 1.12.2"},
		{"registry.k8s.io/coredns/coredns:v1.11.3", false, "upgrade CoreDNS first"},
		{"mirror.local/coredns:stable", false, "rerun with --skip-version-check"},
		{"mirror.local/coredns:stable", true, ""},
	} {
		in := &install{Namespace: "kube-system", Deployment: "coredns", Image: tc.image}
		in.Version, in.VersionOK = imageVersion(tc.image)
		err := in.checkVersion(tc.skip)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (skip %v): %v, want %q", tc.image, tc.skip, err, tc.want)
		}
	}
}

// kubeadmDeployment is the CoreDNS Deployment of kubeadm, trimmed to what
// readInstall reads.
func kubeadmDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			ServiceAccountName: "coredns",
			Containers: []corev1.Container{{
				Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.14.2",
				Args:         []string{"-conf", "/etc/coredns/Corefile"},
				VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
				Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
			}}}},
		}}},
	}
}

func TestReadInstall(t *testing.T) {
	in, err := readInstall(kubeadmDeployment())
	if err != nil {
		t.Fatal(err)
	}
	want := install{Namespace: "kube-system", Deployment: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.14.2",
		ServiceAccount: "coredns", ConfigMap: "coredns", Key: "Corefile", Version: Version{1, 14, 2}, VersionOK: true}
	if *in != want {
		t.Errorf("kubeadm's: %+v, want %+v", *in, want)
	}

	// Another key mapped to another file name, -conf=, no ServiceAccount.
	d := kubeadmDeployment()
	d.Spec.Template.Spec.ServiceAccountName = ""
	c := &d.Spec.Template.Spec.Containers[0]
	c.Args = []string{"-conf=/etc/dns/main.conf"}
	c.VolumeMounts[0].MountPath = "/etc/dns/"
	d.Spec.Template.Spec.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: "corefile.v2", Path: "main.conf"}}
	if in, err = readInstall(d); err != nil || in.Key != "corefile.v2" || in.ServiceAccount != "default" {
		t.Errorf("mapped key: %+v, %v", in, err)
	}

	c.Image = "registry.k8s.io/dns/k8s-dns-kube-dns:1.23.0"
	if _, err := readInstall(d); err == nil || !strings.Contains(err.Error(), "runs no CoreDNS image") {
		t.Errorf("kube-dns: %v", err)
	}
	c.Image = "registry.k8s.io/coredns/coredns:v1.14.2"
	d.Spec.Template.Spec.Volumes[0].ConfigMap = nil
	if _, err := readInstall(d); err == nil || !strings.Contains(err.Error(), "which is no ConfigMap's volume") {
		t.Errorf("no ConfigMap: %v", err)
	}
}

func TestRecordMerge(t *testing.T) {
	r := &record{Corefile: corefile.Edits{Zone: corefile.Zone}}
	r.merge(corefile.Edits{Zone: corefile.Zone, ZoneArg: true, CacheDisable: []string{"success"}}, true, "kube-system/coredns")
	// A later enable (the user had removed the option) adds what it added.
	r.merge(corefile.Edits{Zone: corefile.Zone, Multicluster: corefile.MulticlusterLine, CacheDisable: []string{"success", "denial"}}, false, "")
	want := corefile.Edits{Zone: corefile.Zone, ZoneArg: true, Multicluster: corefile.MulticlusterLine, CacheDisable: []string{"success", "denial"}}
	if !r.RBAC || r.ServiceAccount != "kube-system/coredns" || r.Corefile.ZoneArg != want.ZoneArg || r.Corefile.Multicluster != want.Multicluster ||
		strings.Join(r.Corefile.CacheDisable, ",") != "success,denial" {
		t.Errorf("merged %+v", r)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RecordAnnotation: r.encode()}}}
	back, err := readRecord(cm)
	if err != nil || back.encode() != r.encode() {
		t.Errorf("read back %+v, %v", back, err)
	}
	cm.Annotations[RecordAnnotation] = "{"
	if _, err := readRecord(cm); err == nil {
		t.Errorf("a broken record reads")
	}
}

// An error quoting the cluster's text reaches the terminal escaped, with
// its exit code.
func TestGuard(t *testing.T) {
	err := guard(cli.WithExitCode(cli.ExitNotReady, errors.New("image reg/\x1b[31mcoredns:v1")))
	if got := err.Error(); got != `image reg/\x1b[31mcoredns:v1` {
		t.Errorf("text %q", got)
	}
	if cli.ExitCode(err) != cli.ExitNotReady {
		t.Errorf("exit code %d", cli.ExitCode(err))
	}
	if guard(nil) != nil {
		t.Errorf("guard(nil) is not nil")
	}
}
