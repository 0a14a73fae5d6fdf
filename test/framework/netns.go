package framework

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Network namespaces for data-plane tests: an underlay of namespaces joined
// by veth pairs to one bridge that lives in a namespace of its own. Nothing
// of it touches the root namespace: no interface, address or route is added
// there, and the namespaces have no route out of the underlay, so whatever
// address a packet inside is sent to, it stays in namespaces the test made.
//
// Every namespace is named NetnsPrefix<pid>-<name>, <pid> being the test
// process: a later run removes those whose process is gone (see
// SweepStaleNetns), as a run killed with SIGKILL cannot clean up.

// NetnsPrefix starts the name of every namespace an Underlay creates.
const NetnsPrefix = "kmdp-"

// netnsRunDir is where `ip netns add` mounts named namespaces.
const netnsRunDir = "/run/netns"

// underlayBridge is the bridge's name inside the bridge namespace.
const underlayBridge = "br0"

// Underlay is a set of network namespaces on one bridge, and the processes
// started inside them. Close removes all of it.
type Underlay struct {
	// LogDir holds the logs of the processes started in the namespaces; it
	// is removed by Close unless $KILO_MESH_KEEP_ENV is set.
	LogDir string

	prefix string // NetnsPrefix<pid>-
	bridge string // namespace holding the bridge
	ip     string // path of iproute2's ip

	mu         sync.Mutex
	namespaces []string // created, bridge first
	ports      int      // veth ports on the bridge so far
	procs      []*NetnsProcess
	closed     bool
}

// NewUnderlay checks that network namespaces can be made (root and
// iproute2's ip are needed), removes the namespaces of dead earlier runs,
// and creates the bridge namespace.
func NewUnderlay(ctx context.Context) (*Underlay, error) {
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		return nil, errors.New("making network namespaces needs iproute2's ip: apt-get install --no-install-recommends iproute2")
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("making network namespaces, veth pairs and TUN devices needs root: run as root (effective uid is %d)", os.Geteuid())
	}
	SweepStaleNetns(ctx)
	u := &Underlay{
		prefix: fmt.Sprintf("%s%d-", NetnsPrefix, os.Getpid()),
		ip:     ipPath,
	}
	logDir, err := os.MkdirTemp("", u.prefix+"logs-")
	if err != nil {
		return nil, err
	}
	u.LogDir = logDir
	u.bridge = u.prefix + "br"
	if err := u.addNamespace(ctx, u.bridge); err != nil {
		os.RemoveAll(logDir)
		return nil, err
	}
	if err := u.IP(ctx, u.bridge,
		"link add "+underlayBridge+" type bridge",
		"link set "+underlayBridge+" up",
	); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

func (u *Underlay) addNamespace(ctx context.Context, ns string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return errors.New("the underlay is closed")
	}
	if _, stderr, err := runCommand(ctx, nil, nil, u.ip, "netns", "add", ns); err != nil {
		return fmt.Errorf("creating network namespace %s (needs root: CAP_SYS_ADMIN and CAP_NET_ADMIN, and a writable %s): %w: %s",
			ns, netnsRunDir, err, strings.TrimSpace(stderr))
	}
	u.namespaces = append(u.namespaces, ns)
	return nil
}

// Namespace returns the full name of the underlay's namespace for name.
func (u *Underlay) Namespace(name string) string { return u.prefix + name }

// HostNetnsPath is the network namespace of the calling process, the one
// whose loopback the kube-apiservers listen on, as a path another process
// can open.
func HostNetnsPath() string { return fmt.Sprintf("/proc/%d/ns/net", os.Getpid()) }

// AddHost creates the namespace for name, connects its eth0 to the bridge
// with the given addresses, and brings eth0 and lo up. It returns the
// namespace's full name.
func (u *Underlay) AddHost(ctx context.Context, name string, addrs ...netip.Prefix) (string, error) {
	return u.AddHostOn(ctx, underlayBridge, name, addrs...)
}

// AddAddressInterface adds interface dev to namespace ns holding addrs (as
// host routes): the stand-in for a pod network. The kernels this runs on
// have no dummy driver, so it is one end of a veth pair whose other end
// stays in the same namespace, unused.
func (u *Underlay) AddAddressInterface(ctx context.Context, ns, dev string, addrs ...netip.Addr) error {
	cmds := []string{
		fmt.Sprintf("link add %s type veth peer name %s-x", dev, dev),
		"link set " + dev + "-x up",
		"link set " + dev + " up",
	}
	for _, a := range addrs {
		cmds = append(cmds, addrCommand(netip.PrefixFrom(a, a.BitLen()), dev))
	}
	return u.IP(ctx, ns, cmds...)
}

// AddAddresses adds host addresses to dev in ns.
func (u *Underlay) AddAddresses(ctx context.Context, ns, dev string, addrs ...netip.Addr) error {
	var cmds []string
	for _, a := range addrs {
		cmds = append(cmds, addrCommand(netip.PrefixFrom(a, a.BitLen()), dev))
	}
	return u.IP(ctx, ns, cmds...)
}

// RemoveAddresses removes host addresses from dev in ns.
func (u *Underlay) RemoveAddresses(ctx context.Context, ns, dev string, addrs ...netip.Addr) error {
	var cmds []string
	for _, a := range addrs {
		cmds = append(cmds, fmt.Sprintf("address del %s dev %s", netip.PrefixFrom(a, a.BitLen()), dev))
	}
	return u.IP(ctx, ns, cmds...)
}

// addrCommand adds an address; IPv6 ones skip duplicate address detection,
// which would hold them tentative (unusable) for a second or two.
func addrCommand(a netip.Prefix, dev string) string {
	cmd := fmt.Sprintf("address add %s dev %s", a, dev)
	if a.Addr().Is6() {
		cmd += " nodad"
	}
	return cmd
}

// IP runs `ip -n ns -batch -` with one command per line (without the
// leading "ip").
func (u *Underlay) IP(ctx context.Context, ns string, cmds ...string) error {
	input := strings.NewReader(strings.Join(cmds, "\n") + "\n")
	if _, stderr, err := runCommand(ctx, input, nil, u.ip, "-n", ns, "-batch", "-"); err != nil {
		return fmt.Errorf("in network namespace %s: %w: %s", ns, err, strings.TrimSpace(stderr))
	}
	return nil
}

// NetnsProcess is a process started inside a namespace of the underlay.
type NetnsProcess struct {
	Name      string
	Namespace string
	LogPath   string
	proc      *process
}

// Start runs path with args inside namespace ns (`ip netns exec`, which
// execs it: the pid is the program's), output appended to
// <LogDir>/<name>.log. Close stops it.
func (u *Underlay) Start(ns, name, path string, args ...string) (*NetnsProcess, error) {
	p := &NetnsProcess{Name: name, Namespace: ns, LogPath: filepath.Join(u.LogDir, name+".log")}
	p.proc = newProcess(name, u.ip, p.LogPath, append([]string{"netns", "exec", ns, path}, args...))
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, errors.New("the underlay is closed")
	}
	u.procs = append(u.procs, p)
	u.mu.Unlock()
	if err := p.proc.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Signal sends sig to the process.
func (p *NetnsProcess) Signal(sig syscall.Signal) error {
	pid := p.proc.pid()
	if pid == 0 || !p.proc.running() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	return syscall.Kill(pid, sig)
}

// LogTail returns the last n lines of the process's log.
func (p *NetnsProcess) LogTail(n int) string { return tailFile(p.LogPath, n) }

// Processes returns the processes started so far.
func (u *Underlay) Processes() []*NetnsProcess {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.procs)
}

// Close stops every process and deletes every namespace (which destroys
// their interfaces). It is idempotent.
func (u *Underlay) Close() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	u.closed = true
	procs, namespaces := u.procs, u.namespaces
	u.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var errMu sync.Mutex
	for _, p := range procs {
		wg.Go(func() {
			if err := p.proc.stop(2 * time.Second); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range slices.Backward(namespaces) {
		if err := deleteNetns(ctx, u.ip, ns); err != nil {
			errs = append(errs, err)
		}
	}
	if os.Getenv(KeepEnv) == "" {
		errs = append(errs, os.RemoveAll(u.LogDir))
	}
	return errors.Join(errs...)
}

// deleteNetns kills what still runs in ns, then removes it.
func deleteNetns(ctx context.Context, ipPath, ns string) error {
	if out, _, err := runCommand(ctx, nil, nil, ipPath, "netns", "pids", ns); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if _, stderr, err := runCommand(ctx, nil, nil, ipPath, "netns", "delete", ns); err != nil {
		return fmt.Errorf("deleting network namespace %s: %w: %s", ns, err, strings.TrimSpace(stderr))
	}
	return nil
}

var staleNetns = regexp.MustCompile("^" + regexp.QuoteMeta(NetnsPrefix) + `(\d+)-`)

// SweepStaleNetns deletes the namespaces (with whatever still runs inside
// them) and log directories of earlier runs whose test process no longer
// exists: killed before it could clean up. Errors are ignored: a sweep is
// best effort.
func SweepStaleNetns(ctx context.Context) {
	dead := func(name string) bool {
		m := staleNetns.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		_, err := os.Stat("/proc/" + m[1])
		return errors.Is(err, os.ErrNotExist)
	}
	if ipPath, err := exec.LookPath("ip"); err == nil {
		entries, _ := os.ReadDir(netnsRunDir)
		for _, e := range entries {
			if dead(e.Name()) {
				_ = deleteNetns(ctx, ipPath, e.Name())
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), NetnsPrefix+"*-logs-*"))
	for _, d := range dirs {
		if dead(filepath.Base(d)) {
			os.RemoveAll(d)
		}
	}
}

// InNetns runs f on an OS thread that has joined the named network
// namespace ns, then returns the thread to the caller's namespace. Sockets
// f creates stay in ns for their whole life, whichever thread uses them
// later; so this is how a test listens and sends inside a namespace without
// a process there. f must not start goroutines that expect ns (they run on
// other threads).
func InNetns(ns string, f func() error) error {
	return InNetnsPath(filepath.Join(netnsRunDir, ns), f)
}

// InNetnsPath is InNetns for the namespace at path, such as
// /proc/<pid>/ns/net (see HostNetnsPath).
func InNetnsPath(path string, f func() error) error {
	ns := path
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", ns, err)
	}
	defer target.Close()
	runtime.LockOSThread()
	// Only a thread back in its own namespace may serve other goroutines:
	// if the way back fails, the thread stays locked and ends with this
	// goroutine (the runtime then terminates it).
	restored := false
	defer func() {
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		restored = true
		return err
	}
	defer self.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		restored = true
		return fmt.Errorf("entering network namespace %s: %w", ns, err)
	}
	ferr := f()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("returning from network namespace %s: %w", ns, err)
	}
	restored = true
	return ferr
}
