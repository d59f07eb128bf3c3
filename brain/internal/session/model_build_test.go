package session

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// buildingModel is a dialect that builds a request's wire body whenever
// it is handed one, as the hosted clients do: to prepare it, or to call
// with it. It counts the builds.
type buildingModel struct {
	builds atomic.Int64
	sent   atomic.Int64
}

func (m *buildingModel) build(req model.Request) ([]byte, error) {
	m.builds.Add(1)
	return json.Marshal(req)
}

func (m *buildingModel) Prepare(req model.Request) (model.Prepared, error) {
	body, err := m.build(req)
	if err != nil {
		return nil, err
	}
	return builtRequest{m, body}, nil
}

type builtRequest struct {
	m    *buildingModel
	body []byte
}

func (b builtRequest) Call(context.Context, func(model.Delta)) (model.Result, error) {
	return b.m.send(b.body)
}

func (m *buildingModel) Call(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Result, error) {
	body, err := m.build(req)
	if err != nil {
		return model.Result{}, err
	}
	return m.send(body)
}

func (m *buildingModel) send([]byte) (model.Result, error) {
	m.sent.Add(1)
	return model.Result{Message: api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock("ok")}},
		StopReason: api.StopEndTurn}, nil
}

// TestModelRequestBuiltOnce: the request a model call checks before its
// model_call_started is the request it sends, built once: the engine does
// not build a second body for the call itself.
func TestModelRequestBuiltOnce(t *testing.T) {
	m := &buildingModel{}
	models := model.Providers{"scripted": func(model.Spec) (model.Client, error) { return m, nil }}
	loop := func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		msgs := append(slices.Clone(in.Transcript), api.UserMessage(*in.Input))
		for range 3 {
			if _, err := svc.Model(ctx, api.ModelRequest{Messages: msgs}); err != nil {
				return api.TurnOutput{}, err
			}
		}
		return api.TurnOutput{}, nil
	}
	h := newHarness(t, Config{Models: models, Loops: testLoops(map[string]agentloop.Func{"l": loop})}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("l")})
	before := m.builds.Load() // what create checked
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := len(ofKind(h.records(id), api.KindModelCallStarted)); n != 3 || m.sent.Load() != 3 {
		t.Fatalf("%d model_call_started, %d requests sent; want 3 of each", n, m.sent.Load())
	}
	if n := m.builds.Load() - before; n != 3 {
		t.Fatalf("3 model calls built %d request bodies, want 3 (one each)", n)
	}
}
