package docker

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// lateCreateEngine relays the Engine at engineHost, and holds a request
// to create a container whose name ends in suffix until its client gives
// up on it or hold has passed, then passes it on all the same, as the
// Engine carries out a create whose client has gone. forwarded is closed
// once the Engine has answered that create.
func lateCreateEngine(t *testing.T, engineHost, suffix string, hold time.Duration) (host string, forwarded <-chan struct{}) {
	t.Helper()
	u, err := url.Parse(engineHost)
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the Engine is not on a unix socket (%s)", engineHost)
	}
	transport := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", u.Path)
	}}
	relay := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: transport,
	}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/containers/create") || !strings.HasSuffix(r.URL.Query().Get("name"), suffix) {
			relay.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("relay: read the create: %v", err)
			return
		}
		select {
		case <-r.Context().Done():
		case <-time.After(hold):
		}
		out := r.Clone(context.Background())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host = "http", "docker"
		out.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := transport.RoundTrip(out)
		if err != nil {
			t.Errorf("relay: pass the create on: %v", err)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		select {
		case <-done:
		default:
			close(done)
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return "tcp://" + srv.Listener.Addr().String(), done
}

// A provider that stops while the Engine has not yet answered the create
// of the container that gives an earlier version's workspace to the user
// leaves no such container behind, even though the Engine makes it after
// the provider stopped asking: it would hold the workspace's volume, so
// that a teardown could not remove it, and the chown's name.
func TestStoppedChownLeavesNoContainer(t *testing.T) {
	t.Parallel()
	e := newEarlierBinding(t, manyFilesImage(t, "late-create"))
	cli, c, st := e.cli, e.c, e.st

	host, forwarded := lateCreateEngine(t, cli.DaemonHost(), "-chown", 3*time.Second)
	h := newHarnessWith(t, e.stateDir, relayClient(t, host), e.profiles)
	short := int64(100)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran >> log"}), &short))
	failure(t, r, envapi.CodeTimeout)
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case <-forwarded:
	case <-time.After(time.Minute):
		t.Fatal("the create of the chown container never reached the Engine")
	}
	if _, err := cli.ContainerInspect(context.Background(), st.resourceName()+"-chown"); err == nil {
		t.Errorf("the chown container %s-chown is left behind once the provider has stopped", st.resourceName())
	}
	h = e.provider(t)
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}
