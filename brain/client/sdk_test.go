package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestCloseEndsStreamsAndKeepsSessions closes a client while one of its
// event streams is open: the stream ends with ErrClosed, later calls are
// refused, a second Close is harmless, and the session (busy with a turn
// at the time) finishes that turn untouched.
func TestCloseEndsStreamsAndKeepsSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	other := c.WithToken("tok")
	defer other.Close()
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Submit(ctx, api.UserInput{Message: `{"reply":"late","delay_ms":400}`})
	if err != nil {
		t.Fatal(err)
	}
	streamErr := make(chan error, 1)
	seen := make(chan struct{})
	go func() {
		first := true
		for _, err := range s.Events(ctx, 0, client.Follow()) {
			if first {
				close(seen)
				first = false
			}
			if err != nil {
				streamErr <- err
				return
			}
		}
		streamErr <- nil
	}()
	<-seen
	c.Close()
	select {
	case err := <-streamErr:
		if !errors.Is(err, client.ErrClosed) {
			t.Fatalf("open stream ended with %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close left an event stream open")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := s.Refresh(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Refresh after Close = %v", err)
	}
	for _, err := range s.Events(ctx, 0, client.Follow()) {
		if !errors.Is(err, client.ErrClosed) {
			t.Fatalf("Events after Close = %v", err)
		}
	}
	// The client made by WithToken has its own lifetime, and the turn ran on.
	o := other.Sessions.Open(s.ID)
	var ended bool
	for ev, err := range o.Events(ctx, rec.Sequence, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == api.KindTurnEnded {
			ended = true
			break
		}
	}
	if !ended {
		t.Fatal("the turn did not end after the client closed")
	}
	tr, err := o.Transcript(ctx)
	if err != nil || tr.Messages[len(tr.Messages)-1].Text() != "late" {
		t.Fatalf("transcript after Close = %+v, %v", tr, err)
	}
}

// TestWithTokenSharesTransport checks that a client from WithToken sends
// through the parent's HTTP client, with its own token.
func TestWithTokenSharesTransport(t *testing.T) {
	ctx := context.Background()
	ct := &tokenTransport{base: http.DefaultTransport}
	c, _ := start(t, brain.Config{}, &http.Client{Transport: ct})
	bad := c.WithToken("other")
	_, err := bad.Sessions.List(ctx)
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.CodeUnauthorized {
		t.Fatalf("List with another token = %v", err)
	}
	if got := ct.last.Load(); got == nil || *got != "Bearer other" {
		t.Fatalf("the derived client did not use the parent's transport (last token %v)", got)
	}
	bad.Close()
	if _, err := c.Sessions.List(ctx); err != nil {
		t.Fatalf("parent after closing the derived client: %v", err)
	}
}

// TestOwnedSendCancel cancels the context of Send while its turn waits
// for the model: Send returns only once the interrupt is accepted, the
// turn ends cancelled, and the tool the model would have called next is
// never started.
func TestOwnedSendCancel(t *testing.T) {
	c, _ := start(t, brain.Config{})
	bg := context.Background()
	s, err := c.Sessions.Create(bg, scripted)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(150*time.Millisecond, cancel)
	_, err = s.Send(ctx, api.UserInput{Message: `{"delay_ms":800,"tool_calls":[{"name":"never","input":{}}]}`})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled ctx = %v", err)
	}
	// The interrupt was accepted before Send returned: the turn ends as
	// cancelled without waiting for the model's delay.
	deadline := time.Now().Add(5 * time.Second)
	var evs []api.Event
	for time.Now().Before(deadline) {
		evs = evs[:0]
		for ev, err := range s.Events(bg, 0) {
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		if n := len(evs); n > 0 && (evs[n-1].EventType == api.KindTurnFailed || evs[n-1].EventType == api.KindTurnEnded) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	last := evs[len(evs)-1]
	var f api.Failure
	_ = json.Unmarshal(last.Data, &f)
	if last.EventType != api.KindTurnFailed || f.Code != api.FailureCancelled {
		t.Fatalf("turn ended with %s %s, want turn_failed cancelled", last.EventType, last.Data)
	}
	time.Sleep(900 * time.Millisecond) // past the model's delay
	for ev, err := range s.Events(bg, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == api.KindToolCallStarted {
			t.Fatalf("a tool started after Send returned: %+v", ev)
		}
	}
	// An already-cancelled ctx submits nothing.
	sum, _ := s.Refresh(bg)
	if _, err := s.Send(ctx, api.UserInput{Message: "hi"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a dead ctx = %v", err)
	}
	if again, _ := s.Refresh(bg); again.LastSequence != sum.LastSequence {
		t.Fatalf("Send with a dead ctx committed records: %d -> %d", sum.LastSequence, again.LastSequence)
	}
	// Without cancellation Send with a cancellable ctx answers like the
	// synchronous one.
	tctx, stop := context.WithTimeout(bg, 10*time.Second)
	defer stop()
	if _, err := s.Send(tctx, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Send(tctx, api.UserInput{Message: `{"fail":{"code":"rate_limited","message":"slow down"}}`})
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.CodeModelProviderFailed {
		t.Fatalf("failed owned turn = %v, want model_provider_failed", err)
	}
}

const pointSchema = `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}`

func TestSendStructured(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, brain.Config{})
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	// A valid first answer needs no correction.
	v, err := s.SendStructured(ctx, api.UserInput{Message: `{"reply":"{\"x\": 3}"}`}, json.RawMessage(pointSchema), 2)
	if err != nil || string(v) != `{"x": 3}` {
		t.Fatalf("SendStructured = %s, %v", v, err)
	}
	// An invalid answer gets a correction on the same session.
	var problems []string
	fix := client.Correction(func(attempt int, problem error) api.UserInput {
		problems = append(problems, problem.Error())
		return api.UserInput{Message: `{"reply":"{\"x\": 4}"}`}
	})
	v, err = s.SendStructured(ctx, api.UserInput{Message: `{"reply":"{\"x\": \"four\"}"}`}, json.RawMessage(pointSchema), 1, fix)
	if err != nil || string(v) != `{"x": 4}` {
		t.Fatalf("corrected SendStructured = %s, %v", v, err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "does not match the schema") {
		t.Fatalf("problems = %q", problems)
	}
	tr, _ := s.Transcript(ctx)
	if n := len(tr.Messages); n != 6 || tr.Messages[n-2].Text() != `{"reply":"{\"x\": 4}"}` {
		t.Fatalf("the correction was not sent on the session: %+v", tr.Messages)
	}
	// The default correction quotes the problem; exhausted retries fail.
	_, err = s.SendStructured(ctx, api.UserInput{Message: `{"reply":"not json"}`}, json.RawMessage(pointSchema), 1)
	if !errors.Is(err, client.ErrStructuredOutput) || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("exhausted SendStructured = %v", err)
	}
	tr, _ = s.Transcript(ctx)
	if n := len(tr.Messages); !strings.HasPrefix(tr.Messages[n-2].Text(), "Your previous answer is not valid: the answer is not a JSON value") {
		t.Fatalf("default correction = %q", tr.Messages[n-2].Text())
	}
	// A schema that is not one is refused before anything is sent.
	before, _ := s.Refresh(ctx)
	if _, err := s.SendStructured(ctx, api.UserInput{Message: "x"}, json.RawMessage(`{"type":7}`), 0); err == nil {
		t.Fatal("an invalid schema was accepted")
	}
	if _, err := s.SendStructured(ctx, api.UserInput{Message: "x"}, json.RawMessage(`{"$ref":"file:///etc/passwd"}`), 0); err == nil {
		t.Fatal("a schema reference outside the document was loaded")
	}
	if after, _ := s.Refresh(ctx); after.LastSequence != before.LastSequence {
		t.Fatal("an invalid schema still sent a message")
	}
}

func TestAgentloops(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, brain.Config{})
	mod := builtin.DefaultWasm()
	sum := sha256.Sum256(mod)
	ad, err := c.Agentloops.Upload(ctx, mod)
	if err != nil || ad.Status != client.AdmissionAdmitted || ad.ID != hex.EncodeToString(sum[:]) {
		t.Fatalf("Upload = %+v, %v", ad, err)
	}
	got, err := c.Agentloops.Get(ctx, ad.ID)
	if err != nil || got != ad {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	bad, err := c.Agentloops.Upload(ctx, []byte("\x00asm\x01\x00\x00\x00garbage"))
	if err != nil || bad.Status != client.AdmissionRejected || bad.Error == nil {
		t.Fatalf("Upload of a broken module = %+v, %v", bad, err)
	}
	var ae *api.ApiError
	if _, err := c.Agentloops.Upload(ctx, nil); !errors.As(err, &ae) || ae.Code != api.CodeInvalidRequest {
		t.Fatalf("empty Upload = %v", err)
	}
	if _, err := c.Agentloops.Get(ctx, strings.Repeat("0", 64)); !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Fatalf("Get of an unknown id = %v", err)
	}
}
