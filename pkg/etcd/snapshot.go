package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// A snapshot is what etcd's Maintenance API streams (and `etcdctl snapshot
// save` writes): the member's bbolt database followed by the SHA-256 of it.
// Taking one is consistent while the store serves; reading one back needs
// no running etcd.

// Save streams a snapshot of the store that client reaches into w, as
// etcd sends it (the checksum included, so that etcd's own tools read it
// too), and checks the checksum on the way: a truncated stream is an
// error, not a file that fails only at restore. It returns the bytes
// written.
func Save(ctx context.Context, client *clientv3.Client, w io.Writer) (int64, error) {
	rc, err := client.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("requesting a snapshot: %w", err)
	}
	defer rc.Close()
	v := newChecksummed(w)
	n, err := io.Copy(v, rc)
	if err != nil {
		return n, fmt.Errorf("receiving the snapshot after %d bytes: %w", n, err)
	}
	if err := v.verify(); err != nil {
		return n, err
	}
	if _, err := w.Write(v.tail); err != nil {
		return n, err
	}
	return n, nil
}

// checksummed hashes and writes through all but the last sha256.Size
// bytes it is given, which it keeps back to compare with the hash.
type checksummed struct {
	w    io.Writer
	hash hash.Hash
	tail []byte
}

func newChecksummed(w io.Writer) *checksummed { return &checksummed{w: w, hash: sha256.New()} }

func (c *checksummed) Write(p []byte) (int, error) {
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - sha256.Size; over > 0 {
		c.hash.Write(c.tail[:over])
		if _, err := c.w.Write(c.tail[:over]); err != nil {
			return 0, err
		}
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return len(p), nil
}

func (c *checksummed) verify() error {
	if len(c.tail) != sha256.Size || !bytes.Equal(c.hash.Sum(nil), c.tail) {
		return errors.New("the snapshot's checksum does not match its content: it is cut short or corrupted, " +
			"or not a snapshot of `kilo-mesh-apiserver snapshot save` or `etcdctl snapshot save`")
	}
	return nil
}

// KeyValue is one key of a snapshot as the store held it last.
type KeyValue struct {
	Key, Value []byte
}

// Contents is what a snapshot holds under a prefix.
type Contents struct {
	// KVs are the live keys under the prefix, in key order.
	KVs []KeyValue
	// Revision is the store's revision when the snapshot was taken.
	Revision int64
}

// ReadSnapshot reads a snapshot from r, checks its checksum and returns
// its live keys under prefix. It reads the database as etcd lays it out:
// every revision of every key in the "key" bucket, in revision order, a
// deletion marked as a tombstone. The database is copied to a file in
// tmpDir first (bbolt reads files), and removed.
func ReadSnapshot(r io.Reader, prefix, tmpDir string) (*Contents, error) {
	f, err := os.CreateTemp(tmpDir, "snapshot-*.db")
	if err != nil {
		return nil, fmt.Errorf("creating a file for the snapshot: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	v := newChecksummed(f)
	_, err = io.Copy(v, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	if err := v.verify(); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening the snapshot's database: %w", err)
	}
	defer db.Close()
	live := map[string][]byte{}
	var rev int64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(schema.Key.Name())
		if b == nil {
			return errors.New("the snapshot has no key bucket: not an etcd snapshot")
		}
		return b.ForEach(func(k, v []byte) error {
			rev = mvcc.BytesToRev(k).Main
			var kv mvccpb.KeyValue
			if err := kv.Unmarshal(v); err != nil {
				return fmt.Errorf("decoding revision %d: %w", rev, err)
			}
			if !bytes.HasPrefix(kv.Key, []byte(prefix)) {
				return nil
			}
			if mvcc.IsTombstone(k) {
				delete(live, string(kv.Key))
			} else {
				live[string(kv.Key)] = kv.Value
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot's database: %w", err)
	}
	out := &Contents{Revision: rev}
	for k, v := range live {
		out.KVs = append(out.KVs, KeyValue{Key: []byte(k), Value: v})
	}
	slices.SortFunc(out.KVs, func(a, b KeyValue) int { return bytes.Compare(a.Key, b.Key) })
	return out, nil
}
