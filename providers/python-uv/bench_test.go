package pythonuv

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// benchInput is the execute input of both paths.
var benchInput = json.RawMessage(`{"text":"hello","n":[1,2,3]}`)

// BenchmarkInvocation compares one execute of a prepared project through
// the provider (HTTP command, uv run, stdout checked, finish callback to a
// fake Brain, receipt) with running the same uv command directly with the
// same input and environment. Each iteration runs both, alternating which
// goes first, so machine load hits them alike; it reports the medians
// (provider-ms, direct-ms), the median of the paired differences
// (overhead-ms) and the ratio of the medians.
//
//	go test -run '^$' -bench Invocation -benchtime 60x ./providers/python-uv
func BenchmarkInvocation(b *testing.B) {
	r := newRig(b, nil)
	s := r.attach("bench")
	if rc := r.post(s.Execute(impl("plain"), benchInput, nil)); rc.Type != envapi.ReceiptResult {
		b.Fatalf("warm up: %s", describe(rc))
	}
	r.p.mu.Lock()
	set := r.p.s
	r.p.mu.Unlock()
	dir := filepath.Join(r.root, "plain")
	env := set.env()

	viaProvider := func() time.Duration {
		cmd := s.Execute(impl("plain"), benchInput, nil)
		start := time.Now()
		if rc := r.post(cmd); rc.Type != envapi.ReceiptResult {
			b.Fatalf("execute: %s", describe(rc))
		}
		return time.Since(start)
	}
	direct := func() time.Duration {
		start := time.Now()
		cmd := exec.Command(set.uv, "run", "--no-sync", "--project", dir, "python", "-m", "echo")
		cmd.Dir = dir
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(benchInput)
		out, err := cmd.Output()
		if err != nil || !json.Valid(out) {
			b.Fatalf("uv run: %v %s", err, out)
		}
		return time.Since(start)
	}

	var prov, dir2 []time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			prov = append(prov, viaProvider())
			dir2 = append(dir2, direct())
		} else {
			dir2 = append(dir2, direct())
			prov = append(prov, viaProvider())
		}
		i++
	}
	diffs := make([]time.Duration, len(prov))
	for i := range prov {
		diffs[i] = prov[i] - dir2[i]
	}
	p, d := median(prov), median(dir2)
	b.ReportMetric(ms(p), "provider-ms")
	b.ReportMetric(ms(d), "direct-ms")
	b.ReportMetric(ms(median(diffs)), "overhead-ms")
	b.ReportMetric(float64(p)/float64(d), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
