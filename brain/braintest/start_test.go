package braintest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
)

// TestStartServesAndRecovers starts Brain in-process, runs a turn through
// the client, checks the token is required, and starts again over the
// same data directory to find the session's transcript recovered.
func TestStartServesAndRecovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var id string
	t.Run("first", func(t *testing.T) {
		b := braintest.Start(t, braintest.Options{DataDir: dir, Token: "tok"})
		resp, err := http.Get(b.URL + "/v1/sessions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("without the token: %d, want 401", resp.StatusCode)
		}
		s, err := b.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(ctx, api.UserInput{Message: "hello"}); err != nil {
			t.Fatal(err)
		}
		id = s.ID
	})
	b := braintest.Start(t, braintest.Options{DataDir: dir, Token: "tok"})
	tr, err := b.Client(t).Sessions.Open(id).Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) == 0 || !strings.Contains(string(mustText(tr)), "echo: hello") {
		t.Errorf("recovered transcript %+v, want the scripted echo", tr)
	}
}

func mustText(tr api.SessionTranscript) []byte {
	var b strings.Builder
	for _, m := range tr.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
	}
	return []byte(b.String())
}
