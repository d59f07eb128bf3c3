package conformance_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// backgroundSleep answers its sleep with returned at once and sleeps in
// the background, then finishes the Tool. It stops when the Tool's work
// context ends, unless ignoreStop, when it finishes anyway, or
// teardownOnly, when only a teardown of its binding stops it; both post
// finish to the grant themselves, as a provider without envsdk might.
type backgroundSleep struct {
	*reference
	ignoreStop   bool
	teardownOnly bool
	// torn holds, by binding key, a *signal its teardown raises.
	torn *sync.Map
}

// signal is a channel closed once.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func (p backgroundSleep) tornDown(key string) *signal {
	s, _ := p.torn.LoadOrStore(key, &signal{ch: make(chan struct{})})
	return s.(*signal)
}

func (p backgroundSleep) Teardown(c *envsdk.Ctx) error {
	s := p.tornDown(c.BindingKey())
	s.once.Do(func() { close(s.ch) })
	return p.reference.Teardown(c)
}

func (p backgroundSleep) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	_ = json.Unmarshal(x.Implementation, &d)
	g := c.Request.Callback
	if d.Name != "sleep" || g == nil {
		return p.reference.Execute(c, x)
	}
	if _, err := p.binding(c); err != nil {
		return envapi.Receipt{}, err
	}
	var in struct {
		Ms int64 `json:"ms"`
	}
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
	}
	out := envapi.OK(mustJSON(map[string]int64{"slept": in.Ms}))
	work, torn := x.Context(), p.tornDown(c.BindingKey())
	go func() {
		timer := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
		defer timer.Stop()
		switch {
		case p.ignoreStop:
			<-timer.C
			_ = post(context.Background(), g, call(envapi.MethodFinish, out))
			return
		case p.teardownOnly:
			select {
			case <-timer.C:
				_ = post(context.Background(), g, call(envapi.MethodFinish, out))
			case <-torn.ch:
			}
			return
		}
		select {
		case <-timer.C:
			_, _ = x.Invocation.Finish(work, &out)
		case <-work.Done():
		}
	}()
	return envapi.Returned(nil), nil
}

// A sleep that answers returned and goes on in the background is a
// Tool the protocol allows: the cancel and deadline cases then check
// that the cancel, or the deadline, stops that work. A provider that
// stops it passes them; one whose background work finishes anyway, or
// that stops it only when the binding is torn down, fails both.
func TestReturnedSleep(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"deadline/timeout", "cancel/running"}
	for _, tc := range []struct {
		name         string
		ignore       bool
		teardownOnly bool
		failed       []string
	}{
		{name: "stops", failed: nil},
		{name: "ignores-stop", ignore: true, failed: []string{"deadline/timeout", "cancel/running"}},
		{name: "stops-on-teardown-only", teardownOnly: true, failed: []string{"deadline/timeout", "cancel/running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveProvider(ct, func() envsdk.Provider {
					return backgroundSleep{reference: newReference(), ignoreStop: tc.ignore, teardownOnly: tc.teardownOnly, torn: &sync.Map{}}
				}, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, tc.failed) {
				t.Errorf("failed %v, want %v\n%s", got, tc.failed, details(report))
			}
			if skipped := report.Skipped(); len(skipped) > 0 {
				t.Errorf("skipped cases %v, want none", skipped)
			}
		})
	}
}
