package brain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// recorder is an environment/v1 provider that accepts every operation and
// keeps the commands it received.
type recorder struct {
	mu   sync.Mutex
	cmds []envapi.Command
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var cmd envapi.Command
	if err := json.NewDecoder(req.Body).Decode(&cmd); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.cmds = append(r.cmds, cmd)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"contract":"environment/v1","sequence":%d,"receipt":{"type":"accepted"}}`, cmd.Operation.Sequence)
}

// serve runs srv on a loopback listener until the test ends.
func serve(t *testing.T, srv *brain.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve after its context ended: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func setupReporter(t *testing.T, c *client.Client, p *recorder) string {
	t.Helper()
	sess, err := c.Sessions.Create(context.Background(), api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: "box"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Summary.Status != api.StatusIdle {
		t.Fatalf("create: status %s", sess.Summary.Status)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.cmds) != 1 || p.cmds[0].Operation.Reporter == nil {
		t.Fatalf("provider received %+v, want one setup with a reporter grant", p.cmds)
	}
	return p.cmds[0].Operation.Reporter.URL
}

// TestPublicURLReachesEnvironments checks that the reporter and callback
// URLs handed to providers start with Config.PublicURL, and default to the
// listener's address when it is empty.
func TestPublicURLReachesEnvironments(t *testing.T) {
	p := &recorder{}
	prov := httptest.NewServer(p)
	defer prov.Close()
	envs := brain.Environments{Routes: map[string]brain.EnvironmentRoute{"box": {Endpoint: prov.URL}}}

	srv, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), PublicURL: "https://brain.example:8443/", Environments: envs})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, srv)
	c, err := client.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := setupReporter(t, c, p); !strings.HasPrefix(got, "https://brain.example:8443/v1/sessions/") {
		t.Errorf("reporter URL %s, want it under the public URL", got)
	}

	p.cmds = nil
	srv2, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), Environments: envs})
	if err != nil {
		t.Fatal(err)
	}
	url2 := serve(t, srv2)
	c2, err := client.New(url2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := setupReporter(t, c2, p); !strings.HasPrefix(got, url2+"/v1/sessions/") {
		t.Errorf("reporter URL %s, want it under the listener's URL %s", got, url2)
	}
	if srv2.PublicURL() != url2 {
		t.Errorf("PublicURL() = %q, want %q", srv2.PublicURL(), url2)
	}
}

// TestTokenFile checks that an empty Token with a TokenFile generates a
// token once, saves it with mode 0600, requires it, and reuses it.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "operator.token")
	open := func() (*brain.Server, string, bool) {
		srv, err := brain.New(context.Background(), brain.Config{DataDir: dir, TokenFile: path})
		if err != nil {
			t.Fatal(err)
		}
		tok, gen := srv.Token()
		return srv, tok, gen
	}
	srv, tok, gen := open()
	if !gen || !strings.HasPrefix(tok, "brain_") {
		t.Fatalf("first start: token %q generated %v", tok, gen)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	hs := httptest.NewServer(srv.Handler())
	resp, err := http.Get(hs.URL + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", resp.StatusCode)
	}
	hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	srv, again, gen := open()
	defer srv.Close(context.Background())
	if gen || again != tok {
		t.Errorf("second start: token %q generated %v, want the saved %q", again, gen, tok)
	}
}

// TestTokenFileReadableByOthersRefused: a saved operator token in a file
// that others may read (a copy restored without its mode) is not served:
// New fails, naming the file and how to fix it, without the token.
func TestTokenFileReadableByOthersRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "operator.token")
	srv, err := brain.New(context.Background(), brain.Config{DataDir: dir, TokenFile: path})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := srv.Token()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err = brain.New(context.Background(), brain.Config{DataDir: dir, TokenFile: path})
	if err == nil {
		srv.Close(context.Background())
		t.Fatal("a token file others may read was served")
	}
	if !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), tok) {
		t.Fatalf("error %q: want the file and chmod 600 named, and no token", err)
	}
	// Once only its owner may read it, the saved token is served again.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err = brain.New(context.Background(), brain.Config{DataDir: dir, TokenFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	if again, gen := srv.Token(); gen || again != tok {
		t.Fatalf("after chmod 600: token %q generated %v, want the saved one", again, gen)
	}
}
