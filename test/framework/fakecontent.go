package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FakeContent is what a FakeMemberServe member holds: Nodes and Peers no
// kube-apiserver would, in number or in size.
type FakeContent struct {
	// Nodes is how many Nodes it lists; each is a Kilo node that checked
	// in, with a pod CIDR in 10.200.0.0/13.
	Nodes int
	// NodeLabelBytes, when set, gives every Node a label of that many
	// bytes (a kube-apiserver allows 63).
	NodeLabelBytes int
	// FirstNode numbers the Nodes from it (names, keys, addresses): fake
	// members with disjoint ranges hold distinct Nodes.
	FirstNode int64
	// PodCIDRPerNode gives Node number n the pod CIDR 10.200.0.0 + 16n /28,
	// so that no two Nodes share one (by default, 256 Nodes share a /24).
	PodCIDRPerNode bool
	// NodeAnnotations, when set, gives Node i these annotations besides
	// (or instead of) the Kilo ones it has anyway.
	NodeAnnotations func(i int64) map[string]string
	// PeerFlood makes every watch of Peers stream ADDED events of new
	// Peers, as fast as the client reads them, until it goes or the member
	// holds MaxFloodPeers Peers; the Peers added are listed afterwards.
	PeerFlood bool
	// NodeTicks makes every watch of Nodes stream a MODIFIED event of the
	// first Node (a Kilo check-in) every 100 ms until it goes.
	NodeTicks bool
}

// MaxFloodPeers bounds a flood of Peers, so that a server reading it
// without limit exhausts the test's patience rather than the machine.
const MaxFloodPeers = 1_000_000

// HugeAnswerBytes is the size of what FakeMemberHugeAnswer answers to a
// list: more than any member answer the server should read.
const HugeAnswerBytes = 100 << 20

// Peers is how many Peers the fake member holds now.
func (f *FakeMember) Peers() int64 { return f.peers.Load() }

// LargestAnswer is the most bytes the fake member wrote of one answer
// before the client stopped reading or the answer ended.
func (f *FakeMember) LargestAnswer() int64 { return f.largest.Load() }

// serveContent answers Node and Peer lists (paged as asked) and watches.
func (f *FakeMember) serveContent(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	switch {
	case r.URL.Path == "/api/v1/nodes" && watching && f.Content.NodeTicks:
		f.tick(w, r)
	case r.URL.Path == "/api/v1/nodes" && watching:
		f.hold(w, r)
	case r.URL.Path == "/api/v1/nodes":
		f.writeList(w, r, "NodeList", "v1", int64(f.Content.Nodes), f.nodeJSON)
	case r.URL.Path == "/apis/kilo.squat.ai/v1alpha1/peers" && watching && f.Content.PeerFlood:
		f.flood(w, r)
	case r.URL.Path == "/apis/kilo.squat.ai/v1alpha1/peers" && watching:
		f.hold(w, r)
	case r.URL.Path == "/apis/kilo.squat.ai/v1alpha1/peers":
		f.writeList(w, r, "PeerList", "kilo.squat.ai/v1alpha1", f.peers.Load(), peerJSON)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}
}

// hold keeps a watch open without an event.
func (f *FakeMember) hold(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-f.done:
	}
}

// writeList writes items [continue, continue+limit) of n, with a continue
// token when more remain.
func (f *FakeMember) writeList(w http.ResponseWriter, r *http.Request, kind, apiVersion string, n int64, item func(int64) string) {
	q := r.URL.Query()
	start, _ := strconv.ParseInt(q.Get("continue"), 10, 64)
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	end := n
	if limit > 0 && start+limit < n {
		end = start + limit
	}
	cont := ""
	if end < n {
		cont = strconv.FormatInt(end, 10)
	}
	w.Header().Set("Content-Type", "application/json")
	bw := &countingWriter{w: w}
	out := bufio.NewWriterSize(bw, 1<<20)
	fmt.Fprintf(out, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"1","continue":%q},"items":[`, kind, apiVersion, cont)
	for i := start; i < end; i++ {
		if i > start {
			out.WriteByte(',')
		}
		out.WriteString(item(i))
	}
	out.WriteString("]}")
	_ = out.Flush()
	f.noteAnswer(bw.n)
}

func (f *FakeMember) nodeJSON(i int64) string {
	i += f.Content.FirstNode
	podCIDR := fmt.Sprintf("10.%d.%d.0/24", 200+i/65536%8, i/256%256)
	if f.Content.PodCIDRPerNode {
		a := uint32(10<<24|200<<16) + uint32(i)*16
		podCIDR = fmt.Sprintf("%d.%d.%d.%d/28", a>>24, a>>16&0xff, a>>8&0xff, a&0xff)
	}
	fat := ""
	if f.Content.NodeLabelBytes > 0 {
		fat = `,"fat":"` + strings.Repeat("x", f.Content.NodeLabelBytes) + `"`
	}
	annotations := map[string]string{"kilo.squat.ai/key": fakeKey(i), "kilo.squat.ai/endpoint": fmt.Sprintf("203.0.113.%d:51820", i%250+1),
		"kilo.squat.ai/last-seen": strconv.FormatInt(time.Now().Unix(), 10)}
	if f.Content.NodeAnnotations != nil {
		for k, v := range f.Content.NodeAnnotations(i - f.Content.FirstNode) {
			annotations[k] = v
		}
	}
	a, _ := json.Marshal(annotations)
	return fmt.Sprintf(`{"metadata":{"name":"fake-%06d","uid":"fake-node-%d","resourceVersion":"1","labels":{"topology.kubernetes.io/region":"fake"%s},`+
		`"annotations":%s},`+
		`"spec":{"podCIDR":"%s"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.%d.%d"}]}}`,
		i, i, fat, a, podCIDR, i/256%256, i%256)
}

func peerJSON(i int64) string {
	return fmt.Sprintf(`{"metadata":{"name":"flood-%08d","uid":"fake-peer-%d","resourceVersion":"%d"},"spec":{"allowedIPs":["10.%d.%d.%d/32"],"publicKey":"%s"}}`,
		i, i, i+2, 64+i/65536%64, i/256%256, i%256, fakeKey(i))
}

// fakeKey is a valid WireGuard public key (base64 of 32 bytes) per index.
func fakeKey(i int64) string {
	return fmt.Sprintf("%043d=", i)
}

// flood streams ADDED events of new Peers until the client goes.
func (f *FakeMember) flood(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	out := bufio.NewWriterSize(w, 64<<10)
	for n := 0; r.Context().Err() == nil && !isClosed(f.done); n++ {
		i := f.peers.Add(1) - 1
		if i >= MaxFloodPeers {
			f.peers.Add(-1)
			_ = out.Flush()
			select {
			case <-r.Context().Done():
			case <-f.done:
			}
			return
		}
		out.WriteString(`{"type":"ADDED","object":{"kind":"Peer","apiVersion":"kilo.squat.ai/v1alpha1",`)
		out.WriteString(peerJSON(i)[1:])
		out.WriteString("}\n")
		if n%256 == 255 {
			if out.Flush() != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

// tick streams a MODIFIED event of the first Node every 100 ms until the
// client goes.
func (f *FakeMember) tick(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		case <-t.C:
		}
		if _, err := w.Write([]byte(`{"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1",` + f.nodeJSON(0)[1:] + "}\n")); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// serveHuge answers Node and Peer lists with HugeAnswerBytes of one name.
func (f *FakeMember) serveHuge(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
		f.hold(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	bw := &countingWriter{w: w}
	defer func() { f.noteAnswer(bw.n) }()
	if _, err := bw.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"`)); err != nil {
		return
	}
	chunk := []byte(strings.Repeat("x", 64<<10))
	for written := 0; written < HugeAnswerBytes; written += len(chunk) {
		if _, err := bw.Write(chunk); err != nil {
			return
		}
	}
	_, _ = bw.Write([]byte(`"}}]}`))
}

func (f *FakeMember) noteAnswer(n int64) {
	for {
		cur := f.largest.Load()
		if n <= cur || f.largest.CompareAndSwap(cur, n) {
			return
		}
	}
}

// countingWriter counts what was written through it.
type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
