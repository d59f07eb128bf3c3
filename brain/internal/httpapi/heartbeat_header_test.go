package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An event stream names its heartbeat interval in the Brain-Heartbeat-Ms
// header, whether its connection is taken over (HTTP/1.1) or not
// (HTTP/1.0), so that a client can tell a silently dropped stream.
func TestStreamNamesItsHeartbeat(t *testing.T) {
	f := newFixture(t, Options{Heartbeat: 1500 * time.Millisecond})
	sid := f.create("c").SessionID
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /v1/sessions/%s/events %s\r\nHost: x\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", sid, proto, testToken)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s stream head: %v %v", proto, resp, err)
		}
		if got := resp.Header.Get("Brain-Heartbeat-Ms"); got != "1500" {
			t.Errorf("%s stream: Brain-Heartbeat-Ms %q, want 1500", proto, got)
		}
		c.Close()
	}
}
