package etcd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// lockPollInterval is how often a held data directory is tried again.
const lockPollInterval = 200 * time.Millisecond

// errHeld marks the error of a data directory another process holds.
var errHeld = errors.New("held by another process")

// dirLock is an exclusive flock on the data directory. etcd itself would
// wait silently for its database file, after having replaced the running
// member's socket with its own; taking this lock first keeps a second
// process away from both.
type dirLock struct {
	f *os.File
}

// lockDir takes the lock on dir, waiting up to timeout while another
// process holds it. The kernel drops the lock when the holder exits, even
// when it is killed.
func lockDir(ctx context.Context, dir string, timeout time.Duration) (*dirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the data directory to lock it: %w", err)
	}
	deadline := time.Now().Add(timeout)
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &dirLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking the data directory %s: %w", dir, err)
		}
		if !logged {
			klog.InfoS("Waiting for the data directory: another process holds it", "dataDir", dir, "timeout", timeout)
			logged = true
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("the data directory %s is held by another process (another kilo-mesh-apiserver on the same --data-dir?) for more than %s: %w", dir, timeout, errHeld)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPollInterval):
		}
	}
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	// Closing the descriptor releases the flock.
	l.f.Close()
	l.f = nil
}

// checkOwner refuses a directory that another user owns: that user could
// open the socket inside whatever its mode.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("owned by uid %d, not by this process's uid %d: give a directory of its own (e.g. a subdirectory of the volume)", st.Uid, uid)
	}
	return nil
}
