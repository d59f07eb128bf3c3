package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestEvictIdleSessions: beyond MaxLoadedSessions idle sessions are
// dropped from memory and come back intact from disk.
func TestEvictIdleSessions(t *testing.T) {
	const max, openFiles, n = 8, 2, 200
	fs := openT(t, t.TempDir(), &Options{MaxLoadedSessions: max, MaxOpenFiles: openFiles})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if err := fs.Append(bg, fmt.Sprint("s", i), 1, numbered(1, 3)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// Sessions whose segment the writer still holds open may stay too.
	if l := fs.Stats().Loaded; l > max+openFiles {
		t.Fatalf("%d sessions loaded, bound is %d (+%d open handles)", l, max, openFiles)
	}
	for i := range n {
		id := fmt.Sprint("s", i)
		rs, err := fs.Read(bg, id, 0, 0, 0)
		if err != nil || len(rs) != 3 || string(rs[2].Data) != `{"n":3}` {
			t.Fatalf("%s after eviction: %d records, %v", id, len(rs), err)
		}
		if err := fs.Append(bg, id, 3, numbered(4, 1)); !errors.Is(err, ErrConflict) {
			t.Fatalf("%s: stale Append = %v, want ErrConflict", id, err)
		}
		if err := fs.Append(bg, id, 4, numbered(4, 1)); err != nil {
			t.Fatalf("%s: Append after eviction = %v", id, err)
		}
	}
	if l := fs.Stats().Loaded; l > max+openFiles {
		t.Fatalf("%d sessions loaded after reading all, bound is %d", l, max)
	}
}

// TestEvictKeepsSubscribed: a session with a subscription stays loaded and
// keeps delivering while many others come and go.
func TestEvictKeepsSubscribed(t *testing.T) {
	fs := openT(t, t.TempDir(), &Options{MaxLoadedSessions: 2, MaxOpenFiles: 1})
	if err := fs.Append(bg, "sub", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Subscribe(bg, "sub", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range 50 {
		if err := fs.Append(bg, fmt.Sprint("o", i), 1, numbered(1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Append(bg, "sub", 2, numbered(2, 1)); err != nil {
		t.Fatal(err)
	}
	if r, err := sub.Next(bg); err != nil || r.Sequence != 2 {
		t.Fatalf("subscription after eviction pressure = %+v, %v", r, err)
	}
	fs.mu.Lock()
	_, loaded := fs.sessions["sub"]
	fs.mu.Unlock()
	if !loaded {
		t.Fatal("subscribed session was evicted")
	}
}

// TestEvictConcurrent hammers a tiny bound with appends, reads, checkpoints
// and deletes from many goroutines; every session must stay dense.
func TestEvictConcurrent(t *testing.T) {
	fs := openT(t, t.TempDir(), &Options{MaxLoadedSessions: 3, MaxOpenFiles: 2})
	const sessions, workers, ops = 12, 8, 60
	var mu [sessions]sync.Mutex // one appender per session at a time
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range ops {
				i := rng.IntN(sessions)
				id := fmt.Sprint("c", i)
				switch op := rng.IntN(10); {
				case op < 6:
					mu[i].Lock()
					next, err := fs.Next(bg, id)
					if err == nil {
						err = fs.Append(bg, id, next, numbered(int(next), 1+rng.IntN(3)))
					}
					mu[i].Unlock()
					if err != nil {
						t.Error(err)
						return
					}
				case op < 9:
					rs, err := fs.Read(bg, id, 0, 0, 0)
					if err != nil {
						t.Error(err)
						return
					}
					for k, r := range rs {
						if r.Sequence != uint64(k+1) || string(r.Data) != fmt.Sprintf(`{"n":%d}`, k+1) {
							t.Errorf("%s record %d = %+v", id, k, r)
							return
						}
					}
				default:
					mu[i].Lock()
					next, err := fs.Next(bg, id)
					if err == nil && next > 1 {
						err = fs.WriteCheckpoint(bg, id, next-1, []byte("x"))
					}
					mu[i].Unlock()
					if err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if l := fs.Stats().Loaded; l > 3+2 {
		t.Fatalf("%d sessions loaded, bound is 3 (+2 open handles)", l)
	}
}

// TestPagingKeepsSessionLoaded: a reader paging through a session is not
// made to open it from disk again for every page when every other loaded
// session is held (here by a subscription), and the session still goes
// once another one is used.
func TestPagingKeepsSessionLoaded(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "long", 500, nil)
	fs := openT(t, dir, &Options{MaxLoadedSessions: 1})
	if err := fs.Append(bg, "held", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Subscribe(bg, "held", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	before := fs.Stats().Recoveries
	after, pages := uint64(0), 0
	for {
		page, err := fs.Read(bg, "long", after, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for i, r := range page {
			if r.Sequence != after+uint64(i)+1 {
				t.Fatalf("page %d: record %d has sequence %d", pages, i, r.Sequence)
			}
		}
		after = page[len(page)-1].Sequence
		pages++
	}
	if after != 500 || pages != 50 {
		t.Fatalf("read through %d in %d pages, want 500 in 50", after, pages)
	}
	if n := fs.Stats().Recoveries - before; n != 1 {
		t.Fatalf("%d recoveries of a session read in 50 pages, want 1", n)
	}
	// The bound still holds once another session is used: "long" goes,
	// and its next read opens it from disk.
	if err := fs.Append(bg, "other", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	before = fs.Stats().Recoveries
	if page, err := fs.Read(bg, "long", 499, 0, 0); err != nil || len(page) != 1 {
		t.Fatalf("Read after another session = %d records, %v", len(page), err)
	}
	if n := fs.Stats().Recoveries - before; n != 1 {
		t.Fatalf("%d recoveries of an evicted session, want 1", n)
	}
}
