package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/braintest"
)

// TestUsageHidesToken: "remote-agentloop -help", and the usage printed after a
// mistyped flag, never show the token LOOPS_TOKEN holds; the variable
// still sets the token the server requires.
func TestUsageHidesToken(t *testing.T) {
	const token = "sekrit-loops-token"
	t.Setenv("LOOPS_TOKEN", token)
	for _, args := range [][]string{{"-help"}, {"--no-such-flag"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, &out, &out); err == nil {
			t.Fatalf("%v: ran", args)
		}
		if !strings.Contains(out.String(), "LOOPS_TOKEN") {
			t.Fatalf("%v: no usage printed:\n%s", args, out.String())
		}
		if strings.Contains(out.String(), "sekrit") {
			t.Errorf("%v: the usage shows the token:\n%s", args, out.String())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	out := &braintest.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--listen", "127.0.0.1:0"}, out, &braintest.Buffer{}) }()
	url := braintest.WaitLine(t, out, "agentloops serving on ")
	for _, c := range []struct {
		auth   string
		authed bool
	}{{"Bearer " + token, true}, {"Bearer wrong", false}} {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/operations", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", c.auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode != http.StatusUnauthorized) != c.authed {
			t.Errorf("%s: %d", c.auth, resp.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
