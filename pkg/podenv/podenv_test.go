package podenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNamespace(t *testing.T) {
	dir := t.TempDir()
	saFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(saFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, file string
		want            string
		inPod           bool
	}{
		{name: "downward API", env: "from-env", file: saFile, want: "from-env", inPod: true},
		{name: "ServiceAccount mount", file: saFile, want: "from-file", inPod: true},
		{name: "outside a pod", file: filepath.Join(dir, "missing"), want: DefaultNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, inPod := namespace(tt.env, tt.file)
			if got != tt.want || inPod != tt.inPod {
				t.Errorf("namespace() = %q, %v; want %q, %v", got, inPod, tt.want, tt.inPod)
			}
		})
	}
}
