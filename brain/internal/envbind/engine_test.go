package envbind

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// provider serves environment/v1 on loopback, answering each operation
// with answer(request, the request's context).
func provider(t *testing.T, answer func(ctx context.Context, op envapi.Operation) envapi.Receipt) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, answer(r.Context(), cmd.Operation)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// engineOn opens an engine on a file journal that delivers through b.
func engineOn(t *testing.T, b *Binder) (*session.Engine, journal.Store) {
	t.Helper()
	store, err := journal.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := session.New(session.Config{Store: store, Environments: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = engine.Close(ctx)
		_ = store.Close()
	})
	return engine, store
}

// waitEvent answers the first public event of session id whose kind is
// one of kinds.
func waitEvent(t *testing.T, e *session.Engine, id string, kinds ...string) api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub, err := e.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %v: %v", kinds, err)
		}
		if f.Event != nil && slices.Contains(kinds, f.Event.EventType) {
			return *f.Event
		}
	}
}

// eventsOf answers the public events of kind in session id.
func eventsOf(t *testing.T, e *session.Engine, id, kind string) []api.Event {
	t.Helper()
	var out []api.Event
	after := uint64(0)
	for {
		page, err := e.Events(context.Background(), id, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if ev.EventType == kind {
				out = append(out, ev)
			}
		}
		if len(page.Events) == 0 || page.NextCursor == after {
			return out
		}
		after = page.NextCursor
	}
}

// readAll answers every record of session id, private ones included.
func readAll(t *testing.T, store journal.Store, id string) []journal.Record {
	t.Helper()
	var out []journal.Record
	for {
		recs, err := store.Read(context.Background(), id, uint64(len(out)), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			return out
		}
		out = append(out, recs...)
	}
}

// stringsOf answers every string of a JSON document, member names
// included, decoded.
func stringsOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var v any
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("record data %s: %v", raw, err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
