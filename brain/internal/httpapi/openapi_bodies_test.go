package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestOpenAPIDocumentsOversizeBodies: the session operations that take no
// body still read one within Options.MaxRequestBytes (413 beyond it); the
// document lists that answer for them as for every route that reads a
// body.
func TestOpenAPIDocumentsOversizeBodies(t *testing.T) {
	v := openAPIValidator(t)
	f := newFixture(t, Options{MaxRequestBytes: 1 << 10})
	id := f.create("c").SessionID
	big := strings.Repeat("x", 4<<10)
	for i, c := range []struct{ method, path string }{
		{"POST", "/v1/sessions/" + id + "/cancel"},
		{"POST", "/v1/sessions/" + id + "/end"},
		{"DELETE", "/v1/sessions/" + id},
	} {
		req, _ := http.NewRequest(c.method, f.url+c.path, strings.NewReader(big))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Idempotency-Key", "big"+string(rune('a'+i)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s with %d bytes = %d %s, want 413", c.method, c.path, len(big), resp.StatusCode, b)
			continue
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		vreq, _ := http.NewRequest(c.method, f.url+c.path, nil)
		if err := v.Check(vreq, resp); err != nil {
			t.Errorf("%s %s: %v", c.method, c.path, err)
		}
	}
}

// TestOpenAPIDocumentsEventCursorHeaders: the events route reads its
// cursor from Last-Event-ID when after is absent, and names the heartbeat
// interval of a stream in Brain-Heartbeat-Ms; the document says both, as
// it does for the host commands stream.
func TestOpenAPIDocumentsEventCursorHeaders(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string         `json:"name"`
				In     string         `json:"in"`
				Schema map[string]any `json:"schema"`
			} `json:"parameters"`
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/v1/sessions/{id}/events"]["get"]
	found := false
	for _, p := range op.Parameters {
		if p.Name == "Last-Event-ID" && p.In == "header" {
			found = true
		}
	}
	if !found {
		t.Errorf("getEvents documents no Last-Event-ID header parameter: %+v", op.Parameters)
	}
	if op.Responses["200"].Headers[heartbeatHeader] == nil {
		t.Errorf("getEvents 200 documents no %s header", heartbeatHeader)
	}

	// What the document says is what the server does: Last-Event-ID is
	// the cursor of a page too, and after wins over it.
	f := newFixture(t, Options{})
	id := f.create("c").SessionID
	for _, c := range []struct {
		query, lastID string
		first         uint64
	}{{"", "1", 2}, {"?after=0", "1", 1}} {
		st, _, b := f.do("GET", "/v1/sessions/"+id+"/events"+c.query, "", "Last-Event-ID", c.lastID)
		var page api.EventPage
		if err := json.Unmarshal(b, &page); err != nil || st != 200 || len(page.Events) == 0 || page.Events[0].Sequence != c.first {
			t.Errorf("events%s with Last-Event-ID %s = %d %s, want events from %d", c.query, c.lastID, st, b, c.first)
		}
	}
}
