package httpapi

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// TestAdmissionWhileTheLoopHostCloses: an admission that finds the loop
// host closed (the server is shutting down; one that waited for another
// admission's compilation sees it the same way) was refused, not failed:
// it answers 503 overloaded, retryable, as a draining server does, and
// its key stays unused, so that the same key may be sent with another
// module.
func TestAdmissionWhileTheLoopHostCloses(t *testing.T) {
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), ToolsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Agentloops: h})
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/agentloops", "/v1/tools"} {
		for i, body := range [][]byte{builtin.DefaultWasm(), []byte("other module bytes")} {
			code, raw := f.admission("POST", path, "closing-key", "application/octet-stream", body)
			var e api.ApiError
			if err := json.Unmarshal([]byte(raw), &e); code != 503 || err != nil || e.Code != api.CodeOverloaded || !e.Retryable {
				t.Fatalf("POST %s (attempt %d) with the loop host closed: %d %s, want 503 overloaded, retryable", path, i+1, code, raw)
			}
		}
	}
}
