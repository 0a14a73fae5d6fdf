package framework

import (
	"context"
	"fmt"
	"strings"
)

// KubeadmCoreDNSImage is the CoreDNS kubeadm v1.36 installs.
const KubeadmCoreDNSImage = "registry.k8s.io/coredns/coredns:v1.14.2"

// KubeadmCorefile is the Corefile kubeadm v1.36 writes for the cluster
// domain cluster.local (cmd/kubeadm/app/phases/addons/dns).
const KubeadmCorefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`

// kubeadmCoreDNS are kubeadm's CoreDNS objects: the ServiceAccount, the
// system:coredns role and binding, the ConfigMap and the Deployment (IMAGE
// and COREFILE filled in), as kubeadm v1.36 renders them.
const kubeadmCoreDNS = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  Corefile: |
COREFILE
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
spec:
  replicas: 2
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
    spec:
      priorityClassName: system-cluster-critical
      serviceAccountName: coredns
      nodeSelector:
        kubernetes.io/os: linux
      containers:
      - name: coredns
        image: IMAGE
        args: ["-conf", "/etc/coredns/Corefile"]
        volumeMounts:
        - name: config-volume
          mountPath: /etc/coredns
          readOnly: true
        ports:
        - {containerPort: 53, name: dns, protocol: UDP}
        - {containerPort: 53, name: dns-tcp, protocol: TCP}
        - {containerPort: 9153, name: metrics, protocol: TCP}
      dnsPolicy: Default
      volumes:
      - name: config-volume
        configMap:
          name: coredns
          items:
          - key: Corefile
            path: Corefile
`

// InstallKubeadmCoreDNS creates on cluster i the CoreDNS objects kubeadm
// creates, running image. No kubelet runs them: a test starts the CoreDNS
// binary itself with the Corefile the ConfigMap then holds.
func (e *Env) InstallKubeadmCoreDNS(ctx context.Context, cluster int, image string) error {
	var indented strings.Builder
	for _, line := range strings.SplitAfter(KubeadmCorefile, "\n") {
		if line != "" {
			indented.WriteString("    " + line)
		}
	}
	manifest := strings.NewReplacer("IMAGE", image, "COREFILE\n", indented.String()).Replace(kubeadmCoreDNS)
	if _, stderr, err := e.KubectlWithInput(ctx, strings.NewReader(manifest), cluster, UserAdmin, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("installing kubeadm's CoreDNS objects on cluster %d: %w: %s", cluster, err, stderr)
	}
	return nil
}
