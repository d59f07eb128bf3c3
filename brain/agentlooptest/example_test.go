package agentlooptest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// A test of a Go agentloop in the current directory: build it, admit it,
// run a turn with the scripted model and read what the loop saved.
func ExampleEngine() {
	var t testing.TB // the test's *testing.T
	ctx := context.Background()

	module := agentlooptest.Build(t, ".")
	e := agentlooptest.Start(t)
	sid := e.Create(t, e.Admit(t, module), nil)
	if _, err := e.Send(ctx, sid, "hello"); err != nil {
		var ae *api.ApiError
		if errors.As(err, &ae) && ae.Code == api.FailureModelCallLimit {
			t.Fatalf("the loop called the model too often: %s", ae.Message)
		}
		t.Fatal(err)
	}
	for _, m := range e.Transcript(t, sid) {
		t.Log(m.Role, m.Text())
	}
}
