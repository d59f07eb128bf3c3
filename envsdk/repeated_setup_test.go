package envsdk_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// setupCounter counts its setups and teardowns; a setup whose
// configuration is {"fail":true} fails after it counted.
type setupCounter struct {
	envsdk.Base
	setups, teardowns atomic.Int64
}

func (p *setupCounter) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	p.setups.Add(1)
	var cfg struct {
		Fail bool `json:"fail"`
	}
	if err := c.DecodeConfiguration(&cfg); err != nil {
		return envsdk.SetupResult{}, err
	}
	if cfg.Fail {
		return envsdk.SetupResult{}, envsdk.Fail("no_capacity", "no room for the binding")
	}
	return envsdk.SetupResult{}, nil
}

func (p *setupCounter) Teardown(*envsdk.Ctx) error {
	p.teardowns.Add(1)
	return nil
}

func setup(seq uint64, cfg string) []byte {
	return command(seq, envapi.Setup(json.RawMessage(cfg)))
}

// A setup repeated at its own sequence is never run again once it set its
// binding up, whatever came between: a binding torn down since is not set
// up again by a late copy of its old setup, and a provider that tracks
// its bindings itself is not asked twice.
func TestRepeatedSetupNotRerun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    envsdk.Options
		cfg     string
		between [][]byte
		// wantFirst is the first setup's receipt type.
		wantFirst envapi.ReceiptType
	}{
		{name: "after teardown", opts: envsdk.Options{Token: token}, cfg: `{}`,
			between: [][]byte{command(2, envapi.Teardown())}, wantFirst: envapi.ReceiptAccepted},
		{name: "untracked bindings", opts: envsdk.Options{Token: token, UntrackedBindings: true}, cfg: `{}`, wantFirst: envapi.ReceiptAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &setupCounter{}
			srv := serve(t, p, &tc.opts)
			if r := send(t, srv, setup(1, tc.cfg)).Receipt; r.Type != tc.wantFirst {
				t.Fatalf("setup answered %s %s %s, want %s", r.Type, r.Code, r.Message, tc.wantFirst)
			}
			for _, cmd := range tc.between {
				send(t, srv, cmd)
			}
			wantNotRerun(t, "the repeated setup", send(t, srv, setup(1, tc.cfg)).Receipt)
			if n := p.setups.Load(); n != 1 {
				t.Errorf("Setup ran %d times, want once", n)
			}
			// A setup at a new sequence is another one, and runs.
			send(t, srv, setup(3, `{}`))
			if n := p.setups.Load(); n != 2 {
				t.Errorf("Setup ran %d times after a setup at a new sequence, want 2", n)
			}
		})
	}
}

// A setup that failed left no binding: a setup at its sequence is a new
// attempt, and runs.
func TestFailedSetupRunsAgain(t *testing.T) {
	p := &setupCounter{}
	srv := serve(t, p, nil)
	for i := range 2 {
		if r := send(t, srv, setup(1, `{"fail":true}`)).Receipt; r.Type != envapi.ReceiptFailure || r.Code != "no_capacity" {
			t.Fatalf("setup %d answered %s %s %s, want the failure no_capacity", i+1, r.Type, r.Code, r.Message)
		}
	}
	if r := send(t, srv, setup(1, `{}`)).Receipt; r.Type != envapi.ReceiptAccepted {
		t.Fatalf("a setup at the sequence of a failed one answered %s %s %s, want accepted", r.Type, r.Code, r.Message)
	}
	if n := p.setups.Load(); n != 3 {
		t.Errorf("Setup ran %d times, want 3", n)
	}
	wantNotRerun(t, "a repeat of the setup that succeeded", send(t, srv, setup(1, `{}`)).Receipt)
}
