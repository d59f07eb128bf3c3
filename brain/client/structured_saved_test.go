package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// answeringLoop is a remote agentloop that answers a message through the
// session's model and saves the conversation, except the message "quiet",
// which it answers with a result and no transcript.
type answeringLoop struct{ envsdk.Base }

func (answeringLoop) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var in api.TurnInput
	if err := json.Unmarshal(x.Input, &in); err != nil || in.Input == nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, "no message")
	}
	if in.Input.Message == "quiet" {
		return envsdk.Output(api.TurnOutput{Result: json.RawMessage(`"nothing saved"`)})
	}
	msgs := append(in.Transcript, api.UserMessage(*in.Input))
	raw, err := x.Invocation.Model(c.Context(), api.ModelRequest{Messages: msgs})
	if err != nil {
		return envapi.Receipt{}, err
	}
	var res api.ModelResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return envapi.Receipt{}, err
	}
	if _, err := x.Invocation.SetTranscript(c.Context(), append(msgs, res.Message)); err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(api.TurnOutput{})
}

// TestSendStructuredNeedsTheTurnsAnswer: a turn whose loop saved no
// transcript has no answer to validate; the previous turn's answer, still
// last in the transcript, is not taken for it.
func TestSendStructuredNeedsTheTurnsAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const loopToken = "answering-loop-token"
	loops := httptest.NewServer(envsdk.NewHandler(answeringLoop{}, &envsdk.Options{Token: loopToken}))
	defer loops.Close()
	b := braintest.Start(t, braintest.Options{Token: "operator"})
	c, err := client.New(b.URL, &client.Options{Token: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "demo"},
		Environments: []api.Environment{{Name: "loops", Driver: api.DriverHTTP, URL: loops.URL, Credential: loopToken}},
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"loop":"answering"}`), Environment: "loops"},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SendStructured(ctx, api.UserInput{Message: `{"reply":"{\"x\": 3}"}`}, json.RawMessage(pointSchema), 0)
	if err != nil || string(v) != `{"x": 3}` {
		t.Fatalf("SendStructured = %s, %v; want {\"x\": 3}", v, err)
	}
	v, err = s.SendStructured(ctx, api.UserInput{Message: "quiet"}, json.RawMessage(pointSchema), 0)
	if !errors.Is(err, client.ErrStructuredOutput) || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("SendStructured of a turn that saved nothing = %s, %v; want ErrStructuredOutput, no answer", v, err)
	}
}
