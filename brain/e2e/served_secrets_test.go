package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Credentials of TestServedCredentialsNeverLeak, each distinct so that a
// hit names its source.
const (
	servedOperatorToken = "operator-SECRET-7d41c"
	servedSessionKey    = "sk-session-SECRET-31aa"
	servedOperatorKey   = "sk-operator-SECRET-58be"
	servedCredential    = "http-credential-SECRET-a90f"
	servedRouteKey      = "route-key-SECRET-66d2"
	servedOTLPHeader    = "otlp-header-SECRET-0b7e"
)

// TestServedCredentialsNeverLeak runs brain serve with debug logging and
// OTLP export to a local receiver, drives sessions that use every kind of
// credential (a session's model key and the operator's, sent to a model
// server on loopback that quotes them back in an error; an http
// environment's credential and a routed environment's api_key, whose
// providers quote them and their grant tokens; a host whose result quotes
// its token), then looks for each secret in the data directory, the
// server's stderr, the exported spans and records, /metrics and every
// HTTP answer.
func TestServedCredentialsNeverLeak(t *testing.T) {
	otlp := newOTLPReceiver(t)
	models := newKeyEchoModel(t)
	box := newQuotingProvider(t, servedCredential)
	routed := newQuotingProvider(t, servedRouteKey)
	dir := t.TempDir()
	routes := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routes, []byte(`{"routed":{"endpoint":"`+routed.URL+`","api_key":"`+servedRouteKey+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	providers := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(providers, []byte(`{"providers":[{"name":"gateway","dialect":"openai_responses","base_url":"`+models.URL+`/v1","models":[{"id":"m1"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, filepath.Join(dir, "data"),
		"BRAIN_API_TOKEN="+servedOperatorToken,
		"BRAIN_LOG_LEVEL=debug",
		"BRAIN_PROVIDERS_FILE="+providers,
		"BRAIN_OPENAI_BASE_URL="+models.URL+"/v1",
		"OPENAI_API_KEY="+servedOperatorKey,
		"BRAIN_ENVIRONMENT_ROUTES_FILE="+routes,
		"BRAIN_NO_WORKSPACE=1",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_HEADERS=x-collector-key="+servedOTLPHeader,
	)
	var answers [][]byte
	do := func(method, path, body string, headers ...string) reply {
		t.Helper()
		r := s.do(method, path, body, headers...)
		answers = append(answers, r.Body)
		return r
	}

	// A host registers, and answers the command it is sent with a value
	// quoting its own token.
	r := s.do("POST", "/v1/hosts", "")
	var reg api.HostRegistration
	if err := json.Unmarshal(r.Body, &reg); r.Status != 200 || err != nil {
		t.Fatalf("register = %d %s", r.Status, r.Body)
	}
	hostAnswers := runQuotingHost(t, s, reg)

	toolsOn := func(env, name string, impl string) api.Tool {
		return api.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{env: {Implementation: json.RawMessage(impl)}}}
	}
	create := api.CreateSessionRequest{
		Model: api.ModelConfig{Provider: "gateway", Name: "m1", APIKey: servedSessionKey},
		Environments: []api.Environment{
			{Name: "box", Driver: api.DriverHTTP, URL: box.URL, Credential: servedCredential},
			{Name: "routed", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"routed"}`)},
			{Name: "h", Driver: api.DriverHost, HostID: reg.HostID},
		},
		Tools: []api.Tool{
			toolsOn("box", "boxed", `{"kind":"quote"}`),
			toolsOn("routed", "routed_tool", `{"kind":"quote"}`),
			toolsOn("h", "hosted", `{}`),
		},
	}
	body, _ := json.Marshal(create)
	r = do("POST", "/v1/sessions", string(body), "Idempotency-Key", key())
	var sum api.SessionSummary
	if err := json.Unmarshal(r.Body, &sum); r.Status != 200 || err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	id := sum.SessionID
	if r := do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"CALL-TOOLS"}}`, "Idempotency-Key", key()); r.Status != 200 {
		t.Fatalf("tool turn = %d %s", r.Status, r.Body)
	}
	if r := do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"FAIL-NOW"}}`, "Idempotency-Key", key()); r.Status != 500 || !strings.Contains(string(r.Body), "invalid_api_key") {
		t.Fatalf("failing turn = %d %s", r.Status, r.Body)
	}
	// A session without a key of its own uses the operator's.
	r = do("POST", "/v1/sessions", `{"model":{"provider":"openai","name":"gpt-4o"}}`, "Idempotency-Key", key())
	var second api.SessionSummary
	if err := json.Unmarshal(r.Body, &second); r.Status != 200 || err != nil {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	if r := do("POST", "/v1/sessions/"+second.SessionID+"/messages", `{"input":{"message":"FAIL-NOW"}}`, "Idempotency-Key", key()); r.Status != 500 || !strings.Contains(string(r.Body), "invalid_api_key") {
		t.Fatalf("failing turn = %d %s", r.Status, r.Body)
	}

	// The scan is not vacuous: every credential reached its holder, and
	// each quoting path ran.
	if got := models.keys(); !got[servedSessionKey] || !got[servedOperatorKey] {
		t.Fatalf("the model server saw keys %v", got)
	}
	if got := box.Received(envapi.RequestExecute, ""); len(got) != 1 || got[0].Auth != "Bearer "+servedCredential {
		t.Fatalf("http environment executes: %+v", got)
	}
	if got := routed.Received(envapi.RequestExecute, ""); len(got) != 1 || got[0].Auth != "Bearer "+servedRouteKey {
		t.Fatalf("routed environment executes: %+v", got)
	}
	select {
	case <-hostAnswers:
	case <-time.After(30 * time.Second):
		t.Fatal("the host answered no command")
	}
	secrets := map[string]string{
		"operator token": servedOperatorToken, "session model key": servedSessionKey, "operator model key": servedOperatorKey,
		"environment credential": servedCredential, "route api_key": servedRouteKey, "OTLP header": servedOTLPHeader,
		"host token": reg.Token,
	}
	for _, p := range []*envtest.Provider{box.Provider, routed.Provider} {
		for _, op := range p.Received("", "") {
			o := op.Cmd.Operation
			if o.Reporter != nil {
				secrets["reporter token of "+o.Environment] = o.Reporter.Token
			}
			if o.Context != nil {
				secrets[fmt.Sprintf("context token of %s/%d", o.Environment, o.Sequence)] = o.Context.Token
			}
			if g := o.Request.Callback; g != nil {
				secrets[fmt.Sprintf("callback token of %s/%d", o.Environment, o.Sequence)] = g.Token
			}
		}
	}

	for _, sid := range []string{id, second.SessionID} {
		for _, path := range []string{"", "/transcript", "/events?after=0"} {
			do("GET", "/v1/sessions/"+sid+path, "")
		}
	}
	evs := s.events(id)
	if n := len(ofKind(evs, api.KindToolCallEnded)); n != 3 {
		t.Fatalf("%d tool calls ended: %v", n, kinds(evs))
	}
	raw, _ := json.Marshal(append(evs, s.events(second.SessionID)...))
	answers = append(answers, raw)
	for _, path := range []string{"/v1/sessions", "/v1/models", "/metrics", "/v1/openapi.json", "/health/ready"} {
		do("GET", path, "")
	}
	// The first session's journal stays on disk for the scan; the second
	// is deleted.
	do("POST", "/v1/sessions/"+id+"/end", "", "Idempotency-Key", key())
	do("DELETE", "/v1/sessions/"+second.SessionID, "", "Idempotency-Key", key())
	s.stop()

	check := func(where string, data []byte) {
		t.Helper()
		for name, v := range secrets {
			if bytes.Contains(data, []byte(v)) {
				i := bytes.Index(data, []byte(v))
				t.Errorf("%s found in %s: …%s…", name, where, data[max(0, i-200):min(len(data), i+len(v)+50)])
			}
		}
	}
	for i, b := range answers {
		check(fmt.Sprintf("HTTP answer %d", i), b)
	}
	stderr := s.stderr.String()
	if !strings.Contains(stderr, "level=DEBUG") {
		t.Fatalf("no debug log in stderr:\n%s", stderr)
	}
	check("stderr", []byte(stderr))
	files, journaled := 0, false
	err := filepath.WalkDir(s.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		journaled = journaled || strings.HasSuffix(path, ".segment") && bytes.Contains(b, []byte(`"quoted"`))
		check(path, b)
		return nil
	})
	if err != nil || files < 4 || !journaled {
		t.Fatalf("walked %d files (the session's journal among them: %v): %v", files, journaled, err)
	}
	spans := otlp.bodies("/v1/traces")
	if len(spans) == 0 || !bytes.Contains(bytes.Join(spans, nil), []byte(id)) {
		t.Fatalf("the receiver got %d span exports, none naming the session", len(spans))
	}
	for i, b := range spans {
		check(fmt.Sprintf("span export %d", i), b)
	}
	for i, b := range otlp.bodies("/v1/logs") {
		check(fmt.Sprintf("log export %d", i), b)
	}
}

// otlpReceiver records the bodies of OTLP/HTTP exports, uncompressed.
type otlpReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  map[string][][]byte
	auth []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{got: map[string][][]byte{}}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rd = zr
		}
		b, _ := io.ReadAll(rd)
		o.mu.Lock()
		o.got[r.URL.Path] = append(o.got[r.URL.Path], b)
		o.auth = append(o.auth, r.Header.Get("X-Collector-Key"))
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *otlpReceiver) bodies(path string) [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([][]byte(nil), o.got[path]...)
}

// keyEchoModel is an OpenAI Responses server: a conversation whose input
// says CALL-TOOLS gets one call of each tool (then a text answer once
// their results came); one that says FAIL-NOW gets a 401 quoting the key
// it was sent, as hosted APIs do.
type keyEchoModel struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]bool
}

func newKeyEchoModel(t *testing.T) *keyEchoModel {
	t.Helper()
	m := &keyEchoModel{seen: map[string]bool{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		m.mu.Lock()
		m.seen[k] = true
		m.mu.Unlock()
		if bytes.Contains(body, []byte("FAIL-NOW")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`, k)
			return
		}
		output := `[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}]`
		if bytes.Contains(body, []byte("CALL-TOOLS")) && !bytes.Contains(body, []byte("function_call_output")) {
			output = `[{"type":"function_call","call_id":"c1","name":"boxed","arguments":"{}"},` +
				`{"type":"function_call","call_id":"c2","name":"routed_tool","arguments":"{}"},` +
				`{"type":"function_call","call_id":"c3","name":"hosted","arguments":"{}"}]`
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":%s,\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}}\n\n", output)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *keyEchoModel) keys() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]bool{}
	for k, v := range m.seen {
		out[k] = v
	}
	return out
}

// quotingProvider is an environment provider whose Tool of kind "quote"
// emits an event and answers an output quoting its credential and the
// tokens of the execute it is running, as a careless provider might.
type quotingProvider struct {
	envsdk.Base
	*envtest.Provider
	credential string
}

func newQuotingProvider(t *testing.T, credential string) *quotingProvider {
	t.Helper()
	p := &quotingProvider{credential: credential}
	p.Provider = envtest.NewProvider(t, envsdk.NewHandler(p, &envsdk.Options{Token: credential}))
	return p
}

func (p *quotingProvider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	quoted := map[string]string{"credential": p.credential}
	if g := c.Request.Callback; g != nil {
		quoted["callback"] = g.Token
	}
	if _, err := x.Invocation.Emit(c.Context(), "quoted", quoted); err != nil {
		return envapi.Receipt{}, err
	}
	return envapi.Receipt{}, envsdk.Fail("quoted", "the provider quoted "+p.credential+" and "+quoted["callback"]).WithDetails(quoted)
}

// runQuotingHost serves reg's commands stream and answers the first
// command with a value quoting the host's token; the channel closes once
// the result was accepted.
func runQuotingHost(t *testing.T, s *server, reg api.HostRegistration) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/hosts/"+reg.HostID+"/commands", nil)
	req.Header.Set("Authorization", "Bearer "+reg.Token)
	resp, err := httpClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("commands stream: %v %v", resp, err)
	}
	done := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		frames(resp.Body, func(f frame) bool {
			if f.Event != "command" {
				return true
			}
			var cmd api.HostCommand
			if json.Unmarshal([]byte(f.Data), &cmd) != nil {
				return false
			}
			value, _ := json.Marshal("the host token is " + reg.Token)
			body := fmt.Sprintf(`{"session_id":%q,"sequence":%d,"update":{"type":"finish","outcome":{"status":"ok","value":%s}}}`, cmd.SessionID, cmd.Sequence, value)
			resp, err := hostRequest(s, "POST", "/v1/hosts/"+reg.HostID+"/results", reg.Token, body)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && !bytes.Contains(b, []byte(reg.Token)) {
					close(done)
				}
			}
			return false
		})
	}()
	return done
}
