package envsdk_test

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// lateProvider ignores its context: it answers a result once release is
// closed, and counts its executes.
type lateProvider struct {
	envsdk.Base
	started chan struct{}
	release chan struct{}
	runs    atomic.Int64
}

func (p *lateProvider) Execute(*envsdk.Ctx, *envsdk.Execution) (envapi.Receipt, error) {
	p.runs.Add(1)
	p.started <- struct{}{}
	<-p.release
	return envapi.Result([]byte(`"done late"`)), nil
}

// A result the provider reaches after its execute was stopped, within the
// stop grace, is not the answer: past its deadline the execute answers
// timeout, after Brain's cancel cancelled, and the result is never
// finished.
func TestLateResultIsNotFinished(t *testing.T) {
	ms := int64(50)
	for _, tc := range []struct {
		name     string
		deadline *int64
		stop     func(t *testing.T, srv *httptest.Server)
		want     string
	}{
		{"after the deadline", &ms, func(*testing.T, *httptest.Server) {
			time.Sleep(100 * time.Millisecond) // past the deadline, well within the grace
		}, envapi.CodeTimeout},
		{"after a cancel", nil, func(t *testing.T, srv *httptest.Server) {
			if r := send(t, srv, command(6, envapi.Cancel(5))).Receipt; r.Type != envapi.ReceiptAccepted {
				t.Fatalf("cancel answered %+v", r)
			}
		}, envapi.CodeCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBrain(t)
			p := &lateProvider{started: make(chan struct{}, 1), release: make(chan struct{})}
			srv := serve(t, p, &envsdk.Options{Token: token, StopGrace: 10 * time.Second})
			result := make(chan envapi.Receipt, 1)
			go func() { result <- send(t, srv, execute(5, "x", tc.deadline, b.grant(envapi.ToolMethods()...))).Receipt }()
			<-p.started
			tc.stop(t, srv)
			close(p.release)
			if r := <-result; r.Type != envapi.ReceiptFailure || r.Code != tc.want {
				t.Fatalf("a result %s answered %+v, want %s", tc.name, r, tc.want)
			}
			if n := b.count(envapi.MethodFinish); n != 0 {
				t.Fatalf("finish sent %d times %s", n, tc.name)
			}
		})
	}
}

// A cancel that overtakes its execute is kept: the execute, when it
// comes, answers cancelled without running, and so does a repeat of it.
func TestCancelBeforeExecute(t *testing.T) {
	p := &lateProvider{started: make(chan struct{}, 1), release: make(chan struct{})}
	close(p.release)
	srv := serve(t, p, nil)
	if r := send(t, srv, command(8, envapi.Cancel(7))).Receipt; r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel answered %+v", r)
	}
	for range 2 {
		if r := send(t, srv, execute(7, "x", nil, nil)).Receipt; r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
			t.Fatalf("execute after its cancel answered %+v, want cancelled", r)
		}
	}
	if n := p.runs.Load(); n != 0 {
		t.Fatalf("the cancelled execute ran %d times", n)
	}
	// Another sequence runs as usual.
	if r := send(t, srv, execute(9, "x", nil, nil)).Receipt; r.Type != envapi.ReceiptResult {
		t.Fatalf("an execute nobody cancelled answered %+v", r)
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
}

// A deadline_ms too large for a time.Duration (the protocol sets no cap)
// is no deadline, not one already past.
func TestHugeDeadlineIsNoDeadline(t *testing.T) {
	p := &lateProvider{started: make(chan struct{}, 1), release: make(chan struct{})}
	close(p.release)
	srv := serve(t, p, nil)
	for _, ms := range []int64{9_300_000_000_000, 1<<63 - 1} {
		if r := send(t, srv, execute(uint64(ms%1000)+1, "x", &ms, nil)).Receipt; r.Type != envapi.ReceiptResult {
			t.Fatalf("deadline_ms %d answered %+v, want the result", ms, r)
		}
		<-p.started
	}
}
