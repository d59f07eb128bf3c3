package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/fullfs"
)

// TestFullDiskDoesNotStick runs the server on a real, small tmpfs and fills
// it: mutations are refused (503, or ambiguous once something may have
// run) and never answered with a stored 500, /health/ready answers 503, a
// create leaves no session directory; once space is back readiness
// recovers without a restart, the refused key runs exactly once, and new
// requests work.
func TestFullDiskDoesNotStick(t *testing.T) {
	mnt := fullfs.Mount(t, 32<<20)
	s := start(t, filepath.Join(mnt, "data"))
	id := s.create().SessionID
	if r := s.send(id, "before"); r.Status != 200 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	ready := func() int { return s.do("GET", "/health/ready", "").Status }
	if got := ready(); got != 204 {
		t.Fatalf("ready = %d", got)
	}
	sessionsDir := filepath.Join(s.DataDir, "sessions")
	dirsBefore := sessionDirs(t, sessionsDir)

	filler := fullfs.Fill(t, mnt)
	big := strings.Repeat("x", 512<<10)
	body, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: big}})
	const k = "full-disk-key"
	r := s.do("POST", "/v1/sessions/"+id+"/messages", string(body), "Idempotency-Key", k)
	first := r.apiError(t)
	switch {
	case r.Status == 503 && first.Code == api.CodeOverloaded:
	case r.Status == 500 && first.Code == api.CodeAmbiguous:
	default:
		t.Fatalf("send on a full disk = %d %s, want 503 overloaded or 500 ambiguous", r.Status, r.Body)
	}
	if got := ready(); got != 503 {
		t.Errorf("ready on a full disk = %d, want 503", got)
	}
	if r := s.do("POST", "/v1/sessions", createBody, "Idempotency-Key", key()); r.Status == 200 {
		t.Errorf("create on a full disk = %d", r.Status)
	}
	if got := sessionDirs(t, sessionsDir); len(got) != len(dirsBefore) {
		t.Errorf("session directories %v after a failed create, want %v", got, dirsBefore)
	}

	filler.Free(t)
	deadline := time.Now().Add(10 * time.Second)
	for ready() != 204 {
		if time.Now().After(deadline) {
			t.Fatalf("ready stays %d after space came back\n%s", ready(), s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r = s.do("POST", "/v1/sessions/"+id+"/messages", string(body), "Idempotency-Key", k)
	if first.Code == api.CodeAmbiguous {
		if e := r.apiError(t); r.Status != 500 || e.Code != api.CodeAmbiguous {
			t.Fatalf("retry of an ambiguous key = %d %s, want ambiguous again", r.Status, r.Body)
		}
	} else if r.Status != 200 {
		t.Fatalf("retry of the refused key after space came back = %d %s, want it to run", r.Status, r.Body)
	}
	if again := s.do("POST", "/v1/sessions/"+id+"/messages", string(body), "Idempotency-Key", k); again.Status != r.Status {
		t.Fatalf("second retry = %d, first retry %d", again.Status, r.Status)
	}
	if r := s.send(id, "after"); r.Status != 200 {
		t.Fatalf("send after space came back = %d %s", r.Status, r.Body)
	}
	started := 0
	for _, ev := range s.events(id) {
		if ev.EventType == "turn_started" && strings.Contains(string(ev.Data), big[:64]) {
			started++
		}
		if ev.EventType == "turn_failed" && strings.Contains(string(ev.Data), "restart") {
			t.Errorf("a turn the full disk failed blames a restart: %s", ev.Data)
		}
	}
	if started > 1 {
		t.Errorf("the refused message started %d turns", started)
	}
	if got := sessionDirs(t, sessionsDir); len(got) != len(dirsBefore) {
		t.Errorf("session directories %v, want %v", got, dirsBefore)
	}
}

func sessionDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}
