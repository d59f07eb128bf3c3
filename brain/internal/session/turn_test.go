package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

func TestTextTurnRecordsInOrder(t *testing.T) {
	h := newHarness(t, Config{Limits: DefaultLimits()}, nil)
	id := h.create(api.CreateSessionRequest{System: "be brief"})
	before := len(h.records(id))
	sum, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	want := []string{"turn_started", "activation_started", "model_call_started", "model_call_ended",
		"transcript_delta", "activation_ended", "turn_ended"}
	if got := kinds(recs[before:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("turn records = %v, want %v", got, want)
	}
	for i, r := range recs {
		if r.Sequence != uint64(i+1) {
			t.Fatalf("record %d has sequence %d", i, r.Sequence)
		}
	}
	if sum.Status != api.StatusIdle || sum.LastSequence != uint64(len(recs)) {
		t.Fatalf("summary = %+v with %d records", sum, len(recs))
	}
	turn := recs[before].Sequence
	started := ofKind(recs, api.KindModelCallStarted)[0]
	ended := decode[modelCallEnded](t, ofKind(recs, api.KindModelCallEnded)[0].Data)
	if ended.Sequence != started.Sequence || ended.Result.Message.Text() != "echo: hi" {
		t.Fatalf("model_call_ended = %+v", ended)
	}
	ms := decode[modelCallStarted](t, started.Data)
	if ms.Messages != 1 || ms.Context.Delta.Keep != 0 || len(ms.Context.Delta.Append) != 1 {
		t.Fatalf("model_call_started = %+v", ms)
	}
	if te := decode[turnEnded](t, recs[len(recs)-1].Data); te.Sequence != turn || string(te.Result) != `"echo: hi"` {
		t.Fatalf("turn_ended = %+v", te)
	}
	// A second turn: the model request is rebuilt from the saved transcript
	// plus the delta, and folding the deltas reproduces the transcript.
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "again"}); err != nil {
		t.Fatal(err)
	}
	recs = h.records(id)
	var folded []api.Message
	for _, r := range ofKind(recs, api.KindTranscriptDelta) {
		d := decode[transcriptDelta](t, r.Data)
		folded = append(folded[:d.Keep], d.Append...)
	}
	tr, err := h.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(folded, tr.Messages) || len(tr.Messages) != 4 || tr.Messages[3].Text() != "echo: again" {
		t.Fatalf("transcript %+v, folded %+v", tr.Messages, folded)
	}
	if tr.ThroughSequence != uint64(len(recs)) {
		t.Fatalf("through_sequence %d of %d", tr.ThroughSequence, len(recs))
	}
	last := decode[modelCallStarted](t, ofKind(recs, api.KindModelCallStarted)[1].Data)
	if last.Context.Delta.Keep != 2 || len(last.Context.Delta.Append) != 1 || last.Messages != 3 {
		t.Fatalf("second model_call_started = %+v", last)
	}
	// The events page hides the pure transcript appends.
	page, err := h.engine.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Events {
		if ev.EventType == api.KindTranscriptDelta || ev.EventType == api.KindTranscriptReplaced {
			t.Fatalf("transcript append is public: %+v", ev)
		}
	}
	if page.NextCursor != page.Events[len(page.Events)-1].Sequence {
		t.Fatalf("next_cursor %d", page.NextCursor)
	}
}

func TestSecretsNeverJournalled(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	h.close()
	err := filepath.Walk(h.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range []string{"sk-test-secret", "env-secret-cred"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s contains %q", path, secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := h.secret.Get(context.Background(), id, SecretModelAPIKey)
	cred, _ := h.secret.Get(context.Background(), id, SecretEnvironmentCredential("box"))
	if string(key) != "sk-test-secret" || string(cred) != "env-secret-cred" {
		t.Fatalf("secrets not kept: %q %q", key, cred)
	}
	if ops := h.envs.opsOf("setup"); len(ops) != 1 || ops[0].Credential != "env-secret-cred" {
		t.Fatalf("setup ops = %+v", ops)
	}
}

func TestBusySubmissionRejected(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	seq, err := h.engine.Submit(context.Background(), id, api.UserInput{Message: script(map[string]any{"delay_ms": 60000})})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	if recs[seq-1].Kind != api.KindTurnStarted {
		t.Fatalf("record %d is %s", seq, recs[seq-1].Kind)
	}
	_, err = h.engine.Submit(context.Background(), id, api.UserInput{Message: "second"})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second submit: %v", err)
	}
	ae := APIError(err)
	if ae.Code != api.CodeConflict || string(ae.Details) != `{"admission":"rejected"}` {
		t.Fatalf("api error = %+v", ae)
	}
	if n := len(ofKind(h.records(id), api.KindTurnStarted)); n != 1 {
		t.Fatalf("%d turn_started records", n)
	}
	if err := h.engine.Interrupt(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyMessageRefused(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	if _, err := h.engine.Submit(context.Background(), id, api.UserInput{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if _, err := h.engine.Summary(context.Background(), "ses_AAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := h.engine.Summary(context.Background(), "bad"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

func TestModelFailureFailsTurn(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"fail": map[string]string{"code": "overloaded_error", "message": "busy"}})})
	var te *TurnError
	if !errors.As(err, &te) || te.Code != api.CodeModelProviderFailed {
		t.Fatalf("err = %v", err)
	}
	recs := h.records(id)
	f := decode[api.Failure](t, ofKind(recs, api.KindModelCallFailed)[0].Data)
	if f.Sequence != ofKind(recs, api.KindModelCallStarted)[0].Sequence || !strings.Contains(string(f.Details), "overloaded_error") {
		t.Fatalf("model_call_failed = %+v", f)
	}
	tf := decode[api.Failure](t, ofKind(recs, api.KindTurnFailed)[0].Data)
	if tf.Code != api.CodeModelProviderFailed || tf.Sequence != ofKind(recs, api.KindTurnStarted)[0].Sequence {
		t.Fatalf("turn_failed = %+v", tf)
	}
	if sum, _ := h.engine.Summary(context.Background(), id); sum.Status != api.StatusIdle {
		t.Fatalf("status %s", sum.Status)
	}
}

func TestStreamedModelDeltasAreLiveOnly(t *testing.T) {
	h := newHarness(t, Config{IdleTTL: KeepIdle}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	sub, err := h.engine.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"stream": true, "reply": "one two three four"})}); err != nil {
		t.Fatal(err)
	}
	var text string
	var sawEnd bool
	for !sawEnd {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f.Live != nil {
			d := decode[struct {
				Seq   uint64 `json:"model_call_sequence"`
				Delta string `json:"delta"`
			}](t, f.Live.Data)
			if d.Seq == 0 {
				t.Fatalf("live frame without model_call_sequence: %s", f.Live.Data)
			}
			text += d.Delta
		}
		sawEnd = f.Event != nil && f.Event.EventType == api.KindTurnEnded
	}
	if text != "one two three four" {
		t.Fatalf("deltas = %q", text)
	}
	for _, r := range h.records(id) {
		if strings.Contains(r.Kind, "model_output") {
			t.Fatal("a live frame was journalled")
		}
	}
	_ = json.RawMessage(nil)
}
