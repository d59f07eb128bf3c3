package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// unriding is a requests store whose claims cannot ride the journal (as a
// database's): the file store without its ClaimRiding.
type unriding struct{ idem.Requests }

// On a store that cannot ride the journal, an async submission's answer
// is sent before its record in the requests log is durable; a process
// that ends before then finds the answer again in the journal (the
// hint), and only when the turn was admitted.
func TestAsyncAnswerDerivedFromJournal(t *testing.T) {
	store := journal.NewMemStore()
	eng, err := session.New(session.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "requests.log")
	reqs, err := idem.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Engine: eng, Requests: unriding{idem.FileRequests(reqs)}, Token: testToken, NextSequence: store.Next})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	f := &fixture{t: t, srv: srv, url: hs.URL}
	sid := f.create("c").SessionID
	before, _ := os.Stat(path)
	msg := `{"input":{"message":"hi"}}`
	st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", msg, "Idempotency-Key", "m", "Prefer", "respond-async")
	if st != 202 {
		t.Fatalf("async = %d %s", st, b)
	}
	// The log as a crash right after sending would leave it: the claim
	// (it was flushed before the turn was admitted) without the answer.
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	answerFrame := 8 + 13 + len(ScopeSendAsync) + len("m") + 6 + len(b)
	claimOnly := log[:len(log)-answerFrame]
	if int64(len(claimOnly)) <= before.Size() {
		t.Fatalf("log of %d bytes does not hold the claim after %d", len(log), before.Size())
	}
	ctx := context.Background()
	d := idem.Digest([]byte(ScopeSendAsync), []byte("POST"), []byte("/v1/sessions/"+sid+"/messages"), []byte(msg))
	reopen := func(e *session.Engine) (*idem.Answer, error) {
		p := filepath.Join(t.TempDir(), "requests.log")
		if err := os.WriteFile(p, claimOnly, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := idem.Open(p, &idem.Options{Derive: Derive(e)})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, a, err := r.Claim(ctx, ScopeSendAsync, "m", d)
		return a, err
	}
	if a, err := reopen(eng); err != nil || a == nil || a.Status != 202 || string(a.Body) != string(b) {
		t.Fatalf("derived answer = %+v, %v; want 202 %s", a, err, b)
	}
	// A journal without the turn: the claim stays ambiguous.
	other, err := session.New(session.Config{Store: journal.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reopen(other); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("claim without its turn = %v, want ErrAmbiguous", err)
	}
	srv.Drain()
	srv.CloseStreams()
	reqs.Close()
}

// Concurrent sync and async sends and deletes of one session pass the
// gate: every request is answered and no gate is left behind.
func TestGateUnderConcurrency(t *testing.T) {
	f := newFixture(t, Options{})
	sid := f.create("c").SessionID
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "k" + jsonNum(uint64(i))
			var st int
			var b []byte
			switch i % 3 {
			case 0:
				st, _, b = f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", key, "Prefer", "respond-async")
			case 1:
				st, _, b = f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", key)
			default:
				st, _, b = f.do("GET", "/v1/sessions/"+sid, "")
			}
			if st != 200 && st != 202 && st != 409 {
				t.Errorf("request %d = %d %s", i, st, b)
			}
			if st == 202 {
				var seq uint64
				if json.Unmarshal(b, &seq) != nil || seq == 0 {
					t.Errorf("async body %s", b)
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.srv.gmu.Lock()
		n := len(f.srv.gates)
		f.srv.gmu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d gates left", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, _, b := f.do("DELETE", "/v1/sessions/"+sid, "", "Idempotency-Key", "d"); st != 204 && st != 409 {
		t.Fatalf("delete = %d %s", st, b)
	}
}
