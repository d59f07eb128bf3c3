package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// binary is the brain binary TestMain built.
var binary string

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDir); dir != "" {
		os.Exit(runChild(dir))
	}
	if dir := os.Getenv(fanOutFloorEnv); dir != "" {
		os.Exit(runFanOutFloor(dir))
	}
	if os.Getenv(hostChildEnv) != "" {
		os.Exit(runHostChild())
	}
	dir, err := os.MkdirTemp("", "brain-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "brain")
	// The fault-injection hooks of crash tests exist only in a build with
	// this tag.
	args := []string{"build", "-tags", "braintest_faults", "-o", binary}
	if raceEnabled && os.Getenv("BRAIN_E2E_RACE") == "1" {
		// The server under the race detector is an order of magnitude
		// slower; in-process tests of httpapi and client cover its races.
		args = append(args, "-race")
	}
	args = append(args, "github.com/brain-in-go/brain/brain/cmd/brain")
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building brain:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if err := checkAPI(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := reportAPI(m.Run())
	os.RemoveAll(dir)
	os.Exit(code)
}

const token = "e2e-token"

// server is one running brain serve process.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	URL     string
	DataDir string
	Token   string
	stderr  *braintest.Buffer
	done    chan struct{}
	waitErr error
	api     *client.Client // the Go client of events
}

// start runs brain serve on a free port over dataDir (a fresh one when
// empty) with BRAIN_API_TOKEN=token unless env sets auth otherwise. It
// returns once the server printed its URL.
func start(t *testing.T, dataDir string, env ...string) *server {
	t.Helper()
	s, err := tryStart(t, dataDir, env...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryStart(t *testing.T, dataDir string, env ...string) (*server, error) {
	t.Helper()
	if dataDir == "" {
		dataDir = filepath.Join(t.TempDir(), "data")
	}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "BRAIN_LISTEN=127.0.0.1:0", "BRAIN_DATA_DIR="+dataDir, "BRAIN_API_TOKEN="+token, "BRAIN_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{t: t, cmd: cmd, DataDir: dataDir, Token: token, stderr: &braintest.Buffer{}, done: make(chan struct{})}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "BRAIN_API_TOKEN="); ok {
			s.Token = v
		}
		if kv == "BRAIN_NO_AUTH=1" {
			s.Token = ""
		}
	}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Brain is serving on "); ok {
				urls <- u
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s.URL = <-urls:
		watchAPI(t, s.URL)
	case <-s.done:
		return nil, fmt.Errorf("brain serve exited before serving: %v\n%s", s.waitErr, s.stderr)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("brain serve did not start\n%s", s.stderr)
	}
	t.Cleanup(func() { s.kill() })
	return s, nil
}

// kill SIGKILLs the process and waits for it.
func (s *server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.t.Fatalf("brain serve did not exit after SIGTERM\n%s", s.stderr)
	}
	if s.waitErr != nil {
		s.t.Fatalf("brain serve exited with %v after SIGTERM\n%s", s.waitErr, s.stderr)
	}
}

// reply is an HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) apiError(t *testing.T) api.ApiError {
	t.Helper()
	var e api.ApiError
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("body %q is not an ApiError", r.Body)
	}
	return e
}

// httpClient sends the tests' requests; TestMain makes it check every
// response against the OpenAPI document.
var httpClient = &http.Client{}

// newRequest builds a request with the server token; headers alternate
// name and value, and an empty value removes the header.
func newRequest(s *server, method, path, body string, headers ...string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return req, nil
}

// do sends a request (see newRequest) and reads the answer.
func (s *server) do(method, path, body string, headers ...string) reply {
	s.t.Helper()
	req, err := newRequest(s, method, path, body, headers...)
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", method, path, err, s.stderr)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

// client answers a Go client of the server.
func (s *server) client() *client.Client {
	c, err := client.New(s.URL, &client.Options{Token: s.Token, HTTPClient: httpClient})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

const createBody = `{"model":{"provider":"scripted","name":"demo"}}`

var keySeq struct {
	mu sync.Mutex
	n  int
}

// key answers a fresh idempotency key.
func key() string {
	keySeq.mu.Lock()
	defer keySeq.mu.Unlock()
	keySeq.n++
	return fmt.Sprintf("key-%d-%d", time.Now().UnixNano(), keySeq.n)
}

// create creates a session and answers its summary.
func (s *server) create() api.SessionSummary {
	s.t.Helper()
	r := s.do("POST", "/v1/sessions", createBody, "Idempotency-Key", key())
	if r.Status != 200 {
		s.t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var sum api.SessionSummary
	json.Unmarshal(r.Body, &sum)
	return sum
}

// send runs a synchronous turn.
func (s *server) send(id, message string) reply {
	s.t.Helper()
	b, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: message}})
	return s.do("POST", "/v1/sessions/"+id+"/messages", string(b), "Idempotency-Key", key())
}

// events reads every public event of a session through the Go client.
func (s *server) events(id string) []api.Event {
	s.t.Helper()
	if s.api == nil {
		s.api = s.client()
	}
	return sessionEvents(s.t, s.api, id)
}

// sessionEvents reads every public event of a session through c.
func sessionEvents(t *testing.T, c *client.Client, id string) []api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var all []api.Event
	for ev, err := range c.Sessions.Open(id).Events(ctx, 0) {
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		all = append(all, ev)
	}
	return all
}

// pollEvent polls list until an event satisfies match and answers it.
func pollEvent(t *testing.T, list func() []api.Event, match func(api.Event) bool) api.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs := list()
		for _, ev := range evs {
			if match(ev) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching event in %v", kinds(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *server) summary(id string) api.SessionSummary {
	s.t.Helper()
	r := s.do("GET", "/v1/sessions/"+id, "")
	if r.Status != 200 {
		s.t.Fatalf("get = %d %s", r.Status, r.Body)
	}
	var sum api.SessionSummary
	json.Unmarshal(r.Body, &sum)
	return sum
}

func kinds(evs []api.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.EventType
	}
	return out
}

func count(evs []api.Event, kind string) int {
	n := 0
	for _, e := range evs {
		if e.EventType == kind {
			n++
		}
	}
	return n
}

// stream opens an SSE connection.
func (s *server) stream(ctx context.Context, id, query string, headers ...string) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/sessions/"+id+"/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("stream = %d %s", resp.StatusCode, b)
	}
	return resp
}

// frame is one server-sent event.
type frame struct {
	ID, Event, Data string
	HasID           bool
}

// frames parses a stream, calling each until it answers false or the
// stream ends; it reports whether the stream ended on its own.
func frames(r io.Reader, each func(frame) bool) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 80<<20)
	var f frame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f.Event != "" || f.Data != "" {
				if !each(f) {
					return false
				}
			}
			f = frame{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			f.ID, f.HasID = line[4:], true
		case strings.HasPrefix(line, "event: "):
			f.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			f.Data = line[6:]
		}
	}
	return true
}

// freePort answers a loopback port nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
