package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// completing answers its echo with steps of its own: each step is one
// service call body posted to the execute's callback grant, in order,
// and the execute then answers receipt; the later steps are posted once
// that answer is written, in the background.
type completing struct {
	*reference
	steps   func(output json.RawMessage) []string
	receipt func(output json.RawMessage) envapi.Receipt
	later   []string
	written *written
}

// written tells when the answer to a command was written: it wraps the
// provider's handler and closes the channel of the command's session and
// sequence once the answer is flushed to the connection.
type written struct {
	mu   sync.Mutex
	done map[string]chan struct{}
}

func (w *written) of(session string, seq uint64) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		w.done = map[string]chan struct{}{}
	}
	key := fmt.Sprintf("%s/%d", session, seq)
	if w.done[key] == nil {
		w.done[key] = make(chan struct{})
	}
	return w.done[key]
}

func (w *written) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(rw, r)
		if cmd, err := envapi.DecodeCommand(body); err == nil {
			http.NewResponseController(rw).Flush()
			close(w.of(cmd.Operation.SessionID, cmd.Operation.Sequence))
		}
	})
}

func post(ctx context.Context, g *envapi.Grant, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("service call: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("service call %s answered %d", body, res.StatusCode)
	}
	return nil
}

func (p completing) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	_ = json.Unmarshal(x.Implementation, &d)
	g := c.Request.Callback
	if d.Name != "echo" || g == nil {
		return p.reference.Execute(c, x)
	}
	if _, err := p.binding(c); err != nil {
		return envapi.Receipt{}, err
	}
	out := mustJSON(map[string]json.RawMessage{"echo": x.Input})
	for _, body := range p.steps(out) {
		if err := post(c.Context(), g, body); err != nil {
			return envapi.Receipt{}, err
		}
	}
	if len(p.later) > 0 {
		ctx := context.WithoutCancel(c.Context())
		answered := p.written.of(c.SessionID, c.Sequence)
		go func() {
			<-answered
			for _, body := range p.later {
				_ = post(ctx, g, body)
			}
		}()
	}
	return p.receipt(out), nil
}

func call(method string, input any) string {
	if input == nil {
		return `{"method":"` + method + `"}`
	}
	return string(mustJSON(map[string]any{"method": method, "input": input}))
}

// completionCases are the cases whose echo must complete with its output.
var completionCases = []string{"contract/echo", "lifecycle/full", "exec/finish", "exec/finish-once", "exec/ungranted-method"}

func runCompletion(t *testing.T, p completing) conformance.Report {
	t.Helper()
	opts := testOptions
	opts.Run = completionCases
	return conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		w := &written{}
		return serveProvider(ct, func() envsdk.Provider {
			q := p
			q.reference, q.written = newReference(), w
			return q
		}, envsdk.Options{Token: refToken, StopGrace: time.Second}, w.wrap)
	}, &opts)
}

// The protocol lets a Tool give its output in several ways before it
// finishes: the outcome of finish itself, or, when finish carries no new
// result (null or no input at all), the last outcome given to the result
// or returned service. Providers completing their Tools each way pass.
func TestToolCompletionsTheProtocolAllows(t *testing.T) {
	for name, p := range map[string]completing{
		"result-then-finish-without-input": {
			steps: func(out json.RawMessage) []string {
				return []string{call("result", envapi.OK(out)), call("finish", nil)}
			},
			receipt: func(json.RawMessage) envapi.Receipt { return envapi.Returned(nil) },
		},
		"returned-with-outcome-then-finish-null": {
			steps: func(out json.RawMessage) []string {
				return []string{call("returned", envapi.OK(out)), `{"method":"finish","input":null}`}
			},
			receipt: func(json.RawMessage) envapi.Receipt { return envapi.Returned(nil) },
		},
		"returned-envelope-then-finish-without-input": {
			steps: func(json.RawMessage) []string { return nil },
			receipt: func(out json.RawMessage) envapi.Receipt {
				return envapi.Returned(mustJSON(envapi.OK(out)))
			},
			later: []string{call("finish", nil)},
		},
		"finish-with-outcome": {
			steps: func(out json.RawMessage) []string {
				return []string{call("result", envapi.OK(json.RawMessage(`"draft"`))), call("finish", envapi.OK(out))}
			},
			receipt: func(json.RawMessage) envapi.Receipt { return envapi.Returned(nil) },
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			report := runCompletion(t, p)
			if got := report.Passed(); !slices.Equal(got, completionCases) {
				t.Errorf("passed %v, want %v\n%s", got, completionCases, details(report))
			}
		})
	}
}

// A Tool whose last word before a bare finish is an error outcome has
// failed, whatever the execute's receipt said: the echo cases fail.
func TestToolFinishedAfterAnErrorResultFails(t *testing.T) {
	report := runCompletion(t, completing{
		steps: func(out json.RawMessage) []string {
			return []string{
				call("result", envapi.OK(out)),
				call("result", envapi.ErrorOutcome("echo_failed", "the echo broke", false, nil)),
				`{"method":"finish","input":null}`,
			}
		},
		receipt: func(out json.RawMessage) envapi.Receipt { return envapi.Returned(out) },
	})
	if got := report.Failed(); !slices.Equal(got, completionCases) {
		t.Errorf("failed %v, want %v\n%s", got, completionCases, details(report))
	}
	for _, r := range report.Results {
		if log := strings.Join(r.Log, "\n"); r.Status == conformance.Fail && !strings.Contains(log, "echo_failed") {
			t.Errorf("%s does not show the error outcome the Tool finished with:\n%s", r.ID, log)
		}
	}
}

// needsEmit refuses to run its echo without the emit service.
type needsEmit struct{ *reference }

func (p needsEmit) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	if !x.Invocation.Granted(envapi.MethodEmit) {
		return envapi.Receipt{}, envsdk.Fail("not_granted", "this Tool reports its progress and needs the emit service")
	}
	return p.reference.Execute(c, x)
}

// An execution may refuse to run without a service it needs; what the
// grant rule asks is only that it calls nothing the grant does not list.
func TestExecutionRefusingAReducedGrantPasses(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/ungranted-method"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveProvider(ct, func() envsdk.Provider { return needsEmit{newReference()} },
			envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
	}, &opts)
	if got := report.Passed(); !slices.Equal(got, opts.Run) {
		t.Errorf("passed %v, want %v\n%s", got, opts.Run, details(report))
	}
}

// emitsAnyway calls emit whether granted or not, then fails when refused.
type emitsAnyway struct{ *reference }

func (p emitsAnyway) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	if g := c.Request.Callback; g != nil && !x.Invocation.Granted(envapi.MethodEmit) {
		if err := post(c.Context(), g, call("emit", map[string]any{"event_type": "progress", "data": 1})); err != nil {
			return envapi.Receipt{}, envsdk.Fail("not_granted", err.Error())
		}
	}
	return p.reference.Execute(c, x)
}

// An execution that calls a service its grant does not list fails the
// case even when it then answers a failure.
func TestExecutionCallingUngrantedThenFailingFails(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/ungranted-method"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveProvider(ct, func() envsdk.Provider { return emitsAnyway{newReference()} },
			envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
	}, &opts)
	if got := report.Failed(); !slices.Equal(got, opts.Run) {
		t.Errorf("failed %v, want %v\n%s", got, opts.Run, details(report))
	}
	if log := strings.Join(report.Results[0].Log, "\n"); !strings.Contains(log, `used "emit"`) {
		t.Errorf("the failure does not name the ungranted method:\n%s", log)
	}
}

// A Tool that calls finish without an outcome before it answers has
// finished with no result: Brain closes it ok with a null value then, and
// the output its returned receipt carries afterwards is not the Tool's.
// The echo cases fail, saying so, though the receipt holds the right
// output.
func TestToolFinishedBeforeItsReceiptFails(t *testing.T) {
	report := runCompletion(t, completing{
		steps:   func(json.RawMessage) []string { return []string{call("finish", nil)} },
		receipt: func(out json.RawMessage) envapi.Receipt { return envapi.Returned(out) },
	})
	if got := report.Failed(); !slices.Equal(got, completionCases) {
		t.Errorf("failed %v, want %v\n%s", got, completionCases, details(report))
	}
	for _, r := range report.Results {
		if log := strings.Join(r.Log, "\n"); r.Status == conformance.Fail && !strings.Contains(log, "output null") {
			t.Errorf("%s does not show the null output the Tool finished with:\n%s", r.ID, log)
		}
	}
}
