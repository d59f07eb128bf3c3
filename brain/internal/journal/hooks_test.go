package journal_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// TestCommitHooks: OnDurable sees every appended record of its session
// once, after it is durable, and OnCommit counts them with a flush time.
func TestCommitHooks(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{}
	commits, records := 0, 0
	var syncs time.Duration
	s, err := journal.OpenFileStore(t.TempDir(), &journal.Options{
		OnDurable: func(session string, recs []journal.Record) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				seen[session] = append(seen[session], r.Kind+":"+string(r.Data))
			}
		},
		OnCommit: func(n int, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			commits++
			records += n
			syncs += d
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, id := range []string{"ses_aaaaaaaaaaaaaaaaaaaa", "ses_bbbbbbbbbbbbbbbbbbbb"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 20; i += 2 {
				recs := []journal.Record{{Sequence: i, Kind: "a", Data: json.RawMessage(`1`)}, {Sequence: i + 1, Kind: "b", Data: json.RawMessage(`2`)}}
				if err := s.Append(ctx, id, i, recs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for id, got := range seen {
		if len(got) != 20 || got[0] != "a:1" || got[1] != "b:2" {
			t.Errorf("%s: OnDurable saw %d records %v", id, len(got), got[:2])
		}
	}
	if len(seen) != 2 || records != 40 || commits == 0 || commits > 20 || syncs <= 0 {
		t.Errorf("sessions %d, OnCommit: %d commits of %d records, %v flushing", len(seen), commits, records, syncs)
	}
}
