package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestEventsAcceptWeights checks that the events route reads the weights
// of the Accept header: a stream is answered only to a client that names
// text/event-stream with a weight above 0 and does not prefer JSON to it;
// a client that refuses the stream gets the JSON page, one that refuses
// both the 406, and a malformed weight the 400.
func TestEventsAcceptWeights(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.create("c").SessionID
	if st, _, b := f.do("POST", "/v1/sessions/"+id+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	path := "/v1/sessions/" + id + "/events"
	const page, sse = "application/json", "text/event-stream"
	cases := []struct {
		accept string
		status int
		ctype  string
	}{
		{"text/event-stream", 200, sse},
		{"TEXT/Event-Stream; q=1.0", 200, sse},
		{"text/event-stream;q=0.001", 200, sse},
		{"application/json, text/event-stream", 200, sse},
		{"text/event-stream, */*;q=0.5", 200, sse},
		{"text/event-stream;q=0", 200, page},
		{"text/event-stream; q=0.000, application/json", 200, page},
		{"application/json, text/event-stream;q=0.5", 200, page},
		{"*/*", 200, page},
		{"text/*", 200, page},
		{"text/event-stream;q=0, application/json;q=0", 406, page},
		{"text/event-stream;q=0, */*;q=0", 406, page},
		{"application/*;q=0", 406, page},
		{"text/event-stream;q=2", 400, page},
		{"text/event-stream;q=0.5;q=1", 400, page},
		{"text/event-stream;q=", 400, page},
		{"event-stream", 400, page},
	}
	for _, c := range cases {
		st, h, b := f.do("GET", path, "", "Accept", c.accept)
		if st != c.status || h.Get("Content-Type") != c.ctype {
			t.Errorf("Accept %q = %d %s %.200s, want %d %s", c.accept, st, h.Get("Content-Type"), b, c.status, c.ctype)
			continue
		}
		if st != 200 {
			var e api.ApiError
			if json.Unmarshal(b, &e) != nil || e.Code != api.CodeInvalidRequest {
				t.Errorf("Accept %q: %s is not an invalid_request ApiError", c.accept, b)
			}
		}
	}
	if st, h, _ := f.do("HEAD", path, "", "Accept", "text/event-stream;q=0"); st != 200 || h.Get("Content-Type") != page {
		t.Errorf("HEAD with the stream refused = %d %s, want 200 %s", st, h.Get("Content-Type"), page)
	}
}

// TestHostCommandsRefusedStream checks that a host's commands route, which
// answers only a stream, answers 406 to a client that refuses one, and
// does not connect it.
func TestHostCommandsRefusedStream(t *testing.T) {
	f := newHostFixture(t)
	path := "/v1/hosts/" + f.hostID + "/commands"
	client := &http.Client{Timeout: 10 * time.Second} // a stream would not end
	for _, accept := range []string{"text/event-stream;q=0", "text/*;q=0, application/json"} {
		req, _ := http.NewRequest("GET", f.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+f.token)
		req.Header.Set("Accept", accept)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotAcceptable {
			t.Errorf("commands with Accept %q = %d %s, want 406", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if st, h, _ := f.do("HEAD", path, "", "Authorization", "Bearer "+f.token, "Accept", "application/json"); st != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD of commands with Accept application/json = %d %s, want the stream's head", st, h.Get("Content-Type"))
	}
}
