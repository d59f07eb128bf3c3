package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// sized answers what its input asks for: a result or a method's output of
// {"bytes": n} bytes of JSON or, for "own_finish", finishes the Tool
// itself with such a result and reports how it went.
type sized struct {
	envsdk.Base
	ownFinish chan ownFinish
}

// ownFinish is how the Finish of an oversized outcome went, and the
// Finish made after it.
type ownFinish struct {
	first, second error
}

type sizedInput struct {
	Bytes int `json:"bytes"`
}

// jsonString is a JSON string of n bytes, quotes included.
func jsonString(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

func (p *sized) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var in sizedInput
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, err
	}
	var impl string
	_ = json.Unmarshal(x.Implementation, &impl)
	switch impl {
	case "result":
		return envapi.Result(jsonString(in.Bytes)), nil
	case "own_finish":
		big := envapi.OK(jsonString(in.Bytes))
		var f ownFinish
		_, f.first = x.Invocation.Finish(c.Context(), &big)
		small := envapi.ErrorOutcome(envapi.CodeOutputLimit, "the result is larger than Brain takes", false, nil)
		_, f.second = x.Invocation.Finish(c.Context(), &small)
		p.ownFinish <- f
		return envapi.Result(json.RawMessage(`"finished"`)), nil
	}
	return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, impl)
}

func (p *sized) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{"dump": {Run: func(_ *envsdk.Ctx, input json.RawMessage) (any, error) {
		var in sizedInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		return jsonString(in.Bytes), nil
	}}}
}

// sizedRig serves a sized provider to a fake Brain.
type sizedRig struct {
	p     *sized
	url   string
	brain *envtest.Brain
	cmds  *envtest.Commands
}

func newSizedRig(t *testing.T) *sizedRig {
	t.Helper()
	return newSizedRigWith(t, 0)
}

// newSizedRigWith is newSizedRig for a Brain that takes answers of at
// most maxAnswer bytes (0: its default).
func newSizedRigWith(t *testing.T, maxAnswer int64) *sizedRig {
	t.Helper()
	brain := envtest.NewBrain(t)
	p := &sized{ownFinish: make(chan ownFinish, 1)}
	srv := httptest.NewServer(envsdk.NewHandler(p, &envsdk.Options{Token: token, Client: brain.Client(), MaxAnswerBytes: maxAnswer}))
	t.Cleanup(srv.Close)
	cmds := envtest.NewCommands("ses_big", "box")
	cmds.Brain = brain
	return &sizedRig{p: p, url: srv.URL, brain: brain, cmds: cmds}
}

// post sends cmd as Brain delivers it: an answer Brain would record as an
// invalid receipt (larger than envapi.MaxResponseBytes, or one
// envapi.CheckResponse refuses) fails the test.
func (r *sizedRig) post(t *testing.T, cmd envapi.Command) envapi.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status, body, resp, err := envtest.Post(ctx, nil, r.url, token, cmd)
	if err != nil || resp == nil {
		t.Fatalf("%s answered %d (%d bytes): %v", cmd.Operation.Request.Type, status, len(body), err)
	}
	return resp.Receipt
}

func sizedFor(n int) json.RawMessage {
	raw, _ := json.Marshal(sizedInput{Bytes: n})
	return raw
}

// wantOutputLimit checks that r is the failure output_limit.
func wantOutputLimit(t *testing.T, r envapi.Receipt) {
	t.Helper()
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeOutputLimit {
		t.Fatalf("answered %s %s %.200s, want the failure %s", r.Type, r.Code, r.Message, envapi.CodeOutputLimit)
	}
}

// An answer larger than Brain takes would be recorded as an invalid
// receipt, its operation's outcome unknown: the handler answers the
// failure output_limit instead, which Brain takes. (The bound itself, and
// other receipts, are checked without HTTP in TestAnswerBodyBound.)
func TestOversizedAnswerIsOutputLimit(t *testing.T) {
	r := newSizedRig(t)
	wantOutputLimit(t, r.post(t, r.cmds.Call("dump", sizedFor(envapi.MaxResponseBytes))))
}

// A Brain whose operator set a bound of its own
// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES) is told to the handler: answers
// within it are sent as they are, a larger one is output_limit with that
// bound in its details, and such a result is not finished.
func TestAnswerBoundFollowsOptions(t *testing.T) {
	const bound = 4 << 10
	r := newSizedRigWith(t, bound)
	over := r.cmds.Execute(impl("result"), sizedFor(bound), nil)
	got := r.post(t, over)
	wantOutputLimit(t, got)
	var d struct {
		AnswerBytes int `json:"answer_bytes"`
		LimitBytes  int `json:"limit_bytes"`
	}
	if err := json.Unmarshal(got.Details, &d); err != nil || d.LimitBytes != bound || d.AnswerBytes <= bound {
		t.Errorf("details %s (%v), want limit_bytes %d and the answer's size past it", got.Details, err, bound)
	}
	if calls := r.brain.CallsFor("ses_big", over.Operation.Sequence); len(calls) != 0 {
		t.Errorf("an oversized result was finished: %v", calls)
	}
	fits := r.cmds.Execute(impl("result"), sizedFor(bound/2), nil)
	if got := r.post(t, fits); got.Type != envapi.ReceiptResult || len(got.Output) != bound/2 {
		t.Errorf("a result of %d bytes answered %s %s (%d bytes), want it as it is", bound/2, got.Type, got.Code, len(got.Output))
	}
	if got := r.post(t, r.cmds.Call("dump", sizedFor(2*bound))); got.Code != envapi.CodeOutputLimit {
		t.Errorf("a method's output of %d bytes answered %s %s, want %s", 2*bound, got.Type, got.Code, envapi.CodeOutputLimit)
	}
}

// A Tool's result whose answer would be too large for Brain is not
// finished either, even when the finish alone would fit Brain's callback
// bound (as here, one byte past the answer's bound): the execute answers
// output_limit and Brain committed nothing, so the two never disagree.
func TestOversizedResultIsNotFinished(t *testing.T) {
	r := newSizedRig(t)
	n := envapi.MaxResponseBytes - answerOverhead(t, r.cmds.Last()+1) + 1
	cmd := r.cmds.Execute(impl("result"), sizedFor(n), nil)
	wantOutputLimit(t, r.post(t, cmd))
	if calls := r.brain.CallsFor("ses_big", cmd.Operation.Sequence); len(calls) != 0 {
		t.Errorf("a result of %d bytes: %d callback calls sent (first %s), want none", n, len(calls), calls[0])
	}
}

// A provider's own Finish of an outcome larger than Brain takes is refused
// by Brain unread (413), which is no attempt: the Tool can still be
// finished, here with the failure output_limit.
func TestOversizedOwnFinishIsNoAttempt(t *testing.T) {
	r := newSizedRig(t)
	cmd := r.cmds.Execute(impl("own_finish"), sizedFor(envapi.MaxResponseBytes), nil)
	r.post(t, cmd)
	f := <-r.p.ownFinish
	if !errors.Is(f.first, envsdk.ErrTooLarge) || !errors.Is(f.first, envsdk.ErrRefused) || errors.Is(f.first, envsdk.ErrAckLost) {
		t.Errorf("Finish of an oversized outcome = %v, want an error matching ErrTooLarge and ErrRefused", f.first)
	}
	if f.second != nil {
		t.Errorf("Finish after the oversized one was refused = %v, want it committed", f.second)
	}
	calls := r.brain.CallsFor("ses_big", cmd.Operation.Sequence)
	if len(calls) != 2 || calls[0].Status != http.StatusRequestEntityTooLarge ||
		calls[1].Method != envapi.MethodFinish || !calls[1].Accepted() {
		t.Fatalf("calls %v, want the oversized finish refused 413, then the finish of output_limit", calls)
	}
	var o envapi.Outcome
	if err := json.Unmarshal(calls[1].Input, &o); err != nil || o.Error == nil || o.Error.Code != envapi.CodeOutputLimit {
		t.Errorf("finished with %s (%v), want the error outcome %s", calls[1].Input, err, envapi.CodeOutputLimit)
	}
}

// answerOverhead is the size of the answer to operation seq with a result
// whose output is a JSON string of n bytes, less n: what a handler writes
// around the output.
func answerOverhead(t *testing.T, seq uint64) int {
	t.Helper()
	out := jsonString(10)
	raw, err := json.Marshal(envapi.NewResponse(seq, envapi.Result(out)))
	if err != nil {
		t.Fatal(err)
	}
	return len(raw) + 1 - len(out) // json.Encoder ends the answer with a newline
}

func impl(name string) json.RawMessage {
	raw, _ := json.Marshal(name)
	return raw
}

// A bound past what a 32-bit int counts (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES
// of 2 GiB) is still a bound larger than Brain's default: an answer past
// the default is sent as it is, never replaced by output_limit under a
// smaller bound than the operator set. (The largest int64 is checked
// without HTTP in TestAnswerBoundOfAnyInt64.)
func TestAnswerBoundPast32Bits(t *testing.T) {
	n := envapi.MaxResponseBytes + 1
	for _, bound := range []int64{1 << 31} {
		srv := serve(t, &sized{}, &envsdk.Options{Token: token, MaxAnswerBytes: bound})
		status, data := post(t, srv.URL+"/v1/operations", token, command(1, envapi.Call("dump", sizedFor(n))))
		if status != http.StatusOK {
			t.Fatalf("bound %d: POST answered %d %.200s", bound, status, data)
		}
		resp, err := envapi.DecodeResponse(data)
		if err != nil {
			t.Fatalf("bound %d: decode the answer: %v", bound, err)
		}
		if r := resp.Receipt; r.Type != envapi.ReceiptResult || len(r.Output) != n {
			t.Errorf("bound %d: a method's output of %d bytes answered %s %s %.200s (%d bytes), want it as it is",
				bound, n, r.Type, r.Code, r.Message, len(r.Output))
		}
	}
}
