package etcd

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// restoreBatch bounds the keys written per transaction, under etcd's
// default --max-txn-ops (128); restoreBatchBytes keeps a transaction
// under its default --max-request-bytes (1.5 MiB).
const (
	restoreBatch      = 100
	restoreBatchBytes = 1 << 20
)

// RestoreResult says what a restore wrote.
type RestoreResult struct {
	// Written are the keys written; Present those the store already held
	// with the same value (a restore run again after it was cut short).
	Written, Present int
	// ByResource counts the restored keys by the resource their key names.
	ByResource map[string]int
}

// Restore writes kvs, taken under fromPrefix, into the store kv reaches
// under toPrefix. It writes into a fresh store only: a key the store holds
// under toPrefix that the snapshot does not hold, or holds with another
// value, is an error, and nothing is written. Keys already there with the
// same value are kept, so that a restore cut short can be run again. Keys
// are written only where absent (a create-revision guard), in
// transactions of at most restoreBatch keys.
func Restore(ctx context.Context, kv clientv3.KV, kvs []KeyValue, fromPrefix, toPrefix string) (*RestoreResult, error) {
	want := make(map[string][]byte, len(kvs))
	res := &RestoreResult{ByResource: map[string]int{}}
	for _, p := range kvs {
		rel, ok := strings.CutPrefix(string(p.Key), fromPrefix)
		if !ok {
			return nil, fmt.Errorf("key %q is not under %s", p.Key, fromPrefix)
		}
		want[toPrefix+rel] = p.Value
		res.ByResource[resourceOf(rel)]++
	}
	have, err := kv.Get(ctx, toPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("reading what the store holds under %s: %w", toPrefix, err)
	}
	present := map[string]bool{}
	var foreign []string
	for _, h := range have.Kvs {
		v, ok := want[string(h.Key)]
		if !ok || !bytes.Equal(v, h.Value) {
			foreign = append(foreign, string(h.Key))
			continue
		}
		present[string(h.Key)] = true
	}
	if len(foreign) > 0 {
		return nil, fmt.Errorf("the store already holds %d objects under %s that the snapshot does not hold as they are (the first: %s): "+
			"restore only into a fresh install; nothing was written", len(foreign), toPrefix, foreign[0])
	}
	res.Present = len(present)
	var ops []clientv3.Op
	var guards []clientv3.Cmp
	size := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		r, err := kv.Txn(ctx).If(guards...).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("writing %d keys after %d: %w", len(ops), res.Written, err)
		}
		if !r.Succeeded {
			return fmt.Errorf("another writer created keys under %s during the restore (after %d keys): "+
				"stop every server of the store and run the restore again", toPrefix, res.Written)
		}
		res.Written += len(ops)
		ops, guards, size = ops[:0], guards[:0], 0
		return nil
	}
	for _, p := range kvs {
		key := toPrefix + strings.TrimPrefix(string(p.Key), fromPrefix)
		if present[key] {
			continue
		}
		if len(ops) == restoreBatch || size+len(key)+len(p.Value) > restoreBatchBytes {
			if err := flush(); err != nil {
				return res, err
			}
		}
		ops = append(ops, clientv3.OpPut(key, string(p.Value)))
		guards = append(guards, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
		size += len(key) + len(p.Value)
	}
	return res, flush()
}

// resourceOf is the resource the API server stores a key under: the
// first segment below the prefix that is not a group (which has dots), as
// in <group>/<resource>/<namespace>/<name>.
func resourceOf(rel string) string {
	for _, seg := range strings.Split(strings.TrimPrefix(rel, "/"), "/") {
		if !strings.Contains(seg, ".") {
			return seg
		}
	}
	return rel
}
