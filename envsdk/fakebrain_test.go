package envsdk_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// fakeBrain records the callback calls a provider makes.
type fakeBrain struct {
	srv *httptest.Server

	mu       sync.Mutex
	calls    []envapi.ExecutionCall
	loseAck  map[string]bool // methods whose answer is dropped
	seq      uint64
	received chan string
}

func newFakeBrain(t *testing.T) *fakeBrain {
	b := &fakeBrain{loseAck: map[string]bool{}, seq: 100, received: make(chan string, 64)}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *fakeBrain) grant(methods ...string) *envapi.Grant {
	return &envapi.Grant{URL: b.srv.URL + "/call", Token: "cb-token", Methods: methods}
}

func (b *fakeBrain) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer cb-token" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	data, _ := io.ReadAll(r.Body)
	var c envapi.ExecutionCall
	if err := json.Unmarshal(data, &c); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.calls = append(b.calls, c)
	b.seq++
	seq := b.seq
	lose := b.loseAck[c.Method]
	b.mu.Unlock()
	b.received <- c.Method
	if lose {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	switch c.Method {
	case envapi.MethodKVRead:
		w.Write([]byte(`{"value":null}`))
	default:
		json.NewEncoder(w).Encode(seq)
	}
}

func (b *fakeBrain) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}
