package etcd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSnapshotRoundTrip: a snapshot taken from a serving member holds the
// live keys under the prefix as they were last (a deleted key gone, an
// overwritten one at its last value); it restores into a fresh member,
// again without writing twice, and never over other content.
func TestSnapshotRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := start(t, Config{DataDir: t.TempDir()})
	const from, to = "/registry/mesh/", "/other/mesh/"
	put(t, src, from+"mesh.kilo.squat.ai/clustermeshes/ns/a", "a1")
	put(t, src, from+"mesh.kilo.squat.ai/clustermeshes/ns/a", "a2")
	put(t, src, from+"mesh.kilo.squat.ai/clustermeshes/ns/b", "b")
	put(t, src, from+"mesh.kilo.squat.ai/clustermeshgrants/g", "g")
	put(t, src, "/registry/meshes/x", "not under the prefix")
	if _, err := client(t, src).Delete(ctx, from+"mesh.kilo.squat.ai/clustermeshes/ns/b"); err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if _, err := Save(ctx, client(t, src), &snap); err != nil {
		t.Fatalf("saving: %v", err)
	}

	contents, err := ReadSnapshot(bytes.NewReader(snap.Bytes()), from, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range contents.KVs {
		got = append(got, string(kv.Key)+"="+string(kv.Value))
	}
	if want := from + "mesh.kilo.squat.ai/clustermeshes/ns/a=a2," + from + "mesh.kilo.squat.ai/clustermeshgrants/g=g"; strings.Join(got, ",") != want {
		t.Errorf("snapshot holds %v, want %s", got, want)
	}

	dst := start(t, Config{DataDir: t.TempDir()})
	res, err := Restore(ctx, client(t, dst), contents.KVs, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 2 || res.Present != 0 || res.ByResource["clustermeshes"] != 1 || res.ByResource["clustermeshgrants"] != 1 {
		t.Errorf("first restore: %+v", res)
	}
	if v := get(t, dst, to+"mesh.kilo.squat.ai/clustermeshes/ns/a"); v != "a2" {
		t.Errorf("restored value %q", v)
	}
	if res, err = Restore(ctx, client(t, dst), contents.KVs, from, to); err != nil || res.Written != 0 || res.Present != 2 {
		t.Errorf("restore again: %+v, %v; want nothing written", res, err)
	}
	put(t, dst, to+"mesh.kilo.squat.ai/clustermeshes/ns/c", "made after")
	if _, err := Restore(ctx, client(t, dst), contents.KVs, from, to); err == nil || !strings.Contains(err.Error(), "fresh install") {
		t.Errorf("restore over other content: %v, want a refusal", err)
	}

	for name, bad := range map[string][]byte{
		"cut short": snap.Bytes()[:snap.Len()-100],
		"corrupted": append(append([]byte{}, snap.Bytes()[:100]...), append([]byte{^snap.Bytes()[100]}, snap.Bytes()[101:]...)...),
	} {
		if _, err := ReadSnapshot(bytes.NewReader(bad), from, t.TempDir()); err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("%s snapshot: %v, want a checksum error", name, err)
		}
	}
}

// TestStartOfflineRefusesARunningServer: the restore opens the embedded
// member itself, and not while a server holds the data directory.
func TestStartOfflineRefusesARunningServer(t *testing.T) {
	dir := t.TempDir()
	start(t, Config{DataDir: dir})
	if s, err := StartOffline(context.Background(), dir); err == nil {
		s.Close()
		t.Fatal("StartOffline succeeded beside a running member")
	} else if !strings.Contains(err.Error(), "runs on this data directory") {
		t.Errorf("error %q", err)
	}
}
