package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

func TestKVSemanticsThroughCall(t *testing.T) {
	var steps []string
	loops := map[string]agentloop.Func{"kv": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		svc := a.(Services)
		call := func(method, input string) {
			out, err := svc.Call(ctx, method, json.RawMessage(input))
			if err != nil {
				steps = append(steps, method+" error "+Code(err))
				return
			}
			steps = append(steps, method+" "+string(out))
		}
		call("kv_read", `"a"`)
		call("kv_put", `{"key":"a","value":null}`)
		call("kv_read", `"a"`)
		call("kv_put", `{"key":"a","value":{"x":1}}`)
		call("kv_read", `"a"`)
		call("kv_delete", `"a"`)
		call("kv_read", `"a"`)
		call("kv_delete", `"a"`)
		call("finish", `null`)
		call("nonsense", `null`)
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("kv")})
	base := len(h.records(id)) + 2 // turn_started, activation_started
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	seq := func(n int) string { b, _ := json.Marshal(base + n); return string(b) }
	want := []string{
		`kv_read {}`,
		`kv_put ` + seq(1),
		`kv_read {"value":null}`,
		`kv_put ` + seq(2),
		`kv_read {"value":{"x":1}}`,
		`kv_delete ` + seq(3),
		`kv_read {}`,
		`kv_delete ` + seq(3), // absent key: no-op, nothing appended
		`finish error not_granted`,
		`nonsense error invalid_request`,
	}
	for i := range want {
		if i >= len(steps) || steps[i] != want[i] {
			t.Fatalf("steps = %q\nwant    %q", steps, want)
		}
	}
	recs := h.records(id)
	if len(ofKind(recs, api.KindKVSet)) != 2 || len(ofKind(recs, api.KindKVDelete)) != 1 {
		t.Fatalf("records = %v", kinds(recs))
	}
	// KV records stay private.
	page, _ := h.engine.Events(context.Background(), id, 0)
	for _, ev := range page.Events {
		if ev.EventType == api.KindKVSet || ev.EventType == api.KindKVDelete {
			t.Fatalf("kv record is public: %+v", ev)
		}
	}
	// Authority ends with the activation.
	if _, err := h.engine.Execution(id, uint64(base)); !errors.Is(err, ErrExecutionClosed) {
		t.Fatalf("execution after turn: %v", err)
	}
}

func TestTranscriptReplacedIsPublic(t *testing.T) {
	loops := map[string]agentloop.Func{"rewrite": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		msgs := append(in.Transcript, api.UserMessage(*in.Input))
		if len(in.Transcript) >= 2 {
			msgs = []api.Message{{Role: api.RoleDeveloper, Content: []api.ContentBlock{api.TextBlock("summary")}}, api.UserMessage(*in.Input)}
		}
		_, err := svc.SetTranscript(ctx, msgs)
		return api.TurnOutput{}, err
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("rewrite"),
		Transcript: []api.Message{api.UserMessage(api.UserInput{Message: "seed"})}})
	for _, m := range []string{"one", "two"} {
		if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	page, _ := h.engine.Events(context.Background(), id, 0)
	var replaced []api.Event
	for _, ev := range page.Events {
		if ev.EventType == api.KindTranscriptReplaced {
			replaced = append(replaced, ev)
		}
	}
	if len(replaced) != 1 {
		t.Fatalf("%d transcript_replaced events in %+v", len(replaced), page.Events)
	}
	tr, _ := h.engine.Transcript(context.Background(), id)
	if len(tr.Messages) != 2 || tr.Messages[0].Text() != "summary" || tr.Messages[1].Text() != "two" {
		t.Fatalf("transcript = %+v", tr.Messages)
	}
}

// KV keys are identifiers (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$): any other
// key is refused as invalid by every KV method, and nothing is appended.
func TestKVKeysAreIdentifiers(t *testing.T) {
	var steps []string
	loops := map[string]agentloop.Func{"keys": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		svc := a.(Services)
		call := func(method, input string) {
			_, err := svc.Call(ctx, method, json.RawMessage(input))
			steps = append(steps, method+" "+input+" "+Code(err))
		}
		for _, bad := range []string{`""`, `"a b"`, `"-a"`, `"a/b"`, `"ké"`, `"` + strings.Repeat("k", 129) + `"`} {
			call("kv_read", bad)
			call("kv_put", `{"key":`+bad+`,"value":1}`)
			call("kv_delete", bad)
		}
		good := `"` + strings.Repeat("k", 120) + `A.b:c-_9"` // 128 bytes, every kind of character
		call("kv_put", `{"key":`+good+`,"value":1}`)
		call("kv_read", good)
		call("kv_delete", good)
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("keys")})
	before := len(h.records(id))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	for i, step := range steps {
		valid := i >= len(steps)-3
		if got := strings.HasSuffix(step, " "+api.CodeInvalidRequest); got == valid {
			t.Errorf("step %q: invalid_request %v, want %v", step, got, !valid)
		}
	}
	recs := h.records(id)[before:]
	if n, d := len(ofKind(recs, api.KindKVSet)), len(ofKind(recs, api.KindKVDelete)); n != 1 || d != 1 {
		t.Fatalf("%d kv_set and %d kv_delete for one valid key: %v", n, d, kinds(recs))
	}
}
