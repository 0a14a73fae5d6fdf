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

func TestMemberCacheBudget(t *testing.T) {
	for _, tc := range []struct {
		name, memoryLimit        string
		totalMiB, namespaceMiB   int
		wantTotal, wantNamespace int64
		wantErr                  bool
	}{
		{name: "no memory limit", wantTotal: 1024 << 20, wantNamespace: 512 << 20},
		{name: "a quarter of the memory limit, half of it a namespace", memoryLimit: "512Mi", wantTotal: 128 << 20, wantNamespace: 64 << 20},
		{name: "bytes, as the kubelet passes limits.memory", memoryLimit: "2147483648", wantTotal: 512 << 20, wantNamespace: 256 << 20},
		{name: "the total set", memoryLimit: "512Mi", totalMiB: 300, wantTotal: 300 << 20, wantNamespace: 150 << 20},
		{name: "both set", memoryLimit: "512Mi", totalMiB: 300, namespaceMiB: 20, wantTotal: 300 << 20, wantNamespace: 20 << 20},
		{name: "not a quantity", memoryLimit: "lots", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total, namespace, err := memberCacheBudget(tc.memoryLimit, tc.totalMiB, tc.namespaceMiB)
			if (err != nil) != tc.wantErr || total != tc.wantTotal || namespace != tc.wantNamespace {
				t.Errorf("memberCacheBudget(%q, %d, %d) = %d, %d, %v; want %d, %d, error %v", tc.memoryLimit, tc.totalMiB, tc.namespaceMiB,
					total, namespace, err, tc.wantTotal, tc.wantNamespace, tc.wantErr)
			}
		})
	}
}
