package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// echoProvider answers every execute with its input.
type echoProvider struct{}

func (echoProvider) Setup(*envsdk.Ctx) (envsdk.SetupResult, error) { return envsdk.SetupResult{}, nil }
func (echoProvider) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	return envapi.Result(x.Input), nil
}
func (echoProvider) Detach(*envsdk.Ctx) error   { return nil }
func (echoProvider) Teardown(*envsdk.Ctx) error { return nil }

// BenchmarkToolRoundTrip runs one turn with one tool call per iteration,
// the tool served by this process over the host connection ("host") or by
// an environment/v1 provider over loopback HTTP ("http"), on the same
// Brain. The turn (journal commits, two scripted model calls) is the same
// in both; the difference is the tool's transport.
func BenchmarkToolRoundTrip(b *testing.B) {
	ctx := context.Background()
	provider := httptest.NewServer(envsdk.NewHandler(echoProvider{}, nil))
	defer provider.Close()
	// The provider calls back (finish) through Brain's public URL, known
	// once its listener is.
	var api0 atomic.Pointer[http.Handler]
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*api0.Load()).ServeHTTP(w, r) }))
	srv, err := brain.New(ctx, brain.Config{DataDir: b.TempDir(), Token: "tok", PublicURL: hs.URL})
	if err != nil {
		b.Fatal(err)
	}
	h0 := srv.Handler()
	api0.Store(&h0)
	defer func() { srv.Close(ctx); hs.Close() }()
	c, _ := client.New(hs.URL, &client.Options{Token: "tok"})
	defer c.Close()
	h, err := c.Host(ctx)
	if err != nil {
		b.Fatal(err)
	}
	h.Handle("echo", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		return api.Outcome{Status: api.OutcomeOK, Value: call.Input}, nil
	})
	if err := h.Connected(ctx); err != nil {
		b.Fatal(err)
	}
	envs := map[string]api.Environment{
		"host": h.Environment("e"),
		"http": {Name: "e", Driver: api.DriverHTTP, URL: provider.URL},
	}
	for _, name := range []string{"http", "host"} {
		b.Run(name, func(b *testing.B) {
			req := scripted
			req.Environments = []api.Environment{envs[name]}
			req.Tools = []api.Tool{{Name: "echo", Description: "echo", InputSchema: objectSchema,
				Placements: map[string]api.Placement{"e": {Implementation: json.RawMessage(`{}`)}}}}
			s, err := c.Sessions.Create(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			msg := api.UserInput{Message: `{"tool_calls":[{"name":"echo","input":{"n":1}}]}`}
			b.ResetTimer()
			for range b.N {
				if _, err := s.Send(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			tr, _ := s.Transcript(ctx)
			if last := tr.Messages[len(tr.Messages)-1].Text(); !strings.Contains(last, `{"n":1}`) {
				b.Fatalf("the tool's value did not come back: %q", last)
			}
		})
	}
}
