package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// FuzzCompactAnswer sends any bytes, with any status, over loopback HTTP
// as the answer of the Responses /responses/compact endpoint. The client
// answers a result or an error, never a panic; an error never carries the
// API key; a result ends its turn and holds every compacted item as a
// native Responses block whose data is a JSON object with a type, which
// the next request replays as it is.
func FuzzCompactAnswer(f *testing.F) {
	var (
		mu     sync.Mutex
		status int
		body   []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st, b := status, body
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		_, _ = w.Write(b)
	}))
	f.Cleanup(srv.Close)
	p, err := New(Config{OpenAIBaseURL: srv.URL + "/v1", Limits: Limits{Timeout: 5 * time.Second, MaxOutputBytes: 1 << 16}})
	if err != nil {
		f.Fatal(err)
	}
	c, err := p.Open(Spec{Provider: ProviderOpenAI, Name: "gpt-test", APIKey: testKey})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint16(200), []byte(compactionAnswer()))
	f.Add(uint16(200), []byte(`{"output":[{"type":"compaction","encrypted_content":"`+testKey+`"}]}`))
	f.Add(uint16(200), []byte(`{"output":[{"id":"x"}],"usage":{"input_tokens":3}}`))
	f.Add(uint16(200), []byte(`{"output":[null,7,"s"]}`))
	f.Add(uint16(200), []byte(`{"output":{}}`))
	f.Add(uint16(200), []byte(`[]`))
	f.Add(uint16(200), []byte(`{"output":[{"type":"message","content":"`+strings.Repeat("x", 1<<16)+`"}]}`))
	f.Add(uint16(400), []byte(`{"error":{"message":"bad key `+testKey+`","type":"invalid_request_error","code":"invalid_api_key"}}`))
	f.Add(uint16(503), []byte(`upstream `+testKey))
	f.Fuzz(func(t *testing.T, st uint16, b []byte) {
		if st < 200 || st > 599 || (st >= 300 && st < 400) {
			st = 200
		}
		mu.Lock()
		status, body = int(st), b
		mu.Unlock()
		req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Book a table for two"})},
			Options: json.RawMessage(`{"operation":"compact"}`)}
		res, err := c.Call(context.Background(), req, func(Delta) { t.Error("a compaction has no live output") })
		if err != nil {
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("the error carries the API key: %v", err)
			}
			var pe *ProviderError
			if errors.As(err, &pe) && strings.Contains(pe.Message, testKey) {
				t.Fatalf("the provider error's message carries the API key: %q", pe.Message)
			}
			return
		}
		if st/100 != 2 {
			t.Fatalf("status %d answered a result %+v", st, res)
		}
		if res.StopReason != api.StopEndTurn {
			t.Fatalf("stop reason %q", res.StopReason)
		}
		for _, blk := range res.Message.Content {
			var item struct {
				Type string `json:"type"`
			}
			if blk.Type != api.BlockNative || blk.Format != NativeOpenAIResponses {
				t.Fatalf("block %+v is not a native %s block", blk, NativeOpenAIResponses)
			}
			if err := json.Unmarshal(blk.Data, &item); err != nil || item.Type == "" {
				t.Fatalf("native block data %s is not an item with a type: %v", blk.Data, err)
			}
			if !replayable(blk) {
				t.Fatalf("native block %s is not replayed", blk.Data)
			}
		}
	})
}
