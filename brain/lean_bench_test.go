package brain_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// leanConn is one keep-alive connection of the lean load generator.
type leanConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// leanClient answers a turn function that POSTs a message request to
// base (http://host:port) over one keep-alive connection per session,
// the request written by http.Request.Write and the answer read by
// http.ReadResponse: the standard library's own HTTP/1.1 encoding without
// a Transport's connection pool and its goroutines, as a load generator
// such as wrk drives a server.
func leanClient(b *testing.B, base, token string) func(*client.Session) error {
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	var conns sync.Map
	b.Cleanup(func() {
		conns.Range(func(_, v any) bool { v.(*leanConn).c.Close(); return true })
	})
	var keys atomic.Int64
	body, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: "hello"}})
	return func(s *client.Session) error {
		v, ok := conns.Load(s.ID)
		if !ok {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				return err
			}
			v, _ = conns.LoadOrStore(s.ID, &leanConn{c: c, br: bufio.NewReader(c), bw: bufio.NewWriter(c)})
		}
		lc := v.(*leanConn)
		req, err := http.NewRequest(http.MethodPost, base+"/v1/sessions/"+s.ID+"/messages", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", strconv.FormatInt(keys.Add(1), 10))
		if err := req.Write(lc.bw); err != nil {
			return err
		}
		if err := lc.bw.Flush(); err != nil {
			return err
		}
		resp, err := http.ReadResponse(lc.br, req)
		if err != nil {
			return err
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var sum api.SessionSummary
		if err := json.Unmarshal(out, &sum); err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("lean client: %d %s: %v", resp.StatusCode, out, err)
		}
		return nil
	}
}
