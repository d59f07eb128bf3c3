package session

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// A provider's error body longer than the model client's MaxErrorBytes
// is read only that far, which may end inside a character: the turn
// fails with a message that is valid UTF-8, the cut character left out,
// and model_call_failed, turn_failed and the answer say the same.
func TestProviderErrorCutInsideCharacterStaysValid(t *testing.T) {
	body := strings.Repeat("ошибка ", 100) // 2-byte characters
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	// Bounds at every offset of a character: some end inside one.
	for _, limit := range []int64{100, 101, 102, 103} {
		models, err := model.New(model.Config{OpenAIBaseURL: srv.URL + "/v1", Limits: model.Limits{MaxErrorBytes: limit}})
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, Config{Models: models}, nil)
		id := h.create(api.CreateSessionRequest{Model: api.ModelConfig{Provider: model.ProviderOpenAI, Name: "gpt-test", APIKey: "sk-test-1"}})
		_, err = h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
		var te *TurnError
		if !errors.As(err, &te) || te.Code != api.CodeModelProviderFailed {
			t.Fatalf("Send = %v, want a %s turn error", err, api.CodeModelProviderFailed)
		}
		answer := APIError(err).Message
		if !utf8.ValidString(answer) || strings.ContainsRune(answer, utf8.RuneError) {
			t.Errorf("MaxErrorBytes %d: the answer's message ends %q: not whole characters", limit, answer[max(0, len(answer)-12):])
		}
		if !strings.Contains(answer, "ошибка ошибка") {
			t.Errorf("MaxErrorBytes %d: the answer's message %q does not keep the provider's text", limit, answer)
		}
		recs := h.records(id)
		for _, kind := range []string{api.KindModelCallFailed, api.KindTurnFailed} {
			fs := ofKind(recs, kind)
			if len(fs) != 1 {
				t.Fatalf("%d %s records, want 1", len(fs), kind)
			}
			if f := decode[api.Failure](t, fs[0].Data); f.Message != answer {
				t.Errorf("MaxErrorBytes %d: %s message ends %q, the answer's %q", limit, kind, f.Message[max(0, len(f.Message)-12):], answer[max(0, len(answer)-12):])
			}
		}
	}
}
