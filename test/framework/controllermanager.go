package framework

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every cluster runs kube-controller-manager beside its kube-apiserver, as
// every real cluster does: without it namespaces never finish deleting, the
// garbage collector never honours owner references, and a server that
// breaks either would pass every test.

// startControllerManagers starts one kube-controller-manager per cluster,
// with every controller on, as the cluster's admin, signing
// ServiceAccount tokens with the kube-apiserver's key.
func (e *Env) startControllerManagers() error {
	pki := filepath.Join(e.Dir, "pki")
	for _, c := range e.clusters {
		kubeconfig := e.Kubeconfig(c.Index, UserAdmin)
		args := []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			// No serving: nothing scrapes it, and it saves a port per cluster.
			"--secure-port=0",
			"--leader-elect=false",
			"--controllers=*",
			"--use-service-account-credentials=false",
			"--service-account-private-key-file=" + filepath.Join(pki, c.Name, "sa.key"),
			"--root-ca-file=" + c.CAFile,
			"--cluster-name=" + c.Name,
			"--service-cluster-ip-range=" + c.ServiceCIDR,
			"--profiling=false",
			"--v=1",
		}
		args = append(args, e.opts.ExtraControllerManagerArgs...)
		c.ControllerManagerLogPath = filepath.Join(e.Dir, "logs", c.Name+"-kube-controller-manager.log")
		c.controllers = newProcess("kube-controller-manager "+c.Name, e.tools.KubeControllerManager, c.ControllerManagerLogPath, args)
		if err := c.controllers.start(); err != nil {
			return err
		}
	}
	return nil
}

// waitControllerManagers waits until every cluster's controllers work: the
// ServiceAccount controller has created the default ServiceAccount of the
// namespace default, which it does once its informers have synced.
func (e *Env) waitControllerManagers(ctx context.Context) error {
	errs := make([]error, len(e.clusters))
	var wg sync.WaitGroup
	for i, c := range e.clusters {
		client := e.Client(i, UserAdmin)
		wg.Go(func() {
			errs[i] = c.controllers.waitFor(ctx, "the default ServiceAccount", 200*time.Millisecond, func(ctx context.Context) error {
				_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
				return err
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopControllerManagers kills every kube-controller-manager; the clusters'
// data is thrown away, so they need no graceful shutdown.
func (e *Env) stopControllerManagers() []error {
	var errs []error
	for _, c := range e.clusters {
		if c.controllers == nil {
			continue
		}
		if err := c.controllers.stop(0); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-controller-manager of %s: %w", c.Name, err))
		}
	}
	return errs
}
