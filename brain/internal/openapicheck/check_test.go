package openapicheck

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const doc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/items/{id}": {"get": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {
        "200": {"description": "an item", "content": {"application/json": {"schema": {
          "type": "object", "required": ["id"], "additionalProperties": false,
          "properties": {"id": {"type": "string"}}}}}},
        "404": {"description": "missing", "content": {"application/json": {"schema": {"type": "object", "required": ["code"]}}}}
      }}},
    "/stream": {"get": {"responses": {"200": {"description": "events", "content": {"text/event-stream": {"schema": {"type": "string"}}}}}}}
  }
}`

// TestTransportChecksResponses: documented answers pass and keep their
// bodies; a body off its schema, an undocumented status and a wrong
// content type are mismatches; a stream is checked without being read;
// paths outside the document are not checked.
func TestTransportChecksResponses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/items/good":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"good"}`)
		case "/items/extra":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","surprise":1}`)
		case "/items/teapot":
			w.WriteHeader(http.StatusTeapot)
		case "/items/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello")
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // never ends by itself
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	c.OnMismatch = func(m *Mismatch) { told = append(told, m.URL) }
	hc := &http.Client{Transport: c.Transport(nil)}
	get := func(path string) string {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if strings.HasPrefix(path, "/stream") {
			return ""
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if b := get("/items/good"); b != `{"id":"good"}` {
		t.Errorf("body after the check = %q", b)
	}
	get("/stream")
	get("/elsewhere")
	if m := c.Mismatches(); len(m) != 0 {
		t.Fatalf("documented answers flagged: %v", m)
	}
	if c.Checked() != 2 {
		t.Errorf("checked %d, want 2 (the undocumented path is not checked)", c.Checked())
	}
	for _, p := range []string{"/items/extra", "/items/teapot", "/items/text"} {
		get(p)
	}
	m := c.Mismatches()
	if len(m) != 3 || len(told) != 3 {
		t.Fatalf("mismatches %v (told %v), want 3", m, told)
	}
	for i, want := range []string{"surprise", "418", "text/plain"} {
		if !strings.Contains(m[i].Error(), want) {
			t.Errorf("mismatch %d = %v, want it to mention %q", i, m[i], want)
		}
	}
	if _, err := New([]byte(`{"openapi":"3.1.0"}`)); err == nil {
		t.Error("a document without info was accepted")
	}
}
