package pgstore_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// relay is a TCP relay in front of a node, at the node's public URL:
// while cut is set it passes a request on to the node but drops the
// connection as soon as the node's answer starts, without relaying it.
type relay struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn // closed when the test ends
}

// newRelay starts a relay listening on addr.
func newRelay(t *testing.T, addr, target string) *relay {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	r.wg.Go(r.serve)
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() { r.pipe(c) })
	}
}

func (r *relay) pipe(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	defer up.Close()
	r.mu.Lock()
	r.conns = append(r.conns, c, up)
	r.mu.Unlock()
	go io.Copy(up, c)
	if r.cut.Load() {
		// The node answered: it carried the request out. Its answer is
		// lost on the way back.
		up.Read(make([]byte, 1))
		return
	}
	io.Copy(c, up)
}

// reservePort answers a loopback address on which a connection is
// refused, because a socket is bound to it but does not listen, until
// unreserve closes that socket: no other listener of the tests running
// meanwhile can take the port.
func reservePort(t *testing.T) (addr string, unreserve func()) {
	t.Helper()
	// Not inherited by the nodes the test starts, which would keep the
	// port bound after unreserve.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	var once sync.Once
	unreserve = func() { once.Do(func() { syscall.Close(fd) }) }
	t.Cleanup(unreserve)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)), unreserve
}

// postJSON posts a message to session id on base with an idempotency key
// and answers the status and the decoded error, if any.
func postJSON(t *testing.T, ctx context.Context, base, id, key, msg string) (int, api.ApiError, string) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	status, body, err := postRaw(ctx, hc, base, id, key, msg, false)
	if err != nil {
		t.Fatalf("message %q to %s: %v", msg, base, err)
	}
	var ae api.ApiError
	if status >= 400 {
		json.Unmarshal(body, &ae)
	}
	return status, ae, string(body)
}

// TestForwardAnswerLost: a write forwarded to the session's owner, which
// carries it out but whose answer is lost on the way back (the connection
// drops after the request was sent), is answered 500 ambiguous,
// retryable, never 503 "nothing was done". The same key sent again is
// answered the owner's recorded answer, and the turn ran once. A write
// that cannot reach the owner at all (connection refused) is answered
// 503 overloaded, and the owner never ran it.
func TestForwardAnswerLost(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	addr := freePort(t)
	public, unreserve := reservePort(t)
	a := serveNodeEnv(t, dbURL, keyFile, "BRAIN_LISTEN="+addr, "BRAIN_PUBLIC_URL=http://"+public, "BRAIN_LEASE_SECS=10")
	b := clusterNode(t, dbURL, keyFile, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ttl := int64(0) // A keeps the session, and its lease, between turns
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}

	// Nothing listens at A's public URL yet.
	status, ae, body := postJSON(t, ctx, b.url, s.ID, "refused", "refused")
	if status != http.StatusServiceUnavailable || ae.Code != api.CodeOverloaded {
		t.Fatalf("message the owner could not be reached for = %d %s, want 503 %s", status, body, api.CodeOverloaded)
	}

	unreserve()
	rl := newRelay(t, public, addr)
	rl.cut.Store(true)
	status, ae, body = postJSON(t, ctx, b.url, s.ID, "two", "two")
	if status != http.StatusInternalServerError || ae.Code != api.CodeAmbiguous || !ae.Retryable {
		t.Fatalf("message whose answer from the owner was lost = %d %s, want 500 %s (retryable)", status, body, api.CodeAmbiguous)
	}

	rl.cut.Store(false)
	status, _, body = postJSON(t, ctx, b.url, s.ID, "two", "two")
	if status != http.StatusOK {
		t.Fatalf("the same key sent again = %d %s, want the owner's answer", status, body)
	}
	tr, err := a.client(t).Sessions.Open(s.ID).Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := string(mustText(tr))
	if n := strings.Count(text, "echo: two"); n != 1 || strings.Contains(text, "refused") {
		t.Fatalf("transcript = %q, want the second turn once and nothing of the refused one", text)
	}
}

// TestForwardToKilledOwner kills the owner of a session (SIGKILL) while
// it runs a write forwarded to it: the caller is answered 500 ambiguous
// (the owner had the request and may have carried it out), not 503; the
// same key sent again, once another node took the session over, runs
// nothing twice: the tool's provider got its execute once.
func TestForwardToKilledOwner(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 2
	a, b := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	p := newHangProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := toolSession(t, ctx, a, p)
	type answer struct {
		status int
		ae     api.ApiError
		body   string
	}
	answered := make(chan answer, 1)
	go func() {
		hc := &http.Client{Timeout: 30 * time.Second}
		status, body, err := postRaw(ctx, hc, b.url, s.ID, "wait", waitTurn(), false)
		if err != nil {
			answered <- answer{body: err.Error()}
			return
		}
		var ae api.ApiError
		json.Unmarshal(body, &ae)
		answered <- answer{status, ae, string(body)}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Received(envapi.RequestExecute, "box")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the tool's execute never reached the provider")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	got := <-answered
	if got.status != http.StatusInternalServerError || got.ae.Code != api.CodeAmbiguous || !got.ae.Retryable {
		t.Fatalf("message whose owner was killed while running it = %d %s, want 500 %s (retryable)", got.status, got.body, api.CodeAmbiguous)
	}
	for killed := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		status, ae, body := postJSON(t, ctx, b.url, s.ID, "wait", waitTurn())
		if status == http.StatusServiceUnavailable && time.Since(killed) < 4*lease*time.Second {
			continue
		}
		if status == http.StatusOK || status == http.StatusInternalServerError && ae.Code == api.CodeAmbiguous {
			break
		}
		t.Fatalf("the same key sent again %v after the owner died = %d %s, want its outcome", time.Since(killed).Round(time.Millisecond), status, body)
	}
	if n := len(p.Received(envapi.RequestExecute, "box")); n != 1 {
		t.Fatalf("the provider got %d executes, want 1", n)
	}
}
