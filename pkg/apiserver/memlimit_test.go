package apiserver

import "testing"

func TestGoMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, memoryLimit, gomemlimit string
		want                          int64
		wantErr                       bool
	}{
		{name: "none"},
		{name: "a quantity", memoryLimit: "512Mi", want: 483183820},
		{name: "bytes, as the kubelet passes limits.memory", memoryLimit: "536870912", want: 483183820},
		{name: "GOMEMLIMIT wins", memoryLimit: "512Mi", gomemlimit: "300MiB"},
		{name: "not a quantity", memoryLimit: "lots", wantErr: true},
		{name: "zero", memoryLimit: "0", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := goMemoryLimit(tc.memoryLimit, tc.gomemlimit)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("goMemoryLimit(%q, %q) = %d, %v; want %d, error %v", tc.memoryLimit, tc.gomemlimit, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
