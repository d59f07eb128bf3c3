package envsdk_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// counting has a method with an effect of its own: "bump" counts its runs
// and answers the count; "hold" counts too, says it started and waits for
// release before answering.
type counting struct {
	envsdk.Base
	runs    atomic.Int64
	started chan struct{}
	release chan struct{}
}

func newCounting() *counting {
	return &counting{started: make(chan struct{}, 4), release: make(chan struct{})}
}

func (p *counting) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"bump": {Run: func(*envsdk.Ctx, json.RawMessage) (any, error) {
			return map[string]int64{"runs": p.runs.Add(1)}, nil
		}},
		"hold": {Run: func(*envsdk.Ctx, json.RawMessage) (any, error) {
			n := p.runs.Add(1)
			p.started <- struct{}{}
			<-p.release
			return map[string]int64{"runs": n}, nil
		}},
	}
}

func call(seq uint64, name string) []byte {
	return command(seq, envapi.Call(name, json.RawMessage(`{}`)))
}

// wantNotRerun checks that r is the answer a repeated execute gets:
// unknown, saying the sequence is never run twice.
func wantNotRerun(t *testing.T, what string, r envapi.Receipt) {
	t.Helper()
	if r.Type != envapi.ReceiptUnknown || !strings.Contains(r.Message, "never run twice") {
		t.Errorf("%s answered %s %s %s %s, want unknown: the sequence is never run twice", what, r.Type, r.Code, r.Message, r.Output)
	}
}

// A call Brain's delivery repeats at the same sequence after it answered
// runs its method once: the repeat answers unknown, as a repeated execute
// does, and the method's effect is not applied twice.
func TestRepeatedCallAfterAnswerNotRerun(t *testing.T) {
	p := newCounting()
	srv := serve(t, p, nil)
	if r := send(t, srv, call(3, "bump")).Receipt; r.Type != envapi.ReceiptResult || string(r.Output) != `{"runs":1}` {
		t.Fatalf("call answered %s %s, want the result {\"runs\":1}", r.Type, r.Output)
	}
	wantNotRerun(t, "the repeated call", send(t, srv, call(3, "bump")).Receipt)
	// Compare with what a repeated execute answers.
	send(t, srv, execute(4, "x", nil, nil))
	exec := send(t, srv, execute(4, "x", nil, nil)).Receipt
	wantNotRerun(t, "the repeated execute", exec)
	if n := p.runs.Load(); n != 1 {
		t.Errorf("the method ran %d times, want once", n)
	}
	// Another sequence is another call, and runs.
	if r := send(t, srv, call(5, "bump")).Receipt; string(r.Output) != `{"runs":2}` {
		t.Errorf("a call at a new sequence answered %s %s, want {\"runs\":2}", r.Type, r.Output)
	}
}

// A call repeated while its first delivery still runs is not run beside
// it: the repeat answers unknown at once, and the first its result.
func TestRepeatedCallWhileRunningNotRerun(t *testing.T) {
	p := newCounting()
	srv := serve(t, p, nil)
	first := make(chan envapi.Receipt, 1)
	go func() { first <- send(t, srv, call(6, "hold")).Receipt }()
	<-p.started
	repeat := make(chan envapi.Receipt, 1)
	go func() { repeat <- send(t, srv, call(6, "hold")).Receipt }()
	var again envapi.Receipt
	select {
	case again = <-repeat:
	case <-p.started:
		// The method runs a second time: let both answer.
		close(p.release)
		again = <-repeat
	}
	select {
	case <-p.release:
	default:
		close(p.release)
	}
	wantNotRerun(t, "the call repeated while it ran", again)
	if r := <-first; r.Type != envapi.ReceiptResult || string(r.Output) != `{"runs":1}` {
		t.Errorf("the first call answered %s %s, want the result {\"runs\":1}", r.Type, r.Output)
	}
	if n := p.runs.Load(); n != 1 {
		t.Errorf("the method ran %d times, want once", n)
	}
}

// A cancel that names a call's sequence before the call came is kept as
// for an execute: the call, and any repeat of it, answers cancelled and
// its method never runs.
func TestCallAfterItsCancelNotRun(t *testing.T) {
	p := newCounting()
	srv := serve(t, p, nil)
	if r := send(t, srv, command(8, envapi.Cancel(7))).Receipt; r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel answered %+v", r)
	}
	for i := range 2 {
		if r := send(t, srv, call(7, "bump")).Receipt; r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
			t.Errorf("delivery %d of the call after its cancel answered %s %s %s, want cancelled", i+1, r.Type, r.Code, r.Output)
		}
	}
	if n := p.runs.Load(); n != 0 {
		t.Errorf("the method ran %d times after its cancel, want never", n)
	}
}

// A call of a method the provider does not have ran nothing: a repeat of
// it says so again.
func TestRepeatedUnsupportedCallStaysUnsupported(t *testing.T) {
	srv := serve(t, newCounting(), nil)
	for i := range 2 {
		if r := send(t, srv, call(9, "nothing")).Receipt; r.Code != envapi.CodeUnsupported {
			t.Errorf("delivery %d of a call of no method answered %s %s, want unsupported", i+1, r.Type, r.Code)
		}
	}
}
