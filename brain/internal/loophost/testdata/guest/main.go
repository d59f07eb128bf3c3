// Command guest is the test guest of package loophost: what it does is
// chosen by the text of the user message.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// turns counts turns in this instance: a fresh instance always sees 1.
var turns int

var sink [][]byte

func init() { agentloop.Export(loop) }

func main() {}

func loop(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	turns++
	msg := ""
	if in.Input != nil {
		msg = in.Input.Message
	}
	switch msg {
	case "services":
		return services(ctx, svc, in)
	case "model-twice":
		for i := 0; i < 2; i++ {
			if _, err := svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(*in.Input)}}); err != nil {
				return api.TurnOutput{}, fmt.Errorf("model call %d: %w", i+1, err)
			}
		}
		return api.TurnOutput{}, nil
	case "fail":
		return api.TurnOutput{}, errors.New("boom")
	case "fail-long":
		// A model call over the limit, returned with 34 MiB of context.
		var err error
		for i := 0; i < 2 && err == nil; i++ {
			_, err = svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(*in.Input)}})
		}
		return api.TurnOutput{}, fmt.Errorf("giving up %s: %w", strings.Repeat("x", 34<<20), err)
	case "panic":
		panic("kaboom")
	case "exit":
		fmt.Fprintln(os.Stderr, "leaving with 3")
		os.Exit(3)
	case "exit-zero":
		fmt.Fprintln(os.Stderr, "leaving with 0")
		os.Exit(0)
	case "exit-long":
		// More on stderr than a failure quotes, in three-byte characters.
		fmt.Fprint(os.Stderr, strings.Repeat("€", 1000))
		os.Exit(3)
	case "spin":
		for {
			turns++
		}
	case "grow":
		for {
			sink = append(sink, make([]byte, 16<<20))
		}
	case "print":
		fmt.Println("to stdout")
		fmt.Fprintln(os.Stderr, "to stderr")
	}
	out, _ := json.Marshal(map[string]any{"turns": turns, "kv": in.KV, "message": msg})
	return api.TurnOutput{Result: out}, nil
}

// services calls every service and reports what it saw.
func services(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	r := map[string]any{}
	errCode := func(err error) string {
		var he *agentloop.HostError
		if errors.As(err, &he) {
			return he.Code
		}
		return fmt.Sprint(err)
	}
	seq, err := svc.KVPut(ctx, "k", json.RawMessage(`{"n":1}`))
	r["kv_put"], r["kv_put_err"] = seq, err
	v, ok, err := svc.KVRead(ctx, "k")
	r["kv_read"], r["kv_read_ok"], r["kv_read_err"] = v, ok, err
	_, ok, _ = svc.KVRead(ctx, "absent")
	r["absent_ok"] = ok
	_, _ = svc.KVPut(ctx, "nul", nil)
	v, ok, _ = svc.KVRead(ctx, "nul")
	r["nul"], r["nul_ok"] = string(v), ok
	seq, _ = svc.KVDelete(ctx, "k")
	r["kv_delete"] = seq
	seq, err = svc.Emit(ctx, "progress", json.RawMessage(`{"step":1}`))
	r["emit"], r["emit_err"] = seq, err
	_, err = svc.Emit(ctx, "turn_started", json.RawMessage(`{}`))
	r["emit_reserved"] = errCode(err)
	r["telemetry_err"] = svc.Telemetry(ctx, json.RawMessage(`{"t":1}`))
	page, err := svc.Events(ctx, 0)
	r["events"], r["events_err"] = len(page.Events), err
	res, err := svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}})
	r["model"], r["model_err"] = res.Message.Text(), err
	rets, err := svc.Dispatch(ctx, []api.ToolInvocation{{CallID: "c1", Name: "t", Environment: "e", Input: json.RawMessage(`{"x":1}`)}})
	r["dispatch"], r["dispatch_err"] = rets, err
	seq, err = svc.SetTranscript(ctx, []api.Message{api.UserMessage(*in.Input), res.Message})
	r["set_transcript"], r["set_transcript_err"] = seq, err
	envs, err := svc.Environments(ctx, json.RawMessage(`{"op":"list"}`))
	r["environments"], r["environments_err"] = string(envs), errCode(err)
	for k, v := range r {
		if e, ok := v.(error); ok {
			r[k] = e.Error()
		}
	}
	out, err := json.Marshal(r)
	return api.TurnOutput{Result: out}, err
}
