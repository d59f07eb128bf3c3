package proctree

import (
	"os/exec"
	"testing"
)

// BenchmarkRunTrue runs /bin/true through Run: in a cgroup of its own
// (when available) or with the /proc scan alone, against a bare
// fork/exec in the same run.
func BenchmarkRunTrue(b *testing.B) {
	for _, mode := range []struct {
		name     string
		scanOnly bool
	}{{"cgroup", false}, {"scan-only", true}} {
		b.Run(mode.name, func(b *testing.B) {
			if !mode.scanOnly && cgroupBase() == "" {
				b.Skip("no cgroup v2 with cgroup.kill here")
			}
			scanOnly = mode.scanOnly
			defer func() { scanOnly = false }()
			for b.Loop() {
				if _, err := Run(b.Context(), Spec{Path: "/bin/true", Args: []string{"true"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw-fork-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
