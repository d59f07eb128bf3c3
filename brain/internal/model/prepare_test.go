package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestPreparedSendsWhatWasChecked: a prepared request is sent as it was
// checked and built: changing the caller's request afterwards changes
// nothing sent, and the bytes are those a direct call of the original
// request sends.
func TestPreparedSendsWhatWasChecked(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := fakeClient(t, d.provider, d.model)
			f.set(sse(d.render(turn{text: []string{"ok"}, stop: api.StopEndTurn, in: 3, out: 1})))
			sys := "be brief"
			req := Request{System: &sys, Messages: []api.Message{api.UserMessage(api.UserInput{Message: "the question"})},
				Options: json.RawMessage(`{"temperature":0.5}`)}
			if _, err := c.Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			direct := f.last(t).Raw

			p, err := Prepare(c, req)
			if err != nil {
				t.Fatal(err)
			}
			req.Messages[0].Content[0].Text = "another question"
			sys = "be verbose"
			if _, err := p.Call(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			sent := f.last(t).Raw
			if !bytes.Equal(sent, direct) {
				t.Fatalf("prepared call sent\n%s\nwant the bytes of the request as prepared\n%s", sent, direct)
			}
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
		})
	}
}

// TestPrepareRefusesWhatCallRefuses: Prepare refuses, sending nothing, a
// request the dialect cannot carry, with the error Call answers.
func TestPrepareRefusesWhatCallRefuses(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := fakeClient(t, d.provider, d.model)
			req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "q"})}, Options: json.RawMessage(`{"no_such_option":1}`)}
			p, err := Prepare(c, req)
			if !errors.Is(err, ErrInvalidRequest) || p != nil {
				t.Fatalf("Prepare = %v, %v; want ErrInvalidRequest", p, err)
			}
			_, callErr := c.Call(context.Background(), req, nil)
			if callErr == nil || callErr.Error() != err.Error() {
				t.Fatalf("Call = %v, Prepare = %v; want the same refusal", callErr, err)
			}
			if n := len(f.requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
}
