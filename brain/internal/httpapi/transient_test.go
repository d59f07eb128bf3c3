package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// faultyStore fails every Append with err while err is set.
type faultyStore struct {
	*journal.MemStore
	mu  sync.Mutex
	err error
}

func (f *faultyStore) set(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *faultyStore) Append(ctx context.Context, id string, next uint64, recs []journal.Record) error {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.MemStore.Append(ctx, id, next, recs)
}

// TestRetryableStorageFaultIsNeverTheAnswer: a create refused by durable
// storage (the append turned away: a full queue, a database that is
// down) answers 503 and leaves its key usable, so the same request runs
// once the fault passed; one whose append may have committed (its
// outcome unknown) leaves the key ambiguous. Neither 503 is recorded as
// the key's answer.
func TestRetryableStorageFaultIsNeverTheAnswer(t *testing.T) {
	store := &faultyStore{MemStore: journal.NewMemStore()}
	eng, err := session.New(session.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	req, err := idem.Open(filepath.Join(t.TempDir(), "requests.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Engine: eng, Requests: idem.FileRequests(req), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Drain(); srv.CloseStreams(); hs.Close(); req.Close() })
	f := &fixture{t: t, srv: srv, url: hs.URL}
	create := `{"model":{"provider":"scripted","name":"m"}}`

	for _, tc := range []struct {
		name      string
		fault     error
		retryCode int
		retryErr  string
	}{
		{"turned_away", fmt.Errorf("queue: %w", journal.ErrOverloaded), 200, ""},
		{"outcome_unknown", fmt.Errorf("commit: %w: %w", journal.ErrOutcomeUnknown, journal.ErrOverloaded), 500, api.CodeAmbiguous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := []string{"Idempotency-Key", "create-" + tc.name}
			store.set(tc.fault)
			code, _, body := f.do("POST", "/v1/sessions", create, key...)
			if code != 503 {
				t.Fatalf("create while storage fails = %d %s, want 503", code, body)
			}
			store.set(nil)
			code, _, body = f.do("POST", "/v1/sessions", create, key...)
			if code != tc.retryCode {
				t.Fatalf("retry once the fault passed = %d %s, want %d", code, body, tc.retryCode)
			}
			if tc.retryErr != "" {
				var e api.ApiError
				if err := json.Unmarshal(body, &e); err != nil || e.Code != tc.retryErr {
					t.Fatalf("retry answered %s, want code %s", body, tc.retryErr)
				}
			}
		})
	}
}
