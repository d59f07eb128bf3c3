package workspace

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// BenchmarkExecuteTrue runs the command tool with argv ["true"] through
// the provider's HTTP handler on loopback, without a callback grant, so it
// measures the provider: decode, binding lookup, workspace check, limit
// walk, process-group start, wait and tree sweep, and the answer.
func BenchmarkExecuteTrue(b *testing.B) {
	post, c := benchProvider(b)
	impl, input := tool(toolset.ToolCommand), json.RawMessage(`{"argv":["true"]}`)
	if r := post(c.Execute(impl, input, nil)); r.Type != envapi.ReceiptResult { // allocate
		b.Fatalf("execute %+v", r)
	}
	b.ResetTimer()
	for b.Loop() {
		if r := post(c.Execute(impl, input, nil)); r.Type != envapi.ReceiptResult {
			b.Fatalf("execute %+v", r)
		}
	}
}

// BenchmarkWriteTool replaces a 4 KiB file through the write tool: the
// HTTP round trip, decode, limit walk, and the replace (temporary file,
// fsync, rename, directory fsync).
func BenchmarkWriteTool(b *testing.B) {
	input, _ := json.Marshal(map[string]string{"path": "f.txt", "content": strings.Repeat("x", 4096)})
	benchTool(b, toolset.ToolWrite, input)
}

// BenchmarkReadTool reads the same 4 KiB file through the read tool: the
// execute path without the replace, the floor of BenchmarkWriteTool.
func BenchmarkReadTool(b *testing.B) {
	benchTool(b, toolset.ToolRead, json.RawMessage(`{"path":"f.txt"}`))
}

// benchTool posts executes of tool name with input to a provider whose
// workspace holds f.txt (4 KiB).
func benchTool(b *testing.B, name string, input json.RawMessage) {
	post, c := benchProvider(b)
	seed, _ := json.Marshal(map[string]string{"path": "f.txt", "content": strings.Repeat("x", 4096)})
	if r := post(c.Execute(tool(toolset.ToolWrite), seed, nil)); r.Type != envapi.ReceiptResult {
		b.Fatalf("write %+v", r)
	}
	impl := tool(name)
	for b.Loop() {
		if r := post(c.Execute(impl, input, nil)); r.Type != envapi.ReceiptResult {
			b.Fatalf("%s %+v", name, r)
		}
	}
}

// BenchmarkRawAtomicWrite is the write tool's baseline: the same 4 KiB
// replaced with fsutil.WriteFileAtomic (temporary file, fsync, rename,
// directory fsync), without HTTP.
func BenchmarkRawAtomicWrite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f.txt")
	data := []byte(strings.Repeat("x", 4096))
	for b.Loop() {
		if err := fsutil.WriteFileAtomic(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// benchProvider serves a provider on loopback with a binding set up, and
// answers how to post commands to it and the binding's commands.
func benchProvider(b *testing.B) (func(envapi.Command) envapi.Receipt, *envtest.Commands) {
	p, err := New(Options{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler("bench"))
	b.Cleanup(srv.Close)
	client := srv.Client()
	c := envtest.NewCommands("bench", "workspace")
	post := func(cmd envapi.Command) envapi.Receipt {
		_, body, resp, err := envtest.Post(context.Background(), client, srv.URL, "bench", cmd)
		if err != nil || resp == nil {
			b.Fatalf("post: %v %s", err, body)
		}
		return resp.Receipt
	}
	if r := post(c.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		b.Fatalf("setup %+v", r)
	}
	return post, c
}

// BenchmarkRawForkExecTrue is the baseline: fork/exec and wait of true.
func BenchmarkRawForkExecTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := exec.Command(path).Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopbackRoundTrip is the HTTP floor included in
// BenchmarkExecuteTrue: one POST of a small body to an empty handler.
func BenchmarkLoopbackRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	client := srv.Client()
	for b.Loop() {
		status, _, _, _ := envtest.Post(context.Background(), client, srv.URL, "", json.RawMessage(`{"a":1}`))
		if status != http.StatusOK {
			b.Fatal(status)
		}
	}
}
