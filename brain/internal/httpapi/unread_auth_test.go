package httpapi

import (
	"bufio"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/hosts"
)

// TestCallbackRoutesRefuseWithoutWaitingForTheBody: a request to a route
// that authenticates its callers by a token of their own (an execution's
// invocation token, a binding's reporter token, a host's token) that
// fails authentication is answered 401 at once, without waiting for the
// body it announced, and its connection is closed: a client without a
// token cannot hold a connection open by sending its body slowly or never,
// as on the routes behind the server token.
func TestCallbackRoutesRefuseWithoutWaitingForTheBody(t *testing.T) {
	reg, err := hosts.Open(hosts.Config{Dir: filepath.Join(t.TempDir(), hosts.DirName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	f := newFixture(t, Options{Bindings: newBinder(t), Hosts: reg})
	id := f.create("c").SessionID
	st, _, b := f.do("POST", "/v1/hosts", "")
	var host struct {
		HostID string `json:"host_id"`
	}
	if st != 200 || json.Unmarshal(b, &host) != nil {
		t.Fatalf("register = %d %s", st, b)
	}
	for _, path := range []string{
		"/v1/sessions/" + id + "/executions/3/call",
		"/v1/sessions/" + id + "/environments/box/1/events",
		"/v1/hosts/" + host.HostID + "/results",
		"/v1/hosts/" + host.HostID + "/suspend",
		"/v1/sessions",
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		// Ten bytes announced, one sent.
		_, _ = c.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"))
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, " 401 ") {
			t.Errorf("POST %s with a wrong token and a stalled body: %q, %v; want 401 at once", path, line, err)
			c.Close()
			continue
		}
		for {
			if _, err := br.ReadByte(); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("POST %s: connection not closed after the 401", path)
				}
				break
			}
		}
		c.Close()
	}
}
