package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// endableStore is a MemStore whose subscriptions the test can end, as a
// failed journal write ends them.
type endableStore struct {
	*journal.MemStore
	mu    sync.Mutex
	feeds []*journal.Feed
}

func (s *endableStore) Subscribe(ctx context.Context, id string, after uint64, backlog int) (*journal.Subscription, error) {
	inner, err := s.MemStore.Subscribe(ctx, id, after, backlog)
	if err != nil {
		return nil, err
	}
	read := func(ctx context.Context, after uint64) ([]journal.Record, error) {
		return s.MemStore.Read(ctx, id, after, 0, 0)
	}
	fd := journal.NewFeed(id, after, after+1, backlog, read, inner.Close)
	go func() {
		for {
			r, err := inner.Next(context.Background())
			if err != nil {
				fd.End(err)
				return
			}
			fd.Push([]journal.Record{r})
		}
	}()
	s.mu.Lock()
	s.feeds = append(s.feeds, fd)
	s.mu.Unlock()
	return fd.Subscription(), nil
}

func (s *endableStore) endAll(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fd := range s.feeds {
		fd.End(err)
	}
	s.feeds = nil
}

// A session whose subscription ended (a failed journal write, after which
// the session recovers and commits again) still has its later commits
// followed by a stream opened afterwards, even while a stream of the old
// subscription is still finishing a write to a stalled reader.
func TestStreamAfterFeedEndedFollowsCommits(t *testing.T) {
	store := &endableStore{MemStore: journal.NewMemStore()}
	eng, err := session.New(session.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	req, err := idem.Open(filepath.Join(t.TempDir(), "requests.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Engine: eng, Requests: idem.FileRequests(req), Token: testToken, MaxLiveBacklog: 1000})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	hs.Listener = sndbufListener{hs.Listener.(*net.TCPListener), 8 << 10}
	hs.Start()
	t.Cleanup(func() {
		srv.Drain()
		srv.CloseStreams()
		hs.Close()
		req.Close()
	})
	f := &fixture{t: t, srv: srv, url: hs.URL}
	sid := f.create("c").SessionID
	openRaw(t, f, sid, 4<<10) // never read
	waitLive(t, f)
	big := strings.Repeat("z", 256<<10)
	for i := range 2 {
		if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"`+big+`"}}`, "Idempotency-Key", fmt.Sprint("m", i)); st != 200 {
			t.Fatalf("send = %d %s", st, b)
		}
	}
	store.endAll(errors.New("write failed"))
	time.Sleep(100 * time.Millisecond)

	last := allSequences(t, f, sid)
	req2, _ := http.NewRequest("GET", fmt.Sprint(f.url, "/v1/sessions/", sid, "/events?after=", last[len(last)-1]), nil)
	req2.Header.Set("Authorization", "Bearer "+testToken)
	req2.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	seen := make(chan string, 1)
	go readFrames(resp.Body, func(fr sseFrame) bool {
		if fr.hasID {
			seen <- fr.event
			return false
		}
		return true
	})
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", "later"); st != 200 {
		t.Fatalf("send = %d %s", st, b)
	}
	select {
	case ev := <-seen:
		if ev != api.KindTurnStarted {
			t.Fatalf("first event %s", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream never got the later turn's events")
	}
}
