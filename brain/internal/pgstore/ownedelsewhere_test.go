package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestWriteToANodeThatLostTheSession: a write forwarded to the node that
// owned the session, which lost its lease to another node before the write
// arrived (a forwarded write is not forwarded again), is refused with 503
// overloaded: nothing ran. That refusal is not the idempotency key's
// answer: the same key, sent again, runs the write on the session's owner.
func TestWriteToANodeThatLostTheSession(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a, b := clusterNode(t, dbURL, keyFile, 10), clusterNode(t, dbURL, keyFile, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ttl := int64(0) // A keeps the session, and its lease, between turns
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	post := func(base, path, key string, body any, forwarded bool) (int, api.ApiError, string) {
		raw, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+s.ID+path, bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		if forwarded {
			req.Header.Set("Brain-Forwarded", "1")
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		var ae api.ApiError
		json.Unmarshal(out, &ae)
		return resp.StatusCode, ae, string(out)
	}
	for _, w := range []struct {
		path string
		body any
		ok   int
	}{
		{"/messages", api.MessageRequest{Input: api.UserInput{Message: "hello"}}, http.StatusOK},
		{"/end", map[string]any{}, http.StatusOK},
	} {
		key := "k" + strings.TrimPrefix(w.path, "/")
		status, ae, body := post(b.url, w.path, key, w.body, true)
		if status != http.StatusServiceUnavailable || ae.Code != api.CodeOverloaded {
			t.Fatalf("%s on a node that does not own the session = %d %s, want 503 %s", w.path, status, body, api.CodeOverloaded)
		}
		status, _, body = post(a.url, w.path, key, w.body, false)
		if status != w.ok {
			t.Fatalf("%s sent again with the same key to the owner = %d %s, want %d", w.path, status, body, w.ok)
		}
	}
}
