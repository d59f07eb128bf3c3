package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// FuzzWellFormed: whatever a provider answers, the failure check answers
// nil or an error of bounded size (a report quotes excerpts, never a
// provider's whole body), never a panic; and a receipt it passes is one
// Brain's decoder takes as a failure.
func FuzzWellFormed(f *testing.F) {
	f.Add([]byte(`{"receipt":{"type":"failure","code":"unsupported","message":"no","retryable":false}}`))
	f.Add([]byte(`{"receipt":{"type":"failure","code":"busy","message":"m","retryable":true,"details":{"a":1}}}`))
	f.Add([]byte(`{"receipt":{"type":"result","output":1}}`))
	f.Add([]byte(`{"receipt":{"type":"failure","code":"x","message":"m","retryable":"yes"}}`))
	f.Add([]byte(`{"receipt":{"type":"failure","code":"x","message":"` + "\xb0" + `","retryable":false}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := wellFormed(body)
		if err != nil {
			if n := len(err.Error()); n > 600 {
				t.Fatalf("a %d-byte report for a %d-byte body", n, len(body))
			}
			return
		}
		var doc struct {
			Receipt json.RawMessage `json:"receipt"`
		}
		_ = json.Unmarshal(body, &doc)
		r, derr := envapi.DecodeReceipt(doc.Receipt)
		if derr != nil {
			t.Fatalf("the check passed a failure receipt Brain refuses: %v\n%s", derr, body)
		}
		if r.Type != envapi.ReceiptFailure {
			t.Fatalf("the check passed a %s receipt as a failure", r.Type)
		}
	})
}

// A report quotes an excerpt of a provider's field, not the field: a
// megabyte-long code makes a report of a few hundred bytes.
func TestWellFormedQuotesExcerpts(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, body := range []string{
		`{"receipt":{"type":"` + long + `"}}`,
		`{"receipt":{"type":"failure","code":"` + long + `"}}`,
		`{"receipt":{"type":"failure","code":"c","message":"m","retryable":"` + long + `"}}`,
		`{"receipt":{"type":"failure","code":"c","message":"m","retryable":true,"` + long + `":1}}`,
	} {
		err := wellFormed([]byte(body))
		if err == nil || len(err.Error()) > 600 {
			t.Errorf("report of %d bytes (%v...)", len(fmt.Sprint(err)), excerpt([]byte(fmt.Sprint(err)), 60))
		}
	}
}

// An output that does not match the profile is quoted as an excerpt too.
func TestOutputMismatchQuotesExcerpts(t *testing.T) {
	got := []byte(`{"out":"` + strings.Repeat("y", 1<<20) + `"}`)
	err := jsonMatch(got, []byte(`{"out":"z"}`), true)
	if err == nil || len(err.Error()) > 600 || !strings.Contains(err.Error(), "bytes)") {
		t.Fatalf("report of %d bytes", len(fmt.Sprint(err)))
	}
}

// A failure message is bounded in characters, as Brain's decoder bounds
// it: 4096 of them pass even when they take more bytes, 4097 do not.
func TestWellFormedCountsMessageCharacters(t *testing.T) {
	receipt := func(message string) []byte {
		m, _ := json.Marshal(message)
		return []byte(`{"receipt":{"type":"failure","code":"busy","message":` + string(m) + `,"retryable":true}}`)
	}
	if err := wellFormed(receipt(strings.Repeat("é", envapi.MaxMessageLen))); err != nil {
		t.Errorf("a message of %d two-byte characters: %v", envapi.MaxMessageLen, err)
	}
	if _, err := envapi.DecodeReceipt(json.RawMessage(`{"type":"failure","code":"busy","message":"` + strings.Repeat("é", envapi.MaxMessageLen) + `","retryable":true}`)); err != nil {
		t.Fatalf("Brain's decoder refuses it: %v", err)
	}
	if err := wellFormed(receipt(strings.Repeat("é", envapi.MaxMessageLen+1))); err == nil {
		t.Errorf("a message of %d characters passed", envapi.MaxMessageLen+1)
	}
}
