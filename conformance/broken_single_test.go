package conformance_test

import (
	"context"
	"encoding/json"
	"math"
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

// runsUnsupported starts work for a descriptor it does not support, and
// records a result of it through the callback, before it answers
// unsupported.
type runsUnsupported struct{ *reference }

func (p runsUnsupported) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	if err := json.Unmarshal(x.Implementation, &d); err == nil && d.Type == "reference" {
		return p.reference.Execute(c, x)
	}
	_, _ = x.Invocation.Result(context.WithoutCancel(c.Context()), envapi.OK(json.RawMessage(`{"started":true}`)))
	return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "unsupported descriptor %s", x.Implementation)
}

// answering answers every call of method with receipt instead of
// passing it on.
func answering(method string, receipt envapi.Receipt) func(http.Handler) http.Handler {
	return rewriting(func(cmd *envapi.Command) *envapi.Response {
		if req := cmd.Operation.Request; req.Type != envapi.RequestCall || req.Name != method {
			return nil
		}
		r := envapi.NewResponse(cmd.Operation.Sequence, receipt)
		return &r
	})
}

// teardownOnce answers a second teardown of a binding with a failure.
func teardownOnce() func(http.Handler) http.Handler {
	var mu sync.Mutex
	torn := map[string]bool{}
	return rewriting(func(cmd *envapi.Command) *envapi.Response {
		if cmd.Operation.Request.Type != envapi.RequestTeardown {
			return nil
		}
		key := envsdk.BindingKey(cmd.Operation)
		mu.Lock()
		again := torn[key]
		torn[key] = true
		mu.Unlock()
		if !again {
			return nil
		}
		r := envapi.NewResponse(cmd.Operation.Sequence, envapi.Failure(envapi.CodeUnavailable, "binding "+key+" is gone", false, nil))
		return &r
	})
}

// looseOperation passes each command through f, applied to its decoded
// operation, as a provider that checks fewer of its fields would serve
// it.
func looseOperation(f func(op map[string]any)) func(http.Handler) http.Handler {
	return lenient(func(body []byte) []byte {
		var doc map[string]any
		if json.Unmarshal(body, &doc) != nil {
			return nil
		}
		op, ok := doc["operation"].(map[string]any)
		if !ok {
			return nil
		}
		f(op)
		out, _ := json.Marshal(doc)
		return out
	})
}

// looseRequest is looseOperation applied to the operation's request.
func looseRequest(f func(req map[string]any)) func(http.Handler) http.Handler {
	return looseOperation(func(op map[string]any) {
		if req, ok := op["request"].(map[string]any); ok {
			f(req)
		}
	})
}

// TestCasesCatchTheirFaults runs single cases against providers broken
// in the one way each case is there to catch: the case fails, naming its
// rule.
func TestCasesCatchTheirFaults(t *testing.T) {
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	for _, tc := range []struct {
		id       string
		name     string
		provider func() envsdk.Provider
		wrap     func(http.Handler) http.Handler
		// untracked turns the handler's own binding tracking off: the
		// provider's own checks are all there is.
		untracked bool
	}{
		{id: "failure/unknown-descriptor", name: "runs-unsupported",
			provider: func() envsdk.Provider { return runsUnsupported{newReference()} }},
		{id: "failure/unknown-method", name: "answers-unknown-method",
			wrap: answering("conformance-no-such-method", envapi.Result(json.RawMessage(`{}`)))},
		{id: "lifecycle/teardown-repeatable", name: "teardown-once", wrap: teardownOnce()},
		{id: "lifecycle/after-teardown", name: "calls-after-teardown", untracked: true,
			provider: func() envsdk.Provider { p := newReference(); p.inspectsAnyBinding = true; return p }},
		{id: "methods/declared", name: "method-fails",
			wrap: answering("inspect", envapi.Failure(envapi.CodeEnvironmentFailed, "inspect broke", false, nil))},
		{id: "turn-end/release", name: "release-fails",
			wrap: answering("release", envapi.Failure(envapi.CodeEnvironmentFailed, "release broke", false, nil))},
		{id: "reporter/observation", name: "reports-nothing",
			wrap: answering("report", envapi.Result(json.RawMessage(`{"reported":true}`)))},
		// Run alone: without lazy/first-use, as for a provider that
		// does not declare lazy allocation.
		{id: "concurrency/shared-binding", name: "allocates-per-caller",
			provider: func() envsdk.Provider { p := newReference(); p.perCaller = true; return p }},
		{id: "cancel/at-most-once", name: "reruns-repeated-cancels", provider: newStopsBinding, wrap: runsRepeatedCancels},
		{id: "transport/zero-sequence", name: "takes-any-sequence", wrap: looseOperation(func(op map[string]any) {
			if n, ok := op["sequence"].(float64); ok && n < 1 {
				op["sequence"] = 1 << 40
			}
		})},
		{id: "transport/bad-identifier", name: "takes-any-name", wrap: looseOperation(func(op map[string]any) {
			for _, field := range []string{"session_id", "environment"} {
				if s, ok := op[field].(string); ok && !envapi.ValidIdentifier(s) {
					op[field] = "loose-" + strings.Map(func(r rune) rune {
						if r >= 'a' && r <= 'z' {
							return r
						}
						return 'x'
					}, s)
				}
			}
		})},
		{id: "transport/zero-sequence", name: "truncates-sequence", wrap: looseOperation(func(op map[string]any) {
			if n, ok := op["sequence"].(float64); ok && n != math.Trunc(n) {
				op["sequence"] = math.Trunc(n)
			}
		})},
		{id: "transport/zero-sequence", name: "cancels-any-target", wrap: looseRequest(func(req map[string]any) {
			if n, ok := req["target_sequence"].(float64); ok && n < 1 {
				req["target_sequence"] = 1 << 40
			}
		})},
		{id: "transport/bad-identifier", name: "calls-any-name", wrap: looseRequest(func(req map[string]any) {
			if s, ok := req["name"].(string); ok && !envapi.ValidIdentifier(s) {
				req["name"] = "loose-method"
			}
		})},
		{id: "transport/missing-field", name: "defaults-operation-fields", wrap: looseOperation(func(op map[string]any) {
			for field, zero := range map[string]any{"session_id": "loose-session", "environment": "loose-environment",
				"sequence": 1 << 40, "request": map[string]any{"type": "detach"}} {
				if _, ok := op[field]; !ok {
					op[field] = zero
				}
			}
		})},
		{id: "transport/missing-field", name: "defaults-request-fields", wrap: looseRequest(func(req map[string]any) {
			switch req["type"] {
			case "cancel":
				if _, ok := req["target_sequence"]; !ok {
					req["target_sequence"] = 1 << 40
				}
			case "call":
				if _, ok := req["name"]; !ok {
					req["name"] = "loose-method"
				}
			}
		})},
		{id: "reporter/observation", name: "retries-lost-report",
			provider: func() envsdk.Provider { return retriesReports{newReference()} }},
		{id: "transport/refused-no-effect", name: "serves-invalid-then-refuses", wrap: servesInvalidThenRefuses},
		// Puts a deadline of its own in place of an absent one.
		{id: "deadline/absent", name: "default-deadline", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			if req := &cmd.Operation.Request; req.Type == envapi.RequestExecute && req.DeadlineMs == nil {
				ms := int64(sleepMs / 3)
				req.DeadlineMs = &ms
			}
			return nil
		})},
		{id: "lifecycle/setup-at-most-once", name: "runs-repeated-setups",
			wrap: func(next http.Handler) http.Handler { return movesRepeats(envapi.RequestSetup, next) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := testOptions
			opts.Run = []string{tc.id}
			newProvider := tc.provider
			if newProvider == nil {
				newProvider = func() envsdk.Provider { return newReference() }
			}
			sdk := sdk
			sdk.UntrackedBindings = tc.untracked
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveProvider(ct, newProvider, sdk, tc.wrap)
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, opts.Run) {
				t.Fatalf("failed cases %v, want %v\n%s", got, opts.Run, details(report))
			}
			for _, r := range report.Results {
				if r.Status == conformance.Fail && !strings.Contains(strings.Join(r.Log, "\n"), "rule: ") {
					t.Errorf("%s failed without naming a rule: %v", r.ID, r.Log)
				}
			}
		})
	}
	// The unbroken provider passes each of these cases.
	opts := testOptions
	opts.Run = []string{"failure/unknown-descriptor", "failure/unknown-method", "lifecycle/teardown-repeatable", "lifecycle/after-teardown", "concurrency/shared-binding",
		"methods/declared", "turn-end/release", "reporter/observation", "transport/zero-sequence", "transport/bad-identifier",
		"cancel/at-most-once", "transport/missing-field", "lifecycle/setup-at-most-once", "transport/refused-no-effect", "deadline/absent"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, sdk, nil)
	}, &opts)
	if failed := report.Failed(); len(failed) > 0 {
		t.Errorf("the reference provider failed %v\n%s", failed, details(report))
	}
}
