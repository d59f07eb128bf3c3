package conformance_test

import (
	"encoding/json"
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

// stopsBinding stops every sleep running on a binding when a cancel of
// any of its sequences comes, as a provider that stops a binding's whole
// sandbox on cancel does.
type stopsBinding struct {
	*reference
	mu      sync.Mutex
	running map[string]map[chan struct{}]bool
}

func newStopsBinding() envsdk.Provider {
	return &stopsBinding{reference: newReference(), running: map[string]map[chan struct{}]bool{}}
}

func (p *stopsBinding) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	var in struct {
		Ms int64 `json:"ms"`
	}
	if json.Unmarshal(x.Implementation, &d) != nil || d.Name != "sleep" || json.Unmarshal(x.Input, &in) != nil {
		return p.reference.Execute(c, x)
	}
	stop := make(chan struct{})
	key := c.BindingKey()
	p.mu.Lock()
	if p.running[key] == nil {
		p.running[key] = map[chan struct{}]bool{}
	}
	p.running[key][stop] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.running[key], stop)
		p.mu.Unlock()
	}()
	timer := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return envsdk.Output(map[string]int64{"slept": in.Ms})
	case <-stop:
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeCancelled, "the binding's sandbox was stopped")
	case <-c.Context().Done():
		return envapi.Receipt{}, c.Context().Err()
	}
}

func (p *stopsBinding) Cancel(c *envsdk.Ctx, _ uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for stop := range p.running[c.BindingKey()] {
		close(stop)
	}
	delete(p.running, c.BindingKey())
	return nil
}

// runsRepeatedCancels is runsRepeats for cancels: the provider's Cancel
// runs again for a repeated cancel.
func runsRepeatedCancels(next http.Handler) http.Handler {
	return movesRepeats(envapi.RequestCancel, next)
}

// TestRepeatedCancelRunsOnce: a provider whose cancel stops the binding's
// whole sandbox passes cancel/at-most-once while a repeated cancel is not
// run again, and fails it, naming the rule and the execute stopped, once
// its cancel runs again for the repeat.
func TestRepeatedCancelRunsOnce(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"cancel/at-most-once"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveProvider(ct, newStopsBinding, sdk, nil)
	}, &opts)
	if got := report.Passed(); !slices.Equal(got, opts.Run) {
		t.Errorf("a provider that runs each cancel once passed %v, want %v\n%s", got, opts.Run, details(report))
	}

	report = conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveProvider(ct, newStopsBinding, sdk, runsRepeatedCancels)
	}, &opts)
	if got := report.Failed(); !slices.Equal(got, opts.Run) {
		t.Fatalf("a provider that runs a repeated cancel again failed %v, want %v\n%s", got, opts.Run, details(report))
	}
	log := strings.Join(report.Results[0].Log, "\n")
	for _, want := range []string{"ran again: it stopped an execute of the binding", "a cancel is run at most once"} {
		if !strings.Contains(log, want) {
			t.Errorf("the failure does not say %q:\n%s", want, log)
		}
	}
}
