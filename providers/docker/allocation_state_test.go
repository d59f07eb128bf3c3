package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// fakeEngine stands in for the Docker Engine API and records every request
// it receives. It reports one container and one volume labelled with
// binding (what an interrupted allocation may have left behind) to a list
// filtered on that binding, accepts their removal, and refuses everything
// else.
type fakeEngine struct {
	srv      *httptest.Server
	instance string // set once the provider is known
	binding  string
	leftover string // name of the leftover container and volume

	mu       sync.Mutex
	requests []string // "METHOD path", in order
}

func newFakeEngine(t *testing.T, binding, leftover string) *fakeEngine {
	t.Helper()
	e := &fakeEngine{binding: binding, leftover: leftover}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

// client is an Engine client of the fake, with a fixed API version so that
// it sends no version negotiation of its own.
func (e *fakeEngine) client(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+e.srv.Listener.Addr().String()), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func (e *fakeEngine) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

// selectsBinding reports whether a list request's filters name the
// provider, its instance and the binding.
func (e *fakeEngine) selectsBinding(r *http.Request) bool {
	var f map[string]map[string]bool
	if err := json.Unmarshal([]byte(r.URL.Query().Get("filters")), &f); err != nil {
		return false
	}
	e.mu.Lock()
	instance := e.instance
	e.mu.Unlock()
	l := f["label"]
	return l[LabelProvider+"="+ProviderName] && l[LabelInstance+"="+instance] && l[LabelBinding+"="+e.binding]
}

func (e *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.requests = append(e.requests, r.Method+" "+r.URL.Path)
	e.mu.Unlock()
	path := r.URL.Path
	if i := strings.Index(path[1:], "/"); strings.HasPrefix(path, "/v1.") && i > 0 {
		path = path[i+1:]
	}
	w.Header().Set("Content-Type", "application/json")
	e.mu.Lock()
	labels := map[string]string{LabelProvider: ProviderName, LabelInstance: e.instance, LabelBinding: e.binding}
	e.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && path == "/containers/json":
		list := []any{}
		if e.selectsBinding(r) {
			list = append(list, map[string]any{"Id": "leftover-container-id", "Names": []string{"/" + e.leftover}, "Labels": labels})
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.Method == http.MethodGet && path == "/volumes":
		list := []any{}
		if e.selectsBinding(r) {
			list = append(list, map[string]any{"Name": e.leftover, "Driver": "local", "Labels": labels})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Volumes": list})
	case r.Method == http.MethodDelete && (path == "/containers/leftover-container-id" || path == "/volumes/"+e.leftover):
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, `{"message":"the fake Engine does not serve %s %s"}`, r.Method, r.URL.Path)
	}
}

// An execute on a binding whose recorded phase is allocating (a provider
// stopped in the middle of its allocation) answers allocation_unknown, and
// one whose phase is failed answers allocation_failed, before and after a
// restart, without a single request to the Engine: nothing is retried or
// re-created. Teardown then sweeps what the binding may have left and
// removes its state.
func TestRecordedAllocationStateIsNeverRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phase, code, recorded string
	}{
		{phaseAllocating, codeAllocationUnknown, ""},
		{phaseFailed, envapi.CodeAllocationFailed, "create container: no space left on device"},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			t.Parallel()
			stateDir := t.TempDir()
			c := envtest.NewCommands("recorded-"+tc.phase, "box")
			c.Brain = envtest.NewBrain(t)
			key := bindingKey(c)

			// The state the provider commits for the binding, written by
			// its own store.
			store, err := openStateStore(stateDir)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			st := &bindingState{
				Key: key, SessionID: c.Session, Environment: c.Environment, BindingSequence: 1,
				Resource: newResourceID(), Profile: DefaultProfileName,
				ImageID: "sha256:" + strings.Repeat("ab", 32),
				Phase:   tc.phase, Error: tc.recorded, CreatedAt: now, UpdatedAt: now,
			}
			if err := store.create(st); err != nil {
				t.Fatal(err)
			}
			// Every execute must leave the recorded state as it is.
			want := *st

			engine := newFakeEngine(t, key, st.resourceName())
			cli := engine.client(t)
			start := func() string {
				t.Helper()
				p, err := New(Config{Profiles: Profiles{DefaultProfileName: {Image: "brain-docker-test:busybox"}}, StateDir: stateDir, Client: cli})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				engine.mu.Lock()
				engine.instance = p.Instance()
				engine.mu.Unlock()
				srv := httptest.NewServer(p.Handler(testToken))
				t.Cleanup(srv.Close)
				return srv.URL
			}
			post := func(url string, cmd envapi.Command) envapi.Receipt {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				status, body, resp, err := envtest.Post(ctx, nil, url, testToken, cmd)
				if err != nil || status != http.StatusOK || resp == nil {
					t.Fatalf("POST %s: status %d, %v: %s", cmd.Operation.Request.Type, status, err, body)
				}
				return resp.Receipt
			}
			execute := func(url, what string) {
				t.Helper()
				r := post(url, c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo hello"}), nil))
				if r.Type != envapi.ReceiptFailure || r.Code != tc.code || r.Retryable {
					t.Fatalf("%s: receipt = %+v, want a failure %s that is not retryable", what, r, tc.code)
				}
				if tc.recorded != "" && !strings.Contains(r.Message, tc.recorded) {
					t.Fatalf("%s: message %q does not carry the recorded error %q", what, r.Message, tc.recorded)
				}
				if got := engine.seen(); len(got) != 0 {
					t.Fatalf("%s: the Engine received %d request(s), want none: %v", what, len(got), got)
				}
				got, ok, err := store.get(key)
				if err != nil || !ok {
					t.Fatalf("%s: state: %v %v", what, ok, err)
				}
				if *got != want {
					t.Fatalf("%s: state changed to %+v, want %+v", what, *got, want)
				}
			}

			url := start()
			execute(url, "first execute")
			execute(url, "second execute")
			url = start() // a restart on the same state directory
			execute(url, "execute after a restart")
			execute(url, "second execute after a restart")

			if r := post(url, c.Teardown()); r.Type != envapi.ReceiptAccepted {
				t.Fatalf("teardown = %+v, want accepted", r)
			}
			wantRequests := []string{
				"GET /v1.41/containers/json",
				"DELETE /v1.41/containers/leftover-container-id",
				"GET /v1.41/volumes",
				"DELETE /v1.41/volumes/" + st.resourceName(),
			}
			if got := engine.seen(); strings.Join(got, "\n") != strings.Join(wantRequests, "\n") {
				t.Fatalf("teardown sent %q, want %q", got, wantRequests)
			}
			if got, ok, err := store.get(key); err != nil || ok {
				t.Fatalf("state after teardown = %+v, %v, %v; want none", got, ok, err)
			}
			// Torn down, the binding answers unavailable, also to a
			// provider restarted on the same state directory.
			failure(t, post(url, c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo hello"}), nil)), envapi.CodeUnavailable)
			url = start()
			failure(t, post(url, c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo hello"}), nil)), envapi.CodeUnavailable)
			if got := engine.seen(); len(got) != len(wantRequests) {
				t.Fatalf("the Engine received %v after the teardown", got[len(wantRequests):])
			}
		})
	}
}
