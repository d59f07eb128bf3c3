package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestHostUnkeyedAnswerOfAnotherServerIsNotBrains: a host tool's model
// call and its call of a method that records nothing are sent once,
// without a key. Answered 200 by something other than Brain (a captive
// portal's page, another service's JSON), they fail with an
// *api.ApiError saying the answer is not Brain's, rather than a bare
// decoding error or a page that is not JSON handed to the handler as a
// method's result (a method answers any JSON value: foreign JSON cannot
// be told from it); each is sent once.
func TestHostUnkeyedAnswerOfAnotherServerIsNotBrains(t *testing.T) {
	for name, body := range map[string]string{
		"captive portal": "<html><body>Sign in to the network</body></html>",
		"foreign JSON":   `{"ok":true,"choices":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			sent := map[string]int{}
			srv, _ := fakeHostServer(t, []string{invokeFrame(4, time.Now().Add(time.Minute), "ask", "{}")}, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				sent[r.URL.Path]++
				mu.Unlock()
				if strings.HasSuffix(r.URL.Path, "/results") {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"sequence":9}`)
					return
				}
				_, _ = io.WriteString(w, body)
			})
			_, h := resumeFakeHost(t, srv.URL, 0)
			type outcome struct{ model, call error }
			done := make(chan outcome, 1)
			h.Handle("ask", func(ctx context.Context, tc *ToolCall) (api.Outcome, error) {
				var o outcome
				_, o.model = tc.Model(ctx, api.ModelRequest{Messages: []api.Message{}})
				var out []byte
				out, o.call = tc.Call(ctx, "telemetry", []byte(`{}`))
				if o.call == nil {
					o.call = errors.New("answered " + string(out))
				}
				done <- o
				return OK("done"), nil
			})
			var o outcome
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the handler never ran")
			}
			checked := map[string]error{"Model": o.model}
			if strings.HasPrefix(body, "<") {
				checked["Call"] = o.call
			}
			for what, err := range checked {
				var ae *api.ApiError
				if !errors.As(err, &ae) || !errors.Is(err, api.ErrInternal) || !strings.Contains(ae.Message, "not answered by Brain") {
					t.Errorf("%s answered 200 with %q: %v, want an *api.ApiError saying the answer is not Brain's", what, body, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, route := range []string{"/model", "/call"} {
				if n := sent["/v1/hosts/host_aaaaaaaaaaaaaaaaaaaa"+route]; n != 1 {
					t.Errorf("%s was sent %d times, want once", route, n)
				}
			}
		})
	}
}

// TestHostModelCallRedirectedIsNotAnswered: a host tool's model call
// answered with a redirect that the HTTP client follows with a GET (a
// proxy sending clients from http to https) was not passed on to Brain:
// it fails with ErrRedirected, sent once, rather than take the answer of
// the GET for the model's.
func TestHostModelCallRedirectedIsNotAnswered(t *testing.T) {
	var mu sync.Mutex
	sent := map[string]int{}
	srv, _ := fakeHostServer(t, []string{invokeFrame(4, time.Now().Add(time.Minute), "ask", "{}")}, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		sent[r.Method+" "+r.URL.Path]++
		mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/model"):
			http.Redirect(w, r, "/moved", http.StatusSeeOther)
		case r.URL.Path == "/moved":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":[{"type":"text","text":"from elsewhere"}]},"stop_reason":"end_turn","usage":{}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"sequence":9}`)
		}
	})
	_, h := resumeFakeHost(t, srv.URL, 0)
	type outcome struct {
		res api.ModelResult
		err error
	}
	done := make(chan outcome, 1)
	h.Handle("ask", func(ctx context.Context, tc *ToolCall) (api.Outcome, error) {
		res, err := tc.Model(ctx, api.ModelRequest{Messages: []api.Message{}})
		done <- outcome{res, err}
		return OK("done"), nil
	})
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler never ran")
	}
	if !errors.Is(o.err, ErrRedirected) {
		t.Fatalf("model call redirected as a GET answered %+v, %v; want ErrRedirected", o.res, o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := sent["POST /v1/hosts/host_aaaaaaaaaaaaaaaaaaaa/model"]; n != 1 {
		t.Errorf("the model call was sent %d times, want once", n)
	}
}
