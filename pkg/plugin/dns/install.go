package dns

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultDeployment is kubeadm's name of CoreDNS's Deployment; the
// distributions that name it otherwise label it k8s-app=kube-dns.
const DefaultDeployment = "coredns"

// kubeDNSLabel selects the cluster DNS Deployment by kubeadm's label.
const kubeDNSLabel = "k8s-app=kube-dns"

// MinVersion is the first CoreDNS whose kubernetes plugin has the
// multicluster option.
var MinVersion = Version{1, 12, 2}

// install is a cluster's CoreDNS as its Deployment runs it.
type install struct {
	Namespace      string
	Deployment     string
	Image          string
	ServiceAccount string
	// ConfigMap and Key hold the Corefile the container reads.
	ConfigMap, Key string
	// Version is read from the image's tag; ok false when it tells none.
	Version   Version
	VersionOK bool
}

func (in *install) String() string {
	return fmt.Sprintf("CoreDNS of Deployment %s/%s (image %s)", in.Namespace, in.Deployment, in.Image)
}

// findInstall reads the CoreDNS Deployment: name, or when name is the
// default and missing, the one Deployment labelled k8s-app=kube-dns.
func findInstall(ctx context.Context, kube kubernetes.Interface, ns, name string, nameGiven bool) (*install, error) {
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && !nameGiven {
		list, lerr := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: kubeDNSLabel})
		switch {
		case lerr != nil:
			err = lerr
		case len(list.Items) == 1:
			d, err = &list.Items[0], nil
		default:
			return nil, fmt.Errorf("no CoreDNS Deployment in namespace %s: none is named %s and %d are labelled %s; name it with --coredns-deployment", ns, name, len(list.Items), kubeDNSLabel)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CoreDNS Deployment %s/%s: %w", ns, name, err)
	}
	return readInstall(d)
}

// readInstall finds in d the container running CoreDNS, the ConfigMap
// mounted where its -conf points, and the version of its image.
func readInstall(d *appsv1.Deployment) (*install, error) {
	spec := d.Spec.Template.Spec
	var c *corev1.Container
	for i := range spec.Containers {
		if strings.Contains(imageRepository(spec.Containers[i].Image), "coredns") {
			c = &spec.Containers[i]
			break
		}
	}
	if c == nil {
		images := make([]string, 0, len(spec.Containers))
		for _, k := range spec.Containers {
			images = append(images, k.Image)
		}
		return nil, fmt.Errorf("Deployment %s/%s runs no CoreDNS image (%s): clusterset.local needs CoreDNS %s or later as the cluster's DNS",
			d.Namespace, d.Name, strings.Join(images, ", "), MinVersion)
	}
	in := &install{Namespace: d.Namespace, Deployment: d.Name, Image: c.Image, ServiceAccount: spec.ServiceAccountName}
	if in.ServiceAccount == "" {
		in.ServiceAccount = "default"
	}
	in.Version, in.VersionOK = imageVersion(c.Image)
	conf := confPath(append(append([]string(nil), c.Command...), c.Args...))
	if !path.IsAbs(conf) {
		// CoreDNS's image sets no working directory.
		conf = path.Join("/", c.WorkingDir, conf)
	}
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(conf, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			in.ConfigMap, in.Key = v.ConfigMap.Name, rel
			for _, item := range v.ConfigMap.Items {
				if item.Path == rel {
					in.Key = item.Key
				}
			}
		}
	}
	if in.ConfigMap == "" {
		return nil, fmt.Errorf("%s reads its Corefile from %s, which is no ConfigMap's volume: this command edits a ConfigMap", in, conf)
	}
	return in, nil
}

// confPath is the Corefile a CoreDNS command line reads: -conf's value, or
// CoreDNS's default.
func confPath(args []string) string {
	for i, a := range args {
		a = strings.TrimPrefix(a, "-")
		if v, ok := strings.CutPrefix(a, "-conf="); ok {
			return v
		}
		if v, ok := strings.CutPrefix(a, "conf="); ok {
			return v
		}
		if (a == "conf" || a == "-conf") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "Corefile"
}

// Version is a CoreDNS release.
type Version [3]int

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// Less tells whether v is older than w.
func (v Version) Less(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

var versionTag = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

// imageVersion reads the release from an image's tag: v1.12.2, 1.12.2,
// v1.11.4-eksbuild.2; a digest alone tells none.
func imageVersion(image string) (Version, bool) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return Version{}, false
	}
	m := versionTag.FindStringSubmatch(image[i+1:])
	if m == nil {
		return Version{}, false
	}
	var v Version
	for k := range v {
		v[k], _ = strconv.Atoi(m[k+1])
	}
	return v, true
}

// imageRepository is an image without its tag and digest.
func imageRepository(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i >= 0 && !strings.Contains(image[i:], "/") {
		image = image[:i]
	}
	return image
}

// checkVersion refuses a CoreDNS older than MinVersion, and one whose
// version the image does not tell unless told to go on.
func (in *install) checkVersion(skip bool) error {
	switch {
	case !in.VersionOK && skip:
		return nil
	case !in.VersionOK:
		return fmt.Errorf("%s: the image's tag tells no version; check that it runs CoreDNS %s or later (its log's first line, or coredns -version), then rerun with --skip-version-check", in, MinVersion)
	case in.Version.Less(MinVersion):
		return fmt.Errorf("%s is CoreDNS %s, older than %s, the first whose kubernetes plugin answers clusterset.local (its multicluster option): "+
			"upgrade CoreDNS first (kubeadm upgrade to Kubernetes 1.35 or later installs a new enough one; or set the Deployment's image to registry.k8s.io/coredns/coredns:v%s or later), then rerun",
			in, in.Version, MinVersion, MinVersion)
	}
	return nil
}
