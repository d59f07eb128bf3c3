// Command wasmtool is a Tool written in Go and built to WebAssembly for
// Brain's built-in "brain" environment. It counts the lines, words and
// bytes of a file in its workspace, writes the counts next to it as
// <name>.count, reports its progress as an extension event and answers
// {"lines","words","bytes"}.
//
// Build it and admit it, from the repository's root, with the token
// "brain serve" prints:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o wc.wasm ./examples/wasmtool
//	curl -H "Authorization: Bearer $BRAIN_TOKEN" -H "Idempotency-Key: admit-wc-1" \
//	  -H "Content-Type: application/octet-stream" --data-binary @wc.wasm \
//	  http://127.0.0.1:8080/v1/tools
//
// then serve with BRAIN_ENV_FILESYSTEM_ALLOW naming the directory (or a
// parent of it) and place the tool on a brain environment:
//
//	"environments": [{"name": "brain", "driver": "brain"}],
//	"tools": [{"name": "wc", "description": "count a file",
//	  "input_schema": {"type": "object", "required": ["path"]},
//	  "placements": {"brain": {"implementation": {
//	    "type": "brain_component", "entrypoint": "run", "id": "<id>",
//	    "grants": {"filesystem": {"workspace": {"path": "/srv/docs", "access": "write"}}}}}}}]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/tool"
)

func init() { tool.Export(Count) }

// main is not run: a Wasm reactor only runs init functions, then run.
func main() {}

// Counts is the tool's answer.
type Counts struct {
	Lines int `json:"lines"`
	Words int `json:"words"`
	Bytes int `json:"bytes"`
}

// Count is the tool. It runs the same natively, against any tool.Services
// and a real /workspace.
func Count(ctx context.Context, svc tool.Services, inv tool.Invocation) (api.Outcome, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(inv.Input, &in); err != nil || in.Path == "" {
		return tool.Error("invalid_input", `want {"path": <file in the workspace>}`), nil
	}
	file := path.Join("/workspace", path.Clean("/"+in.Path))
	b, err := os.ReadFile(file)
	if err != nil {
		return tool.Error("not_readable", err.Error()), nil
	}
	c := Counts{Lines: bytes.Count(b, []byte("\n")), Words: len(bytes.Fields(b)), Bytes: len(b)}
	out, _ := json.Marshal(c)
	if err := os.WriteFile(file+".count", append(out, '\n'), 0o644); err != nil {
		return tool.Error("not_writable", err.Error()), nil
	}
	progress, _ := json.Marshal(map[string]string{"counted": in.Path})
	if _, err := svc.Emit(ctx, "wc.counted", progress); err != nil {
		return api.Outcome{}, fmt.Errorf("reporting progress: %w", err)
	}
	return tool.OK(out), nil
}
