package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/catalog"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/hosts"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/metrics"
	"github.com/brain-in-go/brain/brain/internal/openapicheck"
)

// openAPIValidator checks the document against the OpenAPI 3.1 schema and
// answers a checker of responses.
func openAPIValidator(t *testing.T) *openapicheck.Checker {
	t.Helper()
	var head struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(OpenAPI, &head); err != nil || head.OpenAPI != "3.1.0" {
		t.Errorf("openapi version %q (%v), want 3.1.0", head.OpenAPI, err)
	}
	c, err := openapicheck.New(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// documented maps a mux pattern to the documented operations it serves.
func documented(pattern string) []string {
	method, path, _ := strings.Cut(pattern, " ")
	if pattern == PatternBinding { // the reporter and environment call routes share it
		return []string{"post /v1/sessions/{id}/environments/{env}/{sequence}/events", "post /v1/sessions/{id}/environments/{env}/calls/{name}"}
	}
	return []string{strings.ToLower(method) + " " + path}
}

// everyRoute answers a fixture whose server mounts every route: models,
// metrics, agentloops and tools, hosts and the environment routes.
func everyRoute(t *testing.T) *fixture {
	t.Helper()
	c, _ := catalog.New(nil)
	dir := t.TempDir()
	host, err := loophost.Open(context.Background(), loophost.Options{Dir: filepath.Join(dir, "agentloops"), ToolsDir: filepath.Join(dir, "tools")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(context.Background()) })
	reg, err := hosts.Open(hosts.Config{Dir: filepath.Join(dir, hosts.DirName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return newFixture(t, Options{Models: c, Metrics: metrics.New().Handler(),
		Agentloops: host, Hosts: reg, Bindings: &envbind.Binder{}}) // the bindings are mounted only, never called
}

// TestOpenAPICoversRoutes: every route the server mounts is documented,
// and every documented operation is mounted.
func TestOpenAPICoversRoutes(t *testing.T) {
	openAPIValidator(t)
	f := everyRoute(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "options" { // answered for every path (TestOpenAPIDocumentsMethodAnswers)
				inDoc[method+" "+path] = true
			}
		}
	}
	mounted := map[string]bool{}
	routes := f.srv.Routes()
	if len(routes) < 20 {
		t.Fatalf("only %d routes mounted: %v", len(routes), routes)
	}
	for _, p := range routes {
		for _, op := range documented(p) {
			mounted[op] = true
			if !inDoc[op] {
				t.Errorf("route %q (%s) is not in openapi.json", p, op)
			}
		}
	}
	for op := range inDoc {
		if !mounted[op] {
			t.Errorf("openapi.json documents %s, which no route serves", op)
		}
	}
}

// TestOpenAPIResponses sends real requests through the server, failures
// included, and validates every response against the document.
func TestOpenAPIResponses(t *testing.T) {
	v := openAPIValidator(t)
	c, _ := catalog.New(nil)
	reg, err := hosts.Open(hosts.Config{Dir: filepath.Join(t.TempDir(), hosts.DirName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	f := newFixture(t, Options{Models: c, Metrics: metrics.New().Handler(), Hosts: reg})
	seen := map[string]bool{}
	send := func(method, path, body string, headers ...string) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, f.url+path, rd)
		req.Header.Set("Authorization", "Bearer "+testToken)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(headers); i += 2 {
			if headers[i+1] == "" {
				req.Header.Del(headers[i])
			} else {
				req.Header.Set(headers[i], headers[i+1])
			}
		}
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		vreq, _ := http.NewRequest(method, f.url+path, nil)
		if err := v.Check(vreq, resp); err != nil {
			t.Error(err)
		}
		seen[fmt.Sprintf("%s %d", method, resp.StatusCode)] = true
		return resp.StatusCode, b
	}
	want := func(code, got int, what string, body []byte) {
		t.Helper()
		if got != code {
			t.Fatalf("%s = %d %s, want %d", what, got, body, code)
		}
	}
	code, b := send("GET", "/health/live", "")
	want(204, code, "live", b)
	code, b = send("GET", "/health/ready", "")
	want(204, code, "ready", b)
	code, b = send("POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"}}`, "Idempotency-Key", "c1")
	want(200, code, "create", b)
	var sum struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(b, &sum)
	id := sum.SessionID
	for _, c := range []struct {
		method, path, body string
		headers            []string
		code               int
	}{
		{"POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"other"}}`, []string{"Idempotency-Key", "c1"}, 409},
		{"POST", "/v1/sessions", `{"model":`, []string{"Idempotency-Key", "c2"}, 400},
		{"POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"surprise":1}`, []string{"Idempotency-Key", "c3"}, 422},
		{"POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"}}`, []string{"Idempotency-Key", "c4", "Content-Type", "text/plain"}, 415},
		{"POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"}}`, []string{"Idempotency-Key", ""}, 400},
		{"GET", "/v1/sessions", "", []string{"Authorization", ""}, 401},
		{"GET", "/v1/sessions", "", nil, 200},
		{"OPTIONS", "/v1/sessions", "", nil, 204},
		{"OPTIONS", "/v1/sessions", "", []string{"Authorization", ""}, 204},
		{"GET", "/v1/sessions/" + id, "", nil, 200},
		{"GET", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAAAAAA", "", nil, 404},
		{"GET", "/v1/sessions/nope", "", nil, 400},
		{"POST", "/v1/sessions/" + id + "/messages", `{"input":{"message":"hello"}}`, []string{"Idempotency-Key", "m1"}, 200},
		{"POST", "/v1/sessions/" + id + "/messages", `{"input":{"message":"hello"}}`, []string{"Idempotency-Key", "m1"}, 200},
		{"POST", "/v1/sessions/" + id + "/messages", `{"input":{"message":"{\"reply\":\"later\"}"}}`, []string{"Idempotency-Key", "m2", "Prefer", "respond-async"}, 202},
		{"POST", "/v1/sessions/" + id + "/messages", `{"input":{"message":"x"}}`, []string{"Idempotency-Key", "m3", "Prefer", "wait"}, 400},
		{"POST", "/v1/sessions/" + id + "/messages", `{"input":{"message":""}}`, []string{"Idempotency-Key", "m4"}, 422},
		{"GET", "/v1/sessions/" + id + "/transcript", "", nil, 200},
		{"GET", "/v1/sessions/" + id + "/transcript?tail=1", "", nil, 200},
		{"GET", "/v1/sessions/" + id + "/transcript?from=0&limit=1", "", nil, 200},
		{"GET", "/v1/sessions/" + id + "/transcript?tail=1001", "", nil, 400},
		{"GET", "/v1/sessions/" + id + "/events?after=0", "", nil, 200},
		{"GET", "/v1/sessions/" + id + "/events?after=x", "", nil, 400},
		{"GET", "/v1/sessions/" + id + "/events", "", []string{"Accept", "text/event-stream;q=0, application/json;q=0"}, 406},
		{"GET", "/v1/sessions/" + id + "/events", "", []string{"Accept", "text/event-stream;q=7"}, 400},
		{"POST", "/v1/sessions/" + id + "/cancel", "", []string{"Idempotency-Key", "x1"}, 204},
		{"DELETE", "/v1/sessions/" + id, "", []string{"Idempotency-Key", "d0"}, 409},
		{"POST", "/v1/sessions/" + id + "/end", "", []string{"Idempotency-Key", "e1"}, 200},
		{"GET", "/v1/sessions/" + id + "/events?after=1000000", "", []string{"Accept", "text/event-stream"}, 200},
		{"DELETE", "/v1/sessions/" + id, "", []string{"Idempotency-Key", "d1"}, 204},
		{"GET", "/v1/models", "", nil, 200},
		{"GET", "/v1/models?provider=anthropic", "", nil, 200},
		{"GET", "/v1/models?provider=nobody", "", nil, 404},
		{"GET", "/v1/openapi.json", "", []string{"Authorization", ""}, 200},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/metrics", "", []string{"Authorization", ""}, 401},
		{"GET", "/ui/", "", []string{"Authorization", ""}, 200},
	} {
		code, b := send(c.method, c.path, c.body, c.headers...)
		if code != c.code {
			t.Errorf("%s %s = %d %.300s, want %d", c.method, c.path, code, b, c.code)
		}
	}
	// The host routes (the commands stream is checked end to end).
	code, b = send("POST", "/v1/hosts", "")
	want(200, code, "register host", b)
	var host struct {
		HostID string `json:"host_id"`
		Token  string `json:"token"`
	}
	json.Unmarshal(b, &host)
	hostToken := []string{"Authorization", "Bearer " + host.Token}
	hp := "/v1/hosts/" + host.HostID
	call := `"session_id":"ses_AAAAAAAAAAAAAAAAAAAAAAAA","sequence":1`
	for _, c := range []struct {
		method, path, body string
		headers            []string
		code               int
	}{
		{"POST", "/v1/hosts", "", []string{"Authorization", ""}, 401},
		{"GET", hp + "/commands", "", nil, 401},
		{"GET", hp + "/commands", "", append([]string{"Accept", "text/event-stream;q=0"}, hostToken...), 406},
		{"POST", hp + "/results", `{` + call + `,"update":{"type":"finish"}}`, nil, 401},
		{"POST", hp + "/results", `{` + call + `,"update":{"type":"finish"}}`, hostToken, 403},
		{"POST", hp + "/results", `{"session_id":`, hostToken, 400},
		{"POST", hp + "/results", `{` + call + `,"update":{"type":"finish"},"extra":1}`, hostToken, 422},
		{"POST", hp + "/results", `{` + call + `,"update":{"type":"finish"}}`, append([]string{"Content-Type", "text/plain"}, hostToken...), 415},
		{"POST", hp + "/events", `{` + call + `,"event_type":"x.progress","data":{}}`, hostToken, 403},
		{"POST", hp + "/model", `{` + call + `,"request":{"messages":[]}}`, hostToken, 403},
		{"POST", hp + "/call", `{` + call + `,"call":{"method":"emit","input":{}}}`, hostToken, 403},
		{"POST", hp + "/suspend", `{"connection":"hconn_none"}`, hostToken, 200},
	} {
		code, b := send(c.method, c.path, c.body, c.headers...)
		if code != c.code {
			t.Errorf("%s %s = %d %.300s, want %d", c.method, c.path, code, b, c.code)
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("validated: %v", keys)
}

// TestOpenAPIDocumentsMethodAnswers checks that the document describes
// what the server answers for the methods a path does not serve: OPTIONS
// of every documented path answers 204 with an Allow header listing the
// documented methods, as the document says, and another method 405 with
// that Allow header and an ApiError, the response the document defines.
func TestOpenAPIDocumentsMethodAnswers(t *testing.T) {
	v := openAPIValidator(t)
	f := everyRoute(t)
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
				Content map[string]json.RawMessage `json:"content"`
			} `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if r, ok := doc.Components.Responses["MethodNotAllowed"]; !ok || r.Headers["Allow"] == nil || r.Content["application/json"] == nil {
		t.Errorf("components.responses.MethodNotAllowed is missing or lacks the Allow header and an ApiError body: %+v", r)
	}
	values := strings.NewReplacer("{id}", "ses_AAAAAAAAAAAAAAAAAAAAAAAA", "{env}", "box", "{name}", "inspect",
		"{sequence}", "3", "{host_id}", "host_AAAAAAAAAAAAAAAAAAAA")
	for path, ops := range doc.Paths {
		var methods []string
		for m := range ops {
			switch m {
			case "options", "parameters", "summary", "description":
				continue
			case "get":
				methods = append(methods, "HEAD")
			}
			methods = append(methods, strings.ToUpper(m))
		}
		slices.Sort(methods)
		allow := strings.Join(methods, ", ")
		url := f.url + values.Replace(path)
		if _, ok := ops["options"]; !ok {
			t.Errorf("openapi.json documents no options operation of %s", path)
		}
		for _, m := range []string{"OPTIONS", "PATCH"} {
			req, _ := http.NewRequest(m, url, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := http.StatusNoContent
			if m != "OPTIONS" {
				want = http.StatusMethodNotAllowed
			}
			if resp.StatusCode != want || resp.Header.Get("Allow") != allow {
				t.Errorf("%s %s = %d Allow %q %s, want %d Allow %q (the documented methods)", m, path, resp.StatusCode, resp.Header.Get("Allow"), b, want, allow)
				continue
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			before := v.Checked()
			if err := v.Check(req, resp); err != nil {
				t.Error(err)
			} else if m == "OPTIONS" && v.Checked() == before {
				t.Errorf("OPTIONS %s: the answer is not documented", path)
			}
		}
	}
}
