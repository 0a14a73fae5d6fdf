package reconciler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// maxDepartedRemembered bounds the completed departures remembered per
// mesh (the validation limit of spec.clusters), so that a tenant editing
// entries in and out cannot grow this memory without bound.
const maxDepartedRemembered = 64

// departedHere remembers the departures this process completed, by mesh
// and entry: the mesh cache may still show a status from before the
// completion, whose Removing item must not then read as a lost connection.
// An entry is needed only while that status may show; settleDepartures
// drops the others (keep), and the oldest goes past maxDepartedRemembered.
type departedHere struct {
	mu   sync.Mutex
	done map[types.NamespacedName]map[string]departedAt
	// forgotten counts the entries dropped for the bound, for the log.
	forgotten int
}

type departedAt struct {
	uid types.UID
	at  time.Time
}

func (d *departedHere) set(key types.NamespacedName, entry string, uid types.UID, done bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !done {
		delete(d.done[key], entry)
		return
	}
	if d.done == nil {
		d.done = map[types.NamespacedName]map[string]departedAt{}
	}
	m := d.done[key]
	if m == nil {
		m = map[string]departedAt{}
		d.done[key] = m
	}
	if _, ok := m[entry]; !ok && len(m) >= maxDepartedRemembered {
		oldest := ""
		for name, v := range m {
			if oldest == "" || v.at.Before(m[oldest].at) || v.at.Equal(m[oldest].at) && name < oldest {
				oldest = name
			}
		}
		delete(m, oldest)
		d.forgotten++
		klog.InfoS("Forgot a completed departure to bound memory; if the mesh cache still shows it Removing, it reads CredentialGone",
			"mesh", key, "cluster", oldest, "limit", maxDepartedRemembered, "forgotten", d.forgotten)
	}
	m[entry] = departedAt{uid: uid, at: now}
}

func (d *departedHere) has(key types.NamespacedName, entry string, uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.done[key][entry]
	return ok && v.uid == uid
}

// keep drops the entries of key that names (what the mesh's status and
// holds still show of its departures) does not hold: nothing can be
// mistaken for them any more.
func (d *departedHere) keep(key types.NamespacedName, names map[string]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for entry := range d.done[key] {
		if !names[entry] {
			delete(d.done[key], entry)
		}
	}
	if len(d.done[key]) == 0 {
		delete(d.done, key)
	}
}

func (d *departedHere) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.done, key)
}
