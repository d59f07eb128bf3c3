package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// brainPeer is Brain in this process over a data directory: its journal
// and requests log fdatasync every commit (Brain has no other mode).
type brainPeer struct {
	c *client.Client
}

func newBrain(ctx context.Context, dir string) (*brainPeer, error) {
	env, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = http.Serve(env, envEcho()) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	srv, err := brain.New(ctx, brain.Config{
		DataDir:      dir,
		PublicURL:    url,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Environments: brain.Environments{Routes: map[string]brain.EnvironmentRoute{"box": {Endpoint: "http://" + env.Addr().String()}}},
	})
	if err != nil {
		return nil, err
	}
	go func() { _ = srv.Serve(context.Background(), ln) }()
	tok, _ := srv.Token()
	c, err := client.New(url, &client.Options{Token: tok})
	if err != nil {
		return nil, err
	}
	return &brainPeer{c: c}, nil
}

func (b *brainPeer) name() string { return "brain" }

func (b *brainPeer) client(ctx context.Context, w string, _ int) (func(context.Context) error, error) {
	sess, err := b.c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: "box"}},
		Tools: []api.Tool{{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{}`)}}}},
	})
	if err != nil {
		return nil, err
	}
	msg := "hello"
	if w == "W2" {
		msg = w2Script()
	}
	return func(ctx context.Context) error {
		sum, err := sess.Send(ctx, api.UserInput{Message: msg})
		if err == nil && sum.Status != api.StatusIdle {
			err = fmt.Errorf("turn ended %s", sum.Status)
		}
		return err
	}, nil
}

// envEcho is an environment/v1 provider answering each execute with a
// result receipt carrying its input.
func envEcho() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := envapi.Accepted()
		if cmd.Operation.Request.Type == envapi.RequestExecute {
			rec = envapi.Result(cmd.Operation.Request.Input)
		}
		out, _ := json.Marshal(envapi.NewResponse(cmd.Operation.Sequence, rec))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}
