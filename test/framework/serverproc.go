package framework

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Name resolution and memory of a running kilo-mesh-apiserver, for attacks
// that need to control the one or watch the other.

// inPrivateHosts wraps bin and args so that the process runs in a mount
// namespace of its own, in which /etc/hosts is the file at hosts and
// /etc/resolv.conf names 127.0.0.1 as the only name server: the test
// decides what names resolve to for that process alone, a name it does not
// list is asked of nobody beyond loopback (where no name server answers),
// and the machine's files are never touched. unshare execs the shell,
// which execs bin: the process keeps one pid throughout.
func inPrivateHosts(hosts, bin string, args []string) (string, []string, error) {
	if os.Geteuid() != 0 {
		return "", nil, errors.New("a server with a private /etc/hosts runs in a mount namespace of its own: run the tests as root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return "", nil, fmt.Errorf("a server with a private /etc/hosts needs unshare and mount (apt-get install util-linux mount): %w", err)
	}
	if _, err := exec.LookPath("mount"); err != nil {
		return "", nil, fmt.Errorf("a server with a private /etc/hosts needs mount (apt-get install mount): %w", err)
	}
	resolv := filepath.Join(filepath.Dir(hosts), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return "", nil, err
	}
	wrapped := []string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount --bind "$0" /etc/hosts && mount --bind "$1" /etc/resolv.conf && shift && exec "$@"`, hosts, resolv, bin}
	return unshare, append(wrapped, args...), nil
}

// SetHosts replaces what the server's private /etc/hosts says
// (MeshServerOptions.PrivateHosts) with localhost and lines, such as
// "127.0.0.1 fake-member.kilo-mesh.test". The file is rewritten in place,
// so the server sees it; Go's resolver reads it again within 5 s.
func (m *MeshServer) SetHosts(lines ...string) error {
	if m.HostsPath == "" {
		return errors.New("the server was not started with PrivateHosts")
	}
	content := "127.0.0.1 localhost\n::1 localhost\n" + strings.Join(lines, "\n") + "\n"
	f, err := os.OpenFile(m.HostsPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ProcessMemory is what the kernel says of a process's memory, in bytes.
type ProcessMemory struct {
	// RSS is the resident set now (VmRSS); Peak the most it ever was
	// (VmHWM). Both count the pages of the binary, which a container's
	// limit reclaims rather than kill for.
	RSS, Peak int64
	// Anon is the anonymous part of RSS now (RssAnon): the heap, which a
	// container's limit cannot reclaim.
	Anon int64
}

func (p ProcessMemory) String() string {
	return fmt.Sprintf("RSS %d MiB (anonymous %d MiB), peak %d MiB", p.RSS>>20, p.Anon>>20, p.Peak>>20)
}

// Memory reads /proc/<pid>/status of the server's current run.
func (m *MeshServer) Memory() (ProcessMemory, error) {
	pid := m.Pid()
	if pid == 0 {
		return ProcessMemory{}, errors.New("the server is not running")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcessMemory{}, err
	}
	defer f.Close()
	var out ProcessMemory
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		field := map[string]*int64{"VmRSS": &out.RSS, "VmHWM": &out.Peak, "RssAnon": &out.Anon}[key]
		if !ok || field == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return ProcessMemory{}, fmt.Errorf("%s of pid %d: %q", key, pid, value)
		}
		*field = kb << 10
	}
	if out.RSS == 0 {
		return ProcessMemory{}, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return out, s.Err()
}

// DeployedMemoryLimit returns the memory limit of the server's container
// in artifacts/deploy/statefulset.yaml, which the manifest passes to the
// server as --memory-limit, so that a test runs the server as deployed
// (--memory-limit=<bytes>, as the kubelet expands it). It fails when the
// manifest no longer passes the limit.
func DeployedMemoryLimit() (int64, error) {
	path, err := DeployManifest("statefulset.yaml")
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var sts appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(data, &sts); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range sts.Spec.Template.Spec.Containers {
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" ||
				(!e.ValueFrom.ResourceFieldRef.Divisor.IsZero() && e.ValueFrom.ResourceFieldRef.Divisor.Value() != 1) {
				continue
			}
			for _, arg := range c.Args {
				if arg == "--memory-limit=$("+e.Name+")" {
					return limit.Value(), nil
				}
			}
		}
		return 0, fmt.Errorf("%s: container %s has a memory limit and does not pass it as --memory-limit (an env var from resourceFieldRef limits.memory)", path, c.Name)
	}
	return 0, fmt.Errorf("%s: no container with a memory limit", path)
}
