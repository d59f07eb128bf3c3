package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Without a token the server answers only requests that name a loopback
// host: a page a browser loaded from another name that DNS then pointed
// at the loopback address (DNS rebinding) is refused, while requests to
// localhost and the loopback addresses are served.
func TestNoTokenServesLoopbackHostsOnly(t *testing.T) {
	eng, err := session.New(session.Config{Store: journal.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := idem.Open(filepath.Join(t.TempDir(), "requests.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Engine: eng, Requests: idem.FileRequests(reqs)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	port := hs.URL[strings.LastIndex(hs.URL, ":"):]
	for _, c := range []struct {
		host string
		want int
	}{
		{"127.0.0.1" + port, 200},
		{"localhost" + port, 200},
		{"LOCALHOST.", 200},
		{"app.localhost" + port, 200},
		{"[::1]" + port, 200},
		{"127.8.9.10", 200},
		{"attacker.example" + port, 401},
		{"attacker.example", 401},
		{"10.0.0.1" + port, 401},
		{"localhost.attacker.example", 401},
	} {
		req, _ := http.NewRequest("GET", hs.URL+"/v1/sessions", nil)
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %q: %d %s, want %d", c.host, resp.StatusCode, b, c.want)
		}
	}
}
