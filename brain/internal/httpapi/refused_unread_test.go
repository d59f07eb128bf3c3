package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefusedBeforeTheBodyIsAnsweredAtOnce checks that a request refused
// for its path or headers before its body is read (a missing or repeated
// Idempotency-Key, a wrong Content-Type, an unsupported Prefer, a
// malformed session id) is answered at once although its body never
// arrives (once the little of it that came was discarded, within a
// second), and its connection closed: the server does not wait for a body
// it will not use.
func TestRefusedBeforeTheBodyIsAnsweredAtOnce(t *testing.T) {
	f := newHostFixtureWith(t, Options{Bindings: newBinder(t)}, nil)
	sp := "/v1/sessions/" + f.create("c").SessionID
	auth := "Authorization: Bearer " + testToken + "\r\n"
	cases := []struct {
		head string
		want int
	}{
		{"POST /v1/sessions HTTP/1.1\r\n" + auth + "Content-Type: application/json\r\n", 400},
		{"POST /v1/sessions HTTP/1.1\r\n" + auth + "Idempotency-Key: k\r\nContent-Type: text/plain\r\n", 415},
		{"POST " + sp + "/messages HTTP/1.1\r\n" + auth + "Idempotency-Key: k\r\nPrefer: wait\r\nContent-Type: application/json\r\n", 400},
		{"POST /v1/sessions/nope/cancel HTTP/1.1\r\n" + auth + "Idempotency-Key: k\r\n", 400},
		{"POST " + sp + "/environments HTTP/1.1\r\n" + auth + "Content-Type: application/json\r\n", 400},
		{"POST /v1/hosts/" + f.hostID + "/results HTTP/1.1\r\nAuthorization: Bearer " + f.token + "\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Type: application/json\r\n", 400},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		// A chunked body whose first chunk arrives and whose end never
		// does.
		_, _ = conn.Write([]byte(c.head + "Host: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"))
		br := bufio.NewReader(conn)
		line := strings.SplitN(c.head, "\r\n", 2)[0]
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != c.want {
			t.Errorf("%s with a stalled body: %v, %v; want %d at once", line, resp, err, c.want)
			conn.Close()
			continue
		}
		_, err = io.Copy(io.Discard, br)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: connection not closed after the %d", line, c.want)
		}
		conn.Close()
	}
}
