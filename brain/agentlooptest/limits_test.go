package agentlooptest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// TestEngineHasTheServersLimits: a turn in the test engine is bounded as
// the server bounds it by default (128 model calls, 1 MiB of emitted
// events), and a failed turn answers the *api.ApiError a client gets.
func TestEngineHasTheServersLimits(t *testing.T) {
	e := agentlooptest.Start(t)
	id := e.Admit(t, agentlooptest.Build(t, "testdata/guest"))
	sendEach(t, e, id, map[string]string{
		"model 128":    "",
		"model 129":    api.FailureModelCallLimit,
		"emit 1000000": "",
		"emit 1048576": api.FailureEmitLimit,
		"unknown 1":    api.FailureAgentloopFailed,
	})
}

// TestEngineWithLimits: StartWith runs turns under the limits it is given,
// as a server configured with them does, so that a loop's behaviour at a
// bound is tested without reaching the server's default; a negative
// limit removes the bound, a zero one keeps the server's default.
func TestEngineWithLimits(t *testing.T) {
	e := agentlooptest.StartWith(t, agentlooptest.Options{Limits: agentlooptest.Limits{
		MaxModelCalls:   2,
		MaxEmittedBytes: 100,
		MaxTurn:         time.Second,
	}})
	id := e.Admit(t, agentlooptest.Build(t, "testdata/guest"))
	ctx := context.Background()
	sendEach(t, e, id, map[string]string{
		"model 2":  "",
		"model 3":  api.FailureModelCallLimit,
		"emit 50":  "",
		"emit 100": api.FailureEmitLimit,
		"wait 10":  "",
		// The scripted model would wait a minute: the turn's wall time
		// ends it first.
		"wait 60000": api.FailureTimeout,
	})
	// The limits outlive a restart of the engine.
	e.Restart(t)
	if _, err := e.Send(ctx, e.Create(t, id, nil), "model 3"); err == nil {
		t.Error("model 3 after a restart: the turn ended, want model_call_limit")
	}

	unbounded := agentlooptest.StartWith(t, agentlooptest.Options{Limits: agentlooptest.Limits{MaxModelCalls: -1}})
	id = unbounded.Admit(t, agentlooptest.Build(t, "testdata/guest"))
	// Model calls unbounded, the emission bound the server's default.
	sendEach(t, unbounded, id, map[string]string{"model 129": "", "emit 1048576": api.FailureEmitLimit})
}

// sendEach sends each message to a new session of loop id on e, and
// checks that its turn ended (want "") or failed with the *api.ApiError
// of code want a client gets.
func sendEach(t *testing.T, e *agentlooptest.Engine, id string, turns map[string]string) {
	t.Helper()
	for msg, want := range turns {
		_, err := e.Send(context.Background(), e.Create(t, id, nil), msg)
		var ae *api.ApiError
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", msg, err)
		case want != "" && (!errors.As(err, &ae) || ae.Code != want):
			t.Errorf("%s: send answered %v (%T), want an *api.ApiError with code %s", msg, err, err, want)
		}
	}
}
