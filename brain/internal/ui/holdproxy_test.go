package ui_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// holdProxy forwards requests to a Brain. A request that matches a rule
// set with hold (the one set last, of those that match) waits until the
// rule is released (or the request is given up), and is then forwarded,
// or answered with 503 if the rule says so. Event streams are forwarded
// as they arrive.
type holdProxy struct {
	url string

	mu    sync.Mutex
	rules []*holdRule
}

type holdRule struct {
	p        *holdProxy
	match    func(*http.Request) bool
	fail     bool
	lose     bool // the first request is forwarded and its answer lost
	release  chan struct{}
	held     int // requests that reached the rule
	answered int // requests answered
}

// waitHeld waits until a request reached the rule.
func (h *holdRule) waitHeld(t *testing.T) {
	t.Helper()
	h.waitFor(t, func() bool { return h.held > 0 }, "no request reached the rule")
}

// waitAnswered waits until a request the rule matched was answered.
func (h *holdRule) waitAnswered(t *testing.T) {
	t.Helper()
	h.waitFor(t, func() bool { return h.answered > 0 }, "no request the rule matched was answered")
}

func (h *holdRule) waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h.p.mu.Lock()
		ok := cond()
		h.p.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

func newHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // requests the page gives up
	p := &holdProxy{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		var rule *holdRule
		for _, h := range slices.Backward(p.rules) {
			if h.match(r) {
				rule = h
				h.held++
				break
			}
		}
		p.mu.Unlock()
		if rule != nil && rule.lose {
			p.mu.Lock()
			first := rule.held == 1
			p.mu.Unlock()
			if first {
				// Brain takes the request; its answer goes nowhere.
				rp.ServeHTTP(httptest.NewRecorder(), r)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadGateway)
				fmt.Fprint(w, `{"code":"unavailable","message":"the answer was lost"}`)
				return
			}
			rule = nil
		}
		if rule != nil {
			select {
			case <-rule.release:
			case <-r.Context().Done():
				return
			}
			defer func() {
				p.mu.Lock()
				rule.answered++
				p.mu.Unlock()
			}()
			if rule.fail {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"code":"unavailable","message":"the request was refused"}`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.mu.Lock()
		for _, h := range p.rules {
			select {
			case <-h.release:
			default:
				close(h.release)
			}
		}
		p.mu.Unlock()
		hs.CloseClientConnections()
		hs.Close()
	})
	p.url = hs.URL
	return p
}

// hold makes the requests that match wait; release lets them go on (and
// the ones that match afterwards pass at once).
func (p *holdProxy) hold(match func(*http.Request) bool, fail bool) (release func(), rule *holdRule) {
	h := &holdRule{p: p, match: match, fail: fail, release: make(chan struct{})}
	p.mu.Lock()
	p.rules = append(p.rules, h)
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(h.release) }) }, h
}

// loseFirst forwards the first request that matches to Brain and answers
// it 502, as a front whose connection to Brain broke after sending it
// does; the later ones pass.
func (p *holdProxy) loseFirst(match func(*http.Request) bool) *holdRule {
	h := &holdRule{p: p, match: match, lose: true, release: make(chan struct{})}
	p.mu.Lock()
	p.rules = append(p.rules, h)
	p.mu.Unlock()
	return h
}

// post matches the POST requests to path.
func post(path string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == path }
}
