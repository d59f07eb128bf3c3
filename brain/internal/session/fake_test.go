package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// fakeEnvs is an in-process Environments. Each environment name maps to a
// behaviour:
//
//	echo     execute answers result ok(input)
//	hang     execute blocks until its context ends (never answers itself)
//	hangcancel  as hang, and a cancel blocks until its context ends too
//	fail     every operation fails at the transport
//	refuse   execute answers a failure receipt
//	loopresult / loopsnapshot  execute answers a TurnOutput {result} / one
//	         that also carries transcript and kv snapshots
//	selftimeout / selfcancel  execute answers a timeout / cancelled
//	         failure receipt with a message (and details)
//	returner execute answers returned; the tool finishes when the test
//	         calls Finish through Engine.Execution
//	emitter  execute emits an event through its callback, then results
//	unknownteardown  teardown answers unknown
//	release  setup registers the turn-end method release
//	releasereturner  both release and returner
//	accepted execute answers accepted (no result)
//	progress execute answers a progress receipt (no result)
//	callecho a call answers a result whose output is the call's input
//	resultreturner  execute commits result ok {"rows":3} and returned
//	         with JSON null through its callback, then answers returned;
//	         the tool finishes when the test calls Finish
type fakeEnvs struct {
	mu        sync.Mutex
	behaviour map[string]string
	ops       []Operation
	onOp      func(Operation) // called before the behaviour runs
	engine    *Engine
	hold      chan struct{} // setup/detach/teardown of "hangops" wait on it
}

func newFakeEnvs(b map[string]string) *fakeEnvs { return &fakeEnvs{behaviour: b} }

func (f *fakeEnvs) record(op Operation) string {
	f.mu.Lock()
	f.ops = append(f.ops, op)
	hook := f.onOp
	b := f.behaviour[op.Environment]
	f.mu.Unlock()
	if hook != nil {
		hook(op)
	}
	return b
}

// opsOf lists the recorded operations of a request type.
func (f *fakeEnvs) opsOf(t envapi.RequestType) []Operation {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Operation
	for _, op := range f.ops {
		if op.Request.Type == t {
			out = append(out, op)
		}
	}
	return out
}

var errTransport = errors.New("fake: connection refused")

func (f *fakeEnvs) lifecycle(ctx context.Context, op Operation) (envapi.Receipt, error) {
	switch f.record(op) {
	case "fail":
		return envapi.Receipt{}, errTransport
	case "unknownteardown":
		if op.Request.Type == envapi.RequestTeardown {
			return envapi.Unknown("lost track of the teardown"), nil
		}
	case "release", "releasereturner":
		if op.Request.Type == envapi.RequestSetup {
			return envapi.AcceptedOnTurnEnd("release"), nil
		}
	case "releasehang":
		// Setup asks for a turn-end release, which never answers.
		if op.Request.Type == envapi.RequestSetup {
			return envapi.AcceptedOnTurnEnd("release"), nil
		}
		if op.Request.Type == envapi.RequestCall {
			<-ctx.Done()
			return envapi.Receipt{}, ctx.Err()
		}
	case "callecho":
		if op.Request.Type == envapi.RequestCall {
			return envapi.Result(op.Request.Input), nil
		}
	case "hangops":
		select {
		case <-f.hold:
		case <-ctx.Done():
			return envapi.Receipt{}, ctx.Err()
		}
	}
	return envapi.Accepted(), nil
}

func (f *fakeEnvs) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	switch op.Request.Type {
	case envapi.RequestExecute:
		return f.execute(ctx, op)
	case envapi.RequestCancel:
		if f.record(op) == "hangcancel" {
			<-ctx.Done()
			return envapi.Receipt{}, ctx.Err()
		}
		return envapi.Accepted(), nil
	}
	return f.lifecycle(ctx, op)
}

func (f *fakeEnvs) execute(ctx context.Context, op Operation) (envapi.Receipt, error) {
	switch f.record(op) {
	case "echo", "release":
		return envapi.Result(mustJSON(envapi.OK(op.Request.Input))), nil
	case "hang", "hangcancel":
		<-ctx.Done()
		return envapi.Receipt{}, ctx.Err()
	case "slowstop":
		// Stops a while after it is told to.
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond)
		return envapi.Receipt{}, ctx.Err()
	case "fail":
		return envapi.Receipt{}, errTransport
	case "refuse":
		return envapi.Failure("unsupported", "m", true, json.RawMessage(`{"x":1}`)), nil
	case "loopresult":
		return envapi.Result(json.RawMessage(`{"result":"fine"}`)), nil
	case "loopsnapshot":
		return envapi.Result(json.RawMessage(`{"result":1,"transcript":[],"kv":{}}`)), nil
	case "selftimeout":
		return envapi.Failure(envapi.CodeTimeout, "deadline expired", false, json.RawMessage(`{"cleanup_error":"pid 7 survived"}`)), nil
	case "selfcancel":
		return envapi.Failure(envapi.CodeCancelled, "cancelled by the operator", true, nil), nil
	case "returner", "releasereturner":
		return envapi.Returned(nil), nil
	case "accepted":
		return envapi.Accepted(), nil
	case "progress":
		return envapi.Progress(json.RawMessage(`{"done":1,"of":2}`)), nil
	case "resultreturner":
		svc, err := f.engine.Execution(op.SessionID, op.Sequence)
		if err != nil {
			return envapi.Receipt{}, err
		}
		if _, err := svc.Call(ctx, envapi.MethodResult, json.RawMessage(`{"status":"ok","value":{"rows":3}}`)); err != nil {
			return envapi.Failure("result_failed", err.Error(), false, nil), nil
		}
		if _, err := svc.Call(ctx, envapi.MethodReturned, json.RawMessage(`null`)); err != nil {
			return envapi.Failure("returned_failed", err.Error(), false, nil), nil
		}
		return envapi.Returned(nil), nil
	case "emitter":
		svc, err := f.engine.Execution(op.SessionID, op.Sequence)
		if err != nil {
			return envapi.Receipt{}, err
		}
		if _, err := svc.Emit(ctx, "progress", json.RawMessage(`{"origin":{"kind":"agentloop","sequence":1},"step":1}`)); err != nil {
			return envapi.Failure("emit_failed", err.Error(), false, nil), nil
		}
		return envapi.Result(mustJSON(envapi.OK(json.RawMessage(`"emitted"`)))), nil
	}
	return envapi.Failure(envapi.CodeUnsupported, fmt.Sprintf("no behaviour for %q", op.Environment), false, nil), nil
}
