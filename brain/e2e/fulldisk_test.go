package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/internal/fullfs"
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

// An async submission's claim and answer ride the commit of its
// turn_started record: on a full disk that commit fails, nothing of the
// submission is durable, so it is refused 503 (never ambiguous, never a
// stored answer); once space is back the same key runs exactly once and
// its 202 is replayed, also after a restart.
func TestFullDiskAsyncSubmission(t *testing.T) {
	mnt := fullfs.Mount(t, 32<<20)
	s := start(t, filepath.Join(mnt, "data"))
	id := s.create().SessionID
	filler := fullfs.Fill(t, mnt)
	big := strings.Repeat("y", 512<<10)
	body, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: big}})
	const k = "full-disk-async-key"
	submit := func(s *server) reply {
		return s.do("POST", "/v1/sessions/"+id+"/messages", string(body), "Idempotency-Key", k, "Prefer", "respond-async")
	}
	if r := submit(s); r.Status != 503 || r.apiError(t).Code != api.CodeOverloaded {
		t.Fatalf("async submission on a full disk = %d %s, want 503 overloaded", r.Status, r.Body)
	}
	filler.Free(t)
	deadline := time.Now().Add(10 * time.Second)
	for s.do("GET", "/health/ready", "").Status != 204 {
		if time.Now().After(deadline) {
			t.Fatalf("not ready after space came back\n%s", s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := submit(s)
	var seq uint64
	if r.Status != 202 || json.Unmarshal(r.Body, &seq) != nil || seq == 0 {
		t.Fatalf("retry of the refused key after space came back = %d %s, want 202", r.Status, r.Body)
	}
	if again := submit(s); again.Status != 202 || string(again.Body) != string(r.Body) {
		t.Fatalf("second retry = %d %s, want 202 %s", again.Status, again.Body, r.Body)
	}
	s.stop()
	s2 := start(t, s.DataDir)
	if again := submit(s2); again.Status != 202 || string(again.Body) != string(r.Body) {
		t.Fatalf("retry after a restart = %d %s, want 202 %s", again.Status, again.Body, r.Body)
	}
	var turns []uint64
	for _, ev := range s2.events(id) {
		if ev.EventType == "turn_started" && strings.Contains(string(ev.Data), big[:64]) {
			turns = append(turns, ev.Sequence)
		}
	}
	if len(turns) != 1 || turns[0] != seq {
		t.Fatalf("the message started turns at %v, want one at %d", turns, seq)
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
