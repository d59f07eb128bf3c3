package loophost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// BenchmarkToolInvocation runs one Wasm Tool invocation (fresh instance,
// invocation in, an emit through the host functions, outcome out, close)
// beside the bare instantiation and close of the same compiled module and
// an environment/v1 execute round trip to an HTTP environment on loopback
// (JSON command out, the provider decodes it and answers a result
// receipt, decoded back). The interleaved form alternates the four in one
// loop, so that load drift affects them alike, and reports the ratios. It
// fails if anything is compiled while it runs.
func BenchmarkToolInvocation(b *testing.B) {
	h := openHost(b, loophost.Options{ToolsDir: b.TempDir()})
	a, err := h.AdmitTool(context.Background(), agentlooptest.Build(b, "testdata/benchtool"))
	if err != nil || a.Status != loophost.StatusAdmitted {
		b.Fatalf("admit: %+v %v", a, err)
	}
	id := a.ID
	ctx := context.Background()
	call := loophost.ToolCall{ID: id, Input: json.RawMessage(`{"op":"emit"}`), Deadline: time.Now().Add(time.Hour)}
	invoke := func() {
		call.Services = &toolServices{}
		if r := h.RunTool(ctx, call); r.Type != envapi.ReceiptResult {
			b.Fatalf("receipt %+v", r)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, _ := json.Marshal(envapi.NewResponse(cmd.Operation.Sequence, envapi.Result(cmd.Operation.Request.Input)))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	client := srv.Client()
	ms := int64(3600_000)
	cmd, _ := json.Marshal(envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_benchbenchbenchbenchbe", Environment: "http", Sequence: 7,
		Request: envapi.Execute(json.RawMessage(`{"tool":"echo"}`), json.RawMessage(`{"op":"emit"}`), &ms, nil),
	}})
	roundTrip := func() {
		resp, err := client.Post(srv.URL+"/v1/operations", "application/json", bytes.NewReader(cmd))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r, err := envapi.DecodeResponse(body)
		if err != nil || r.Receipt.Type != envapi.ReceiptResult {
			b.Fatalf("response %s: %v", body, err)
		}
	}
	bare := func(mapped bool) func() {
		return func() {
			if err := h.BareInstantiate(ctx, id, mapped); err != nil {
				b.Fatal(err)
			}
		}
	}
	compiles := h.Compiles()
	for _, c := range []struct {
		name string
		op   func()
	}{{"invocation", invoke}, {"bare-instantiate", bare(false)}, {"bare-instantiate-mapped", bare(true)}, {"http-round-trip", roundTrip}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.op()
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		var inv, br, mp, rt time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			invoke()
			t1 := time.Now()
			bare(false)()
			t2 := time.Now()
			bare(true)()
			t3 := time.Now()
			roundTrip()
			inv, br, mp, rt = inv+t1.Sub(t0), br+t2.Sub(t1), mp+t3.Sub(t2), rt+time.Since(t3)
		}
		per := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
		b.ReportMetric(per(inv), "invocation-ms")
		b.ReportMetric(per(br), "bare-ms")
		b.ReportMetric(per(mp), "bare-mapped-ms")
		b.ReportMetric(per(rt), "http-ms")
		b.ReportMetric(float64(inv)/float64(br), "ratio-vs-bare")
		b.ReportMetric(float64(inv)/float64(mp), "ratio-vs-mapped")
		b.ReportMetric(float64(inv)/float64(rt), "ratio-vs-http")
	})
	if h.Compiles() != compiles {
		b.Fatalf("%d compiles on the invocation path", h.Compiles()-compiles)
	}
}
