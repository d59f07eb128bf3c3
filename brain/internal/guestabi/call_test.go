//go:build !wasip1

package guestabi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// echo is a service table whose environments service answers its
// request; the test guest calls nothing else.
type echo struct{}

var errUnused = errors.New("not used by the test guest")

func (echo) Model(context.Context, api.ModelRequest) (api.ModelResult, error) {
	return api.ModelResult{}, errUnused
}

func (echo) Dispatch(context.Context, []api.ToolInvocation) ([]api.ToolReturn, error) {
	return nil, errUnused
}

func (echo) Emit(context.Context, string, json.RawMessage) (uint64, error) { return 0, errUnused }

func (echo) Telemetry(context.Context, json.RawMessage) error { return errUnused }

func (echo) Events(context.Context, uint64) (api.EventPage, error) {
	return api.EventPage{}, errUnused
}

func (echo) SetTranscript(context.Context, []api.Message) (uint64, error) { return 0, errUnused }

func (echo) KVRead(context.Context, string) (json.RawMessage, bool, error) {
	return nil, false, errUnused
}

func (echo) KVPut(context.Context, string, json.RawMessage) (uint64, error) { return 0, errUnused }

func (echo) KVDelete(context.Context, string) (uint64, error) { return 0, errUnused }

func (echo) Environments(_ context.Context, req json.RawMessage) (json.RawMessage, error) {
	return req, nil
}

// Goroutines of a guest that call services at once each get the answer of
// their own call, even when one is switched out between its service
// import and the answer import and the others make their calls meanwhile:
// the host keeps only the last call's answer.
func TestCallAnswersEachGoroutineItsOwnAnswer(t *testing.T) {
	loop := agentlooptest.Loop(t, "testdata/guest")
	const n = 64
	in := api.TurnInput{Input: &api.UserInput{Message: fmt.Sprintf("concurrent %d", n)}, Transcript: []api.Message{}, KV: map[string]json.RawMessage{}}
	out, err := loop(context.Background(), echo{}, in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(out.Result, &got); err != nil || len(got) != n {
		t.Fatalf("answer %s: %v", out.Result, err)
	}
	for i, g := range got {
		if want := fmt.Sprintf(`{"caller":%d,"pad":"%*s"}`, i, i%7, ""); g != want {
			t.Errorf("goroutine %d got %q, want the answer of its own call %q", i, g, want)
		}
	}
}
