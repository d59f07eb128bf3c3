package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// admission sends one request with the server token and answers its
// status and body.
func (f *fixture) admission(method, path, key, contentType string, body []byte) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdmissionRoutes(t *testing.T) {
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), MaxModuleBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f := newFixture(t, Options{Agentloops: h})
	guest, other := builtin.DefaultWasm(), []byte("other module bytes")
	const oct = "application/octet-stream"

	if code, body := f.admission("POST", "/v1/agentloops", "k0", oct, nil); code != 400 || !strings.Contains(body, "invalid_request") {
		t.Fatalf("empty body: %d %s", code, body)
	}
	if code, body := f.admission("POST", "/v1/agentloops", "", oct, guest); code != 400 || !strings.Contains(body, "idempotency-key") {
		t.Fatalf("no key: %d %s", code, body)
	}
	if code, body := f.admission("POST", "/v1/agentloops", "k1", "application/json", guest); code != 415 {
		t.Fatalf("json body: %d %s", code, body)
	}
	if code, body := f.admission("POST", "/v1/agentloops", "k1", oct, make([]byte, 9<<20)); code != 413 {
		t.Fatalf("oversize: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", f.url+"/v1/agentloops", bytes.NewReader(guest))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("no token: %v %v", resp.StatusCode, err)
	}

	code, body := f.admission("POST", "/v1/agentloops", "k1", oct, guest)
	var a loophost.Admission
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a.Status != loophost.StatusAdmitted || len(a.ID) != 64 || a.Error != nil {
		t.Fatalf("admit: %d %s", code, body)
	}
	compiles := h.Compiles()
	if code, again := f.admission("POST", "/v1/agentloops", "k1", oct, guest); code != 200 || again != body {
		t.Fatalf("replay: %d %s", code, again)
	}
	if code, other := f.admission("POST", "/v1/agentloops", "k1", oct, other); code != 409 {
		t.Fatalf("same key, other body: %d %s", code, other)
	}
	if h.Compiles() != compiles {
		t.Fatal("a replay compiled")
	}
	if code, got := f.admission("GET", "/v1/agentloops/"+a.ID, "", "", nil); code != 200 || got != body {
		t.Fatalf("get: %d %s, want %s", code, got, body)
	}

	code, body = f.admission("POST", "/v1/agentloops", "k2", "", []byte("junk"))
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != "invalid_request" {
		t.Fatalf("junk: %d %s", code, body)
	}
	if code, got := f.admission("GET", "/v1/agentloops/"+a.ID, "", "", nil); code != 200 || got != body {
		t.Fatalf("get rejected: %d %s", code, got)
	}
	if code, _ := f.admission("GET", "/v1/agentloops/"+strings.Repeat("0", 64), "", "", nil); code != 404 {
		t.Fatalf("unknown id: %d", code)
	}
	if code, _ := f.admission("GET", "/v1/agentloops/xyz", "", "", nil); code != 400 {
		t.Fatalf("bad id: %d", code)
	}
}

// A module body is a request body: over BRAIN_MAX_REQUEST_BYTES it answers
// 413, for agentloops and Tools alike, and nothing is admitted.
func TestAdmissionHonoursTheRequestLimit(t *testing.T) {
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), ToolsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f := newFixture(t, Options{Agentloops: h, MaxRequestBytes: 1 << 10})
	body := bytes.Repeat([]byte("m"), 4<<10)
	for _, path := range []string{"/v1/agentloops", "/v1/tools"} {
		code, got := f.admission("POST", path, "k-"+path, "application/octet-stream", body)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(got, "invalid_request") {
			t.Errorf("POST %s with %d bytes over a limit of %d: %d %s, want 413", path, len(body), 1<<10, code, got)
		}
	}
	if _, ok := h.Admission(sha256Hex(body)); ok {
		t.Error("the oversize agentloop module was judged")
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// When the module cannot be stored, or compiled into the compilation
// cache (a full disk; here a directory that is gone), the admission
// answers 503 overloaded, as every mutation does when durable writes fail:
// the module is not judged, and its Idempotency-Key stays usable, so that
// once storage works again the same request admits it.
func TestAdmissionWhenStorageFails(t *testing.T) {
	dir, tools, cache := t.TempDir(), t.TempDir(), t.TempDir()
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: dir, ToolsDir: tools, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f := newFixture(t, Options{Agentloops: h})
	// withSection answers the default loop with a custom section: a module
	// of its own, compiled anew.
	withSection := func(name string) []byte {
		b := append([]byte(nil), builtin.DefaultWasm()...)
		b = append(b, 0, byte(2+len(name)), byte(len(name)))
		return append(append(b, name...), 0)
	}
	for _, c := range []struct {
		name, path, blocked, want string
		module                    []byte
	}{
		{"agentloop, modules directory", "/v1/agentloops", dir, loophost.StatusAdmitted, builtin.DefaultWasm()},
		{"invalid agentloop, modules directory", "/v1/agentloops", dir, loophost.StatusRejected, []byte("not a module")},
		{"agentloop, compilation cache", "/v1/agentloops", cache, loophost.StatusAdmitted, withSection("a")},
		{"invalid tool, tools directory", "/v1/tools", tools, loophost.StatusRejected, []byte("not a tool")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.blocked == cache {
				// wazero keeps its files in a directory of the cache
				// named by its version.
				sub, _ := filepath.Glob(filepath.Join(cache, "wazero-*"))
				if len(sub) != 1 {
					t.Fatalf("compilation cache holds %q", sub)
				}
				c.blocked = sub[0]
			}
			if err := os.RemoveAll(c.blocked); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.blocked, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			code, body := f.admission("POST", c.path, "k "+c.name, "application/octet-stream", c.module)
			if code != http.StatusServiceUnavailable || !strings.Contains(body, "overloaded") {
				t.Errorf("POST %s with storage failing: %d %s, want 503 overloaded", c.path, code, body)
			}
			if err := os.Remove(c.blocked); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(c.blocked, 0o700); err != nil {
				t.Fatal(err)
			}
			code, body = f.admission("POST", c.path, "k "+c.name, "application/octet-stream", c.module)
			var a loophost.Admission
			if err := json.Unmarshal([]byte(body), &a); code != http.StatusOK || err != nil || a.Status != c.want {
				t.Errorf("POST %s again with the same key once storage works: %d %s, want 200 %s", c.path, code, body, c.want)
			}
			if code, again := f.admission("POST", c.path, "other k "+c.name, "application/octet-stream", c.module); code != http.StatusOK || again != body {
				t.Errorf("POST %s with another key: %d %s, want %s", c.path, code, again, body)
			}
		})
	}
}

// TestAdmissionOfAnOversizeModuleAnswersAtOnce checks that a module whose
// declared length is over the bound is answered 413 without waiting for
// its bytes, and the connection is closed after the answer, as for any
// other request body.
func TestAdmissionOfAnOversizeModuleAnswersAtOnce(t *testing.T) {
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), ToolsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f := newFixture(t, Options{Agentloops: h, MaxRequestBytes: 1 << 10})
	for _, path := range []string{"/v1/agentloops", "/v1/tools"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(4 * time.Second))
		// The client declares 1 MiB and sends only its start.
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: k\r\n"+
			"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s", path, testToken, 1<<20, strings.Repeat("m", 100))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("POST %s declaring 1 MiB over a bound of 1 KiB: no answer: %v", path, err)
			c.Close()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close || !strings.Contains(string(b), "invalid_request") {
			t.Errorf("POST %s = %d close %v %s, want 413 closing the connection", path, resp.StatusCode, resp.Close, b)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("POST %s: after the 413 the connection was not closed: %v", path, err)
		}
		c.Close()
	}
}
