package envbind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func testBinder(t *testing.T, cfg Config) *Binder {
	t.Helper()
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://127.0.0.1:1"
	}
	if cfg.KeyFile == "" && cfg.Key == nil {
		cfg.Key = make([]byte, keySize)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func op(url string, seq uint64) session.Operation {
	return session.Operation{
		Operation: envapi.Operation{SessionID: "ses_AAAAAAAAAAAAAAAAAAAA", Environment: "box", Sequence: seq,
			Request: envapi.Setup(nil), Binding: &envapi.EnvironmentRef{Name: "box", Sequence: 1}},
		Declaration: api.Environment{Name: "box", Driver: api.DriverHTTP, URL: url},
		Credential:  "cred",
	}
}

func TestEndpoints(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://env.example": true, "http://127.0.0.1:8080": true, "http://localhost:1": true, "http://[::1]:9": true,
		"http://192.0.2.1": false, "ftp://127.0.0.1": false, "https://u:p@env.example": false, "not a url": false, "": false,
		"https://env.example/v1 ": false, "https://env.example/a b": false, "https://env.example/v1?": false, "https://env.example/v1#": false,
	} {
		if err := checkEndpoint(raw); (err == nil) != ok {
			t.Errorf("checkEndpoint(%q) = %v", raw, err)
		}
	}
	routes := filepath.Join(t.TempDir(), "routes.json")
	_ = os.WriteFile(routes, []byte(`{"w":{"endpoint":"http://192.0.2.1","api_key":"sekrit-key"}}`), 0o600)
	_, err := New(Config{PublicURL: "http://127.0.0.1:1", Key: make([]byte, 32), RoutesFile: routes})
	if err == nil || strings.Contains(err.Error(), "sekrit-key") {
		t.Errorf("non-loopback route: %v", err)
	}
	_ = os.WriteFile(routes, []byte(`{"w":{"endpoint":"http://127.0.0.1:1","api_key":"sekrit-key","extra":1}}`), 0o600)
	if _, err := New(Config{PublicURL: "http://127.0.0.1:1", Key: make([]byte, 32), RoutesFile: routes}); err == nil || strings.Contains(err.Error(), "sekrit-key") {
		t.Errorf("unknown field in the routes file: %v", err)
	}
	if _, err := New(Config{PublicURL: "nope", Key: make([]byte, 32)}); err == nil {
		t.Error("bad PublicURL accepted")
	}
	if _, err := New(Config{PublicURL: "http://127.0.0.1:1"}); err == nil {
		t.Error("no key accepted")
	}
}

func TestTargets(t *testing.T) {
	b := testBinder(t, Config{Routes: map[string]Route{"ws": {Endpoint: "http://127.0.0.1:7", APIKey: "route"}}, BaseURL: "http://127.0.0.1:8", APIKey: "base"})
	for _, tc := range []struct {
		env            api.Environment
		endpoint, cred string
	}{
		{api.Environment{Driver: api.DriverHTTP, URL: "http://10.0.0.1:5"}, "http://10.0.0.1:5", "session"},
		{api.Environment{Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"ws"}`)}, "http://127.0.0.1:7", "route"},
		{api.Environment{Driver: api.DriverBrain}, "http://127.0.0.1:8", "base"},
	} {
		ep, cred, err := b.target(tc.env, "session")
		if err != nil || ep != tc.endpoint || cred != tc.cred {
			t.Errorf("%+v: %s %s %v", tc.env, ep, cred, err)
		}
	}
	if _, _, err := b.target(api.Environment{Driver: api.DriverHTTP, URL: "http://u:p@h"}, ""); err == nil {
		t.Error("userinfo URL accepted")
	}
	nob := testBinder(t, Config{})
	if err := nob.ValidateEnvironment(api.Environment{Driver: api.DriverBrain}); err == nil {
		t.Error("an unroutable driver validated")
	}
}

func TestKeyFileAndReporterTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta", KeyFileName)
	k1, err := loadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", st, err)
	}
	k2, err := loadKey(path)
	if err != nil || string(k1) != string(k2) {
		t.Fatal("key not stable across loads")
	}
	a := reporterToken(k1, "s", "env", 1)
	if a != reporterToken(k2, "s", "env", 1) || a == reporterToken(k1, "s", "env", 2) || a == reporterToken(k1, "s", "env2", 1) ||
		a == reporterToken(make([]byte, 32), "s", "env", 1) {
		t.Error("reporter tokens are not bound to key, session, environment and binding")
	}
	_ = os.WriteFile(path, []byte("short"), 0o600)
	if _, err := loadKey(path); err == nil {
		t.Error("a short key file was accepted")
	}
}

func TestGrants(t *testing.T) {
	g := newGrants()
	k := grantKey{"s", 3, false}
	tok := g.mint(k, bytes.Repeat([]byte{7}, keySize), 1)
	if len(tok) < 40 || !g.check(k, tok) || g.check(k, tok+"x") || g.check(grantKey{"s", 4, false}, tok) || g.check(grantKey{"s", 3, true}, tok) {
		t.Fatal("token check")
	}
	g.revoke(k)
	if g.check(k, tok) || g.len() != 0 {
		t.Fatal("revoked token still valid")
	}
}

// TestDelivery covers the answer checks and the send-once rule.
func TestDelivery(t *testing.T) {
	var hits atomic.Int64
	var mode atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil || r.URL.Path != "/v1/operations" || r.Header.Get("Authorization") != "Bearer cred" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		seq := cmd.Operation.Sequence
		switch mode.Load() {
		case "wrongseq":
			seq++
		case "huge":
			_, _ = w.Write([]byte(`{"contract":"environment/v1","sequence":1,"receipt":{"type":"result","output":"` + strings.Repeat("x", 2048) + `"}}`))
			return
		case "drop":
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			_ = conn.Close()
			return
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if cmd.Operation.Reporter == nil || !strings.HasSuffix(cmd.Operation.Reporter.URL, "/environments/box/1/events") {
			http.Error(w, "no reporter", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(seq, envapi.Accepted()))
	}))
	defer srv.Close()
	b := testBinder(t, Config{MaxResponseBytes: 1024})
	ctx := context.Background()
	mode.Store("ok")
	if r, err := b.Deliver(ctx, op(srv.URL, 1)); err != nil || r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v %v", r, err)
	}
	for m, invalid := range map[string]bool{"wrongseq": true, "huge": true, "500": false, "drop": false} {
		mode.Store(m)
		before := hits.Load()
		_, err := b.Deliver(ctx, op(srv.URL, 2))
		if err == nil || errors.Is(err, session.ErrInvalidReceipt) != invalid {
			t.Errorf("%s: %v", m, err)
		}
		if n := hits.Load() - before; n != 1 {
			t.Errorf("%s: the operation was sent %d times", m, n)
		}
		if strings.Contains(err.Error(), "cred") {
			t.Errorf("%s: error carries the credential: %v", m, err)
		}
	}
	srv.Close()
	if _, err := b.Deliver(ctx, op(srv.URL, 3)); err == nil || errors.Is(err, session.ErrInvalidReceipt) {
		t.Errorf("refused connection: %v", err)
	}
}

// TestTokensRevokedWhenClosed delivers an execute and its controller
// context and checks that each token dies when the engine closes its
// execution or context, and not before.
func TestTokensRevokedWhenClosed(t *testing.T) {
	var got envapi.Command
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"contract":"environment/v1","sequence":5,"receipt":{"type":"accepted"}}`)
	}))
	defer srv.Close()
	b := testBinder(t, Config{})
	o := op(srv.URL, 5)
	o.Request = envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, &envapi.Grant{Methods: envapi.ToolMethods()})
	o.Context = &envapi.Grant{Methods: envapi.ContextMethods()}
	callDone, ctxDone := make(chan struct{}), make(chan struct{})
	o.CallbackDone, o.ContextDone = callDone, ctxDone
	if _, err := b.Deliver(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	call, ctl := got.Operation.Request.Callback.Token, got.Operation.Context.Token
	if g, ok := b.Authorize(o.SessionID, 5, call); !ok || g.Controller {
		t.Fatalf("callback token: %+v %v", g, ok)
	}
	if g, ok := b.Authorize(o.SessionID, 5, ctl); !ok || !g.Controller {
		t.Fatalf("context token: %+v %v", g, ok)
	}
	waitGrants := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for b.LiveGrants() != want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := b.LiveGrants(); n != want {
			t.Fatalf("%d live tokens, want %d", n, want)
		}
	}
	close(ctxDone)
	waitGrants(1)
	if _, ok := b.Authorize(o.SessionID, 5, ctl); ok {
		t.Error("the context token outlived its context")
	}
	if _, ok := b.Authorize(o.SessionID, 5, call); !ok {
		t.Error("closing the context revoked the callback token")
	}
	close(callDone)
	waitGrants(0)
}

// TestRouteIsPinnedAtDeclaration: an operation whose current configuration
// names another route (an instance's or an update's "driver") still goes
// to the route its authorised declaration names, with that route's key;
// the other route's endpoint and key are never used.
func TestRouteIsPinnedAtDeclaration(t *testing.T) {
	serve := func(key string, hits *atomic.Int64) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			body, _ := io.ReadAll(r.Body)
			cmd, err := envapi.DecodeCommand(body)
			if err != nil || r.Header.Get("Authorization") != "Bearer "+key {
				http.Error(w, "bad", http.StatusUnauthorized)
				return
			}
			_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted()))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var hitsA, hitsB atomic.Int64
	a, bsrv := serve("key-a", &hitsA), serve("key-b", &hitsB)
	b := testBinder(t, Config{Routes: map[string]Route{"a": {Endpoint: a.URL, APIKey: "key-a"}, "b": {Endpoint: bsrv.URL, APIKey: "key-b"}}})
	authorized := api.Environment{Name: "tmpl", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"a"}`),
		Template: &api.EnvironmentTemplate{MaxInstances: 2}}
	o := session.Operation{
		Operation: envapi.Operation{SessionID: "ses_AAAAAAAAAAAAAAAAAAAA", Environment: "i1", Sequence: 4,
			Request: envapi.Setup(json.RawMessage(`{"driver":"b"}`)), Binding: &envapi.EnvironmentRef{Name: "i1", Sequence: 4},
			Configuration: json.RawMessage(`{"driver":"b"}`), Template: "tmpl"},
		Declaration: api.Environment{Name: "i1", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"b"}`)},
		Authorized:  authorized,
	}
	if r, err := b.Deliver(context.Background(), o); err != nil || r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v %v", r, err)
	}
	if hitsA.Load() != 1 || hitsB.Load() != 0 {
		t.Fatalf("route a got %d operations, route b %d; want 1 and 0", hitsA.Load(), hitsB.Load())
	}
}

// TestInvocationTokenEpoch: a token verifies on any Binder sharing the
// server key, for its own execution only, naming the epoch it was minted
// under; Authorize refuses it once the node's lease epoch changed.
func TestInvocationTokenEpoch(t *testing.T) {
	key := bytes.Repeat([]byte{9}, keySize)
	epoch := int64(4)
	owner, err := New(Config{Key: key, PublicURL: "http://127.0.0.1:1", Epoch: func(string) (int64, bool) { return epoch, true }})
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Config{Key: key, PublicURL: "http://127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := New(Config{Key: bytes.Repeat([]byte{8}, keySize), PublicURL: "http://127.0.0.1:3"})
	if err != nil {
		t.Fatal(err)
	}
	tok := owner.grants.mint(grantKey{"s", 5, false}, key, epoch)
	if ep, ok, err := other.VerifyInvocation("s", 5, tok); err != nil || !ok || ep != 4 {
		t.Fatalf("VerifyInvocation on another node = %d, %v, %v; want epoch 4", ep, ok, err)
	}
	damaged := []byte(tok)
	damaged[20] ^= 'A' ^ 'B'
	for _, c := range []struct {
		id  string
		seq uint64
		tok string
	}{{"s", 6, tok}, {"t", 5, tok}, {"s", 5, string(damaged)}, {"s", 5, ""}, {"s", 5, tok + "A"}} {
		if _, ok, _ := other.VerifyInvocation(c.id, c.seq, c.tok); ok {
			t.Errorf("VerifyInvocation(%s, %d, %q) = ok; only the execution's own, intact token verifies", c.id, c.seq, c.tok)
		}
	}
	if _, ok, _ := stranger.VerifyInvocation("s", 5, tok); ok {
		t.Error("a Binder with another server key verified the token")
	}
	if _, ok := owner.Authorize("s", 5, tok); !ok {
		t.Fatal("owner's Authorize of its live token failed")
	}
	if _, ok := other.Authorize("s", 5, tok); ok {
		t.Error("a node that did not mint the token authorized it as live")
	}
	epoch = 5 // a failover: the lease moved on
	if _, ok := owner.Authorize("s", 5, tok); ok {
		t.Error("a token minted under an earlier epoch was authorized")
	}
}

// FuzzInvocationToken: no input panics the token decoder, and only the
// token minted for an execution verifies for it.
func FuzzInvocationToken(f *testing.F) {
	key := bytes.Repeat([]byte{3}, keySize)
	k := grantKey{"s", 2, false}
	good := invocationToken(key, k, 7, make([]byte, nonceSize))
	f.Add(good)
	f.Add("")
	f.Add(good[:10])
	f.Fuzz(func(t *testing.T, tok string) {
		ep, ok := parseInvocation(key, k, tok)
		if ok && (tok != good || ep != 7) {
			t.Fatalf("parseInvocation(%q) = %d, true", tok, ep)
		}
	})
}
