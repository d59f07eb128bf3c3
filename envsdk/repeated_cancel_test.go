package envsdk_test

import (
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// countingCanceler counts the calls of its Cancel: each may have effects
// of its own outside the handler (a process killed, a sandbox stopped).
type countingCanceler struct {
	envsdk.Base
	cancels atomic.Int64
}

func (p *countingCanceler) Cancel(*envsdk.Ctx, uint64) error {
	p.cancels.Add(1)
	return nil
}

// A cancel Brain's delivery repeats at its own sequence calls the
// provider's Cancel once: the repeat answers unknown, as a repeated
// execute or call does. A cancel at another sequence is another cancel.
func TestRepeatedCancelNotRerun(t *testing.T) {
	for _, target := range []struct {
		name string
		seq  uint64
	}{{"of an execute that completed", 4}, {"that overtook its execute", 40}} {
		t.Run(target.name, func(t *testing.T) {
			p := &countingCanceler{}
			srv := serve(t, p, nil)
			send(t, srv, execute(4, "x", nil, nil))
			if r := send(t, srv, command(5, envapi.Cancel(target.seq))).Receipt; r.Type != envapi.ReceiptAccepted {
				t.Fatalf("cancel answered %s %s %s, want accepted", r.Type, r.Code, r.Message)
			}
			wantNotRerun(t, "the repeated cancel", send(t, srv, command(5, envapi.Cancel(target.seq))).Receipt)
			if n := p.cancels.Load(); n != 1 {
				t.Errorf("Cancel was called %d times for one cancel delivered twice, want once", n)
			}
			if r := send(t, srv, command(6, envapi.Cancel(target.seq))).Receipt; r.Type != envapi.ReceiptAccepted {
				t.Errorf("a cancel at a new sequence answered %s %s %s, want accepted", r.Type, r.Code, r.Message)
			}
			if n := p.cancels.Load(); n != 2 {
				t.Errorf("Cancel was called %d times for two cancels, want twice", n)
			}
		})
	}
}
