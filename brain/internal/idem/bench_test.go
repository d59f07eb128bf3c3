package idem

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// BenchmarkJournaled measures what a riding claim costs its request in
// records: the claim and the answer record written, then read back when
// the journal made them durable. `form` is this package's path,
// `encoding-json` the same records through json.Marshal and
// json.Unmarshal (the baseline).
//
//	go test ./brain/internal/idem -run '^$' -bench Journaled -count 6
func BenchmarkJournaled(b *testing.B) {
	digest := Digest([]byte(`{"input":{"message":"hello"}}`))
	body := []byte(`{"session_id":"s_0123456789abcdef","status":"idle","last_sequence":1234}`)
	b.Run("form", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := ClaimRecord(benchScope, "key-0123456789", digest, 1764800000000)
			a := AnswerRecord(benchScope, "key-0123456789", 1764800000001, 200, body)
			if _, err := decodeJournaled(commits.ClaimKind, c); err != nil {
				b.Fatal(err)
			}
			if _, err := decodeJournaled(commits.AnswerKind, a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, _ := json.Marshal(journaled{V: 1, Scope: benchScope, Key: []byte("key-0123456789"), Digest: digest[:], AtMs: 1764800000000})
			a, _ := json.Marshal(journaled{V: 1, Scope: benchScope, Key: []byte("key-0123456789"), AtMs: 1764800000001, Status: 200, Body: body})
			var jc, ja journaled
			if json.Unmarshal(c, &jc) != nil || json.Unmarshal(a, &ja) != nil {
				b.Fatal("decode")
			}
		}
	})
}

// benchScope is the scope of a synchronous message.
const benchScope = "send_message"
