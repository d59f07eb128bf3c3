package agentlooptest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// TestEngineHasTheServersLimits: a turn in the test engine is bounded as
// the server bounds it by default (128 model calls, 1 MiB of emitted
// events), and a failed turn answers the *api.ApiError a client gets.
func TestEngineHasTheServersLimits(t *testing.T) {
	e := agentlooptest.Start(t)
	id := e.Admit(t, agentlooptest.Build(t, "testdata/guest"))
	ctx := context.Background()
	for msg, want := range map[string]string{
		"model 128":    "",
		"model 129":    api.FailureModelCallLimit,
		"emit 1000000": "",
		"emit 1048576": api.FailureEmitLimit,
		"unknown 1":    api.FailureAgentloopFailed,
	} {
		sid := e.Create(t, id, nil)
		_, err := e.Send(ctx, sid, msg)
		var ae *api.ApiError
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", msg, err)
		case want != "" && (!errors.As(err, &ae) || ae.Code != want):
			t.Errorf("%s: send answered %v (%T), want an *api.ApiError with code %s", msg, err, err, want)
		}
	}
}
