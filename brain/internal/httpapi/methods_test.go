package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/hosts"
)

// TestWrongMethodAnswers405 checks that a route asked with a method it
// does not serve answers 405 with an Allow header and an ApiError, and
// OPTIONS answers the route's methods; a path no route serves stays 404.
func TestWrongMethodAnswers405(t *testing.T) {
	f := newFixture(t, Options{})
	sp := "/v1/sessions/" + f.create("c").SessionID
	cases := []struct {
		method, path, allow string
	}{
		{"PUT", "/v1/sessions", "GET, HEAD, POST"},
		{"DELETE", "/v1/sessions", "GET, HEAD, POST"},
		{"POST", sp, "DELETE, GET, HEAD"},
		{"PATCH", sp, "DELETE, GET, HEAD"},
		{"GET", sp + "/messages", "POST"},
		{"GET", sp + "/cancel", "POST"},
		{"POST", sp + "/events", "GET, HEAD"},
		{"POST", "/health/live", "GET, HEAD"},
	}
	for _, c := range cases {
		st, h, b := f.do(c.method, c.path, "")
		if st != http.StatusMethodNotAllowed || h.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d Allow %q %s, want 405 Allow %q", c.method, c.path, st, h.Get("Allow"), b, c.allow)
			continue
		}
		var e api.ApiError
		if err := json.Unmarshal(b, &e); err != nil || e.Code != api.CodeInvalidRequest || e.Message == "" || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s body %s is not an ApiError", c.method, c.path, b)
		}
	}
	if st, h, b := f.do("OPTIONS", sp+"/messages", ""); st != http.StatusNoContent || h.Get("Allow") != "POST" || len(b) != 0 {
		t.Errorf("OPTIONS messages = %d Allow %q %s, want 204 Allow POST", st, h.Get("Allow"), b)
	}
	if st, _, b := f.do("PUT", "/v1/nothing", ""); st != http.StatusNotFound {
		t.Errorf("PUT on no route = %d %s, want 404", st, b)
	}
	if st, _, _ := f.do("PUT", "/v1/nothing", "", "Authorization", ""); st != http.StatusUnauthorized {
		t.Errorf("no route without the token = %d, want 401", st)
	}
}

// TestHeadOfEventStream checks that HEAD of the events route asked as a
// stream answers the stream's head and no body, so the connection goes on
// to the next request.
func TestHeadOfEventStream(t *testing.T) {
	f := newFixture(t, Options{})
	sid := f.create("c").SessionID
	c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HEAD /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", sid, testToken)
	fmt.Fprintf(c, "GET /v1/sessions/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", sid, testToken)
	br := bufio.NewReader(c)
	head, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil || head.StatusCode != 200 || head.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD of the stream: %v %v", head, err)
	}
	next, err := http.ReadResponse(br, nil)
	if err != nil || next.StatusCode != 200 || next.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("the request after HEAD got %v %v: the HEAD answer carried a body", next, err)
	}
	if st, _, _ := f.do("HEAD", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAA/events", "", "Accept", "text/event-stream"); st != http.StatusNotFound {
		t.Errorf("HEAD of an unknown session's stream = %d, want 404", st)
	}
}

// TestHeadOfHostCommandsKeepsTheConnection checks that HEAD of a host's
// commands route answers the stream's head without connecting: the
// host's open commands connection is not displaced.
func TestHeadOfHostCommandsKeepsTheConnection(t *testing.T) {
	reg, err := hosts.Open(hosts.Config{Dir: filepath.Join(t.TempDir(), hosts.DirName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	f := newFixture(t, Options{Hosts: reg, Heartbeat: 10 * time.Millisecond})
	st, _, b := f.do("POST", "/v1/hosts", "")
	var host struct {
		HostID string `json:"host_id"`
		Token  string `json:"token"`
	}
	if st != 200 || json.Unmarshal(b, &host) != nil {
		t.Fatalf("register = %d %s", st, b)
	}
	path := "/v1/hosts/" + host.HostID + "/commands"
	req, _ := http.NewRequest("GET", f.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+host.Token)
	first, err := http.DefaultClient.Do(req)
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("commands: %v %v", first, err)
	}
	defer first.Body.Close()
	if st, h, _ := f.do("HEAD", path, "", "Authorization", "Bearer "+host.Token); st != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD commands = %d %v", st, h)
	}
	// The first connection goes on: it keeps receiving heartbeats and is
	// never told it was displaced.
	sc := bufio.NewScanner(first.Body)
	pings := 0
	for pings < 3 && sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, ":"):
			pings++
		case line == "event: displaced":
			t.Fatal("HEAD displaced the host's commands connection")
		}
	}
	if pings < 3 {
		t.Fatalf("commands connection ended after HEAD: %v", sc.Err())
	}
}
