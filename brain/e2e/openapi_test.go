package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/openapicheck"
)

// apiCheck validates every response the tests' HTTP clients receive
// against the served OpenAPI document (set by TestMain).
var apiCheck *openapicheck.Checker

// apiTests maps the host of each running Brain to the test using it, so
// that a response that disagrees with the document fails that test.
var apiTests struct {
	mu    sync.Mutex
	hosts map[string]*testing.T
}

// checkAPI installs the document check on the tests' HTTP client.
func checkAPI() error {
	c, err := openapicheck.New(httpapi.OpenAPI)
	if err != nil {
		return err
	}
	c.OnMismatch = func(m *openapicheck.Mismatch) {
		u, err := url.Parse(m.URL)
		if err != nil {
			return
		}
		apiTests.mu.Lock()
		defer apiTests.mu.Unlock()
		if t := apiTests.hosts[u.Host]; t != nil {
			t.Errorf("response disagrees with openapi.json: %v", m)
		}
	}
	apiCheck = c
	httpClient.Transport = c.Transport(nil)
	return nil
}

// watchAPI attributes the responses of the Brain at base to t until t
// ends.
func watchAPI(t *testing.T, base string) {
	u, err := url.Parse(base)
	if err != nil {
		return
	}
	apiTests.mu.Lock()
	if apiTests.hosts == nil {
		apiTests.hosts = map[string]*testing.T{}
	}
	apiTests.hosts[u.Host] = t
	apiTests.mu.Unlock()
	t.Cleanup(func() {
		apiTests.mu.Lock()
		if apiTests.hosts[u.Host] == t {
			delete(apiTests.hosts, u.Host)
		}
		apiTests.mu.Unlock()
	})
}

// reportAPI prints every mismatch found (those outside a test's lifetime
// included) and answers the exit code they call for.
func reportAPI(code int) int {
	if apiCheck == nil {
		return code
	}
	ms := apiCheck.Mismatches()
	fmt.Fprintf(os.Stderr, "e2e: %d responses checked against openapi.json, %d disagreed\n", apiCheck.Checked(), len(ms))
	for _, m := range ms {
		fmt.Fprintln(os.Stderr, "e2e: response disagrees with openapi.json:", m)
	}
	if len(ms) > 0 && code == 0 {
		return 1
	}
	return code
}

// TestOpenAPICheckSeesResponses: the responses of a real server are
// checked as the suite runs, and the document is strict enough that a
// response drifting from it (a missing field, a changed type, an
// undocumented status) is caught.
func TestOpenAPICheckSeesResponses(t *testing.T) {
	s := start(t, "")
	before := apiCheck.Checked()
	id := s.create().SessionID
	r := s.do("GET", "/v1/sessions/"+id, "")
	if r.Status != 200 {
		t.Fatalf("get = %d %s", r.Status, r.Body)
	}
	if apiCheck.Checked() < before+2 {
		t.Fatalf("checked %d responses, want at least 2 more than %d", apiCheck.Checked(), before)
	}
	fresh, err := openapicheck.New(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var summary map[string]any
	if err := json.Unmarshal(r.Body, &summary); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", s.URL+"/v1/sessions/"+id, nil)
	for name, edit := range map[string]func(m map[string]any) int{
		"missing status":   func(m map[string]any) int { delete(m, "status"); return 200 },
		"status a number":  func(m map[string]any) int { m["status"] = 7; return 200 },
		"undocumented 418": func(m map[string]any) int { return 418 },
	} {
		m := map[string]any{}
		for k, v := range summary {
			m[k] = v
		}
		code := edit(m)
		body, _ := json.Marshal(m)
		resp := &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body))}
		if err := fresh.Check(req, resp); err == nil {
			t.Errorf("%s: %s passed the document", name, body)
		}
	}
}
