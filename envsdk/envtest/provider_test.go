package envtest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// gated is a provider whose setup waits for the gate "setup" and fails
// while ShouldFail("setup") says so.
type gated struct {
	envsdk.Base
	*envtest.Provider
}

func (g *gated) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	<-g.Gate("setup")
	if g.ShouldFail("setup") {
		return envsdk.SetupResult{}, envsdk.Fail("setup_refused", "injected")
	}
	return envsdk.SetupResult{}, nil
}

// TestProviderRecordsGatesAndFaults checks that the recording provider
// logs each operation with its Authorization before the handler answers,
// that gates hold a behaviour until opened, that FailNext fails exactly
// the next n, and that Down refuses connections until Up serves the same
// address again. The handler does not track bindings, so that one
// binding can be set up again after each injected fault.
func TestProviderRecordsGatesAndFaults(t *testing.T) {
	g := &gated{}
	g.Provider = envtest.NewProvider(t, envsdk.NewHandler(g, &envsdk.Options{Token: "tok", UntrackedBindings: true}))
	cmds := envtest.NewCommands("ses_AAAAAAAAAAAAAAAAAAAA", "box")
	type result struct {
		resp *envapi.Response
		err  error
	}
	post := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			_, _, resp, err := envtest.Post(t.Context(), nil, g.URL, "tok", cmds.Setup(nil))
			ch <- result{resp, err}
		}()
		return ch
	}
	first := post()
	ops := g.WaitFor(envapi.RequestSetup, "box", 1)
	if ops[0].Auth != "Bearer tok" || ops[0].Cmd.Operation.Sequence != 1 || len(ops[0].Raw) == 0 {
		t.Fatalf("recorded %+v", ops[0])
	}
	select {
	case r := <-first:
		t.Fatalf("setup answered %+v before its gate opened", r)
	case <-time.After(50 * time.Millisecond):
	}
	g.FailNext("setup", 1)
	g.Open("setup")
	if r := <-first; r.err != nil || r.resp.Receipt.Type != envapi.ReceiptFailure {
		t.Fatalf("first setup: %+v %v, want the injected failure", r.resp, r.err)
	}
	if r := <-post(); r.err != nil || r.resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("second setup: %+v %v, want accepted", r.resp, r.err)
	}
	g.Down()
	if _, err := http.Post(g.URL+"/v1/operations", "application/json", nil); err == nil {
		t.Fatal("a stopped provider accepted a connection")
	}
	g.Up()
	if r := <-post(); r.err != nil || r.resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("after Up: %+v %v", r.resp, r.err)
	}
	if n := len(g.Received("", "")); n != 3 {
		t.Errorf("%d operations recorded, want 3", n)
	}
}
