package pgstore_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// counterValue answers the value of the sample of the Prometheus text
// exposition body whose name and labels are sample (e.g.
// `brain_turns_total{outcome="ok"}`), 0 when there is none.
func counterValue(t *testing.T, body, sample string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMetricsCountWhatThisNodeCommits runs a turn on a Brain whose
// journal is PostgreSQL: the turn, its model call and its latency are
// counted on /metrics as they are with the data directory.
func TestMetricsCountWhatThisNodeCommits(t *testing.T) {
	url := pgtest.Database(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	node := startNode(t, url, keyFile)
	ctx := context.Background()
	s, err := node.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", node.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+node.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for sample, want := range map[string]float64{
		`brain_turns_total{outcome="ok"}`:                     1,
		`brain_effects_total{kind="model_call",outcome="ok"}`: 1,
		`brain_model_call_seconds_count`:                      1,
	} {
		if got := counterValue(t, body, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}
