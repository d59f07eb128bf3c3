package session

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// cannedStream answers every request in process with one short stream of
// the dialect its path names, after reading the request body whole.
type cannedStream struct{}

func (cannedStream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	body := `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}` + "\n\n" + "data: [DONE]\n\n"
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages"):
		body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"ok\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	case strings.HasSuffix(r.URL.Path, "/responses"):
		body = `data: {"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n"
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// transcript200 is a saved conversation of 200 messages: user questions,
// assistant answers with a tool call each, and their results.
func transcript200() []api.Message {
	msgs := make([]api.Message, 0, 200)
	for i := 0; len(msgs) < 200; i++ {
		msgs = append(msgs, api.UserMessage(api.UserInput{Message: fmt.Sprintf("question %d: %s", i, strings.Repeat("words and more words ", 10))}))
		msgs = append(msgs, api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{
			api.TextBlock(fmt.Sprintf("answer %d: %s", i, strings.Repeat("some reasoning here ", 10))),
			{Type: api.BlockToolUse, ID: fmt.Sprintf("call_%d", i), Name: "echo", Input: []byte(`{"path":"/a/b/c","depth":3}`)},
		}})
		msgs = append(msgs, api.Message{Role: api.RoleUser, Content: []api.ContentBlock{
			{Type: api.BlockToolResult, ToolUseID: fmt.Sprintf("call_%d", i), Content: []byte(`"` + strings.Repeat("result line ", 12) + `"`)},
		}})
	}
	return msgs[:200]
}

// BenchmarkModelCall200 is the engine's cost of one model call of a loop
// whose saved transcript holds 200 messages, per hosted dialect: checking
// and encoding the request, its model_call_started and model_call_ended
// records (in-memory journal), and reading a short answer from a provider
// answering in process.
func BenchmarkModelCall200(b *testing.B) {
	for _, provider := range []string{model.ProviderAnthropic, model.ProviderOpenAI, model.ProviderOpenAIChat} {
		b.Run(provider, func(b *testing.B) { benchModelCall(b, provider) })
	}
}

func benchModelCall(b *testing.B, provider string) {
	models, err := model.New(model.Config{HTTPClient: &http.Client{Transport: cannedStream{}}})
	if err != nil {
		b.Fatal(err)
	}
	msgs := transcript200()
	var ran int
	loop := func(ctx context.Context, svc agentloop.Services, _ api.TurnInput) (api.TurnOutput, error) {
		if _, err := svc.SetTranscript(ctx, msgs); err != nil {
			return api.TurnOutput{}, err
		}
		b.ResetTimer()
		for ran = 0; ran < b.N; ran++ {
			if _, err := svc.Model(ctx, api.ModelRequest{Messages: msgs}); err != nil {
				return api.TurnOutput{}, err
			}
		}
		b.StopTimer()
		return api.TurnOutput{}, nil
	}
	store := journal.NewMemStore()
	e, err := New(Config{Store: store, Models: models, Environments: newFakeEnvs(map[string]string{"box": "echo"}),
		Loops: testLoops(map[string]agentloop.Func{"l": loop})})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	req := toolSession("echo")
	req.Model = api.ModelConfig{Provider: provider, Name: "m", APIKey: "k"}
	req.System = "You are a helpful assistant."
	req.Agentloop = testLoop("l")
	sum, err := e.Create(context.Background(), "", req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	if _, err := e.Send(context.Background(), sum.SessionID, api.UserInput{Message: "go"}); err != nil {
		b.Fatal(err)
	}
	if ran != b.N {
		b.Fatalf("%d model calls of %d", ran, b.N)
	}
}
