package idem

import (
	"bytes"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// FuzzDecode feeds arbitrary bytes to the requests.log decoder: it must
// never panic, and a frame that decodes must encode back to the same bytes.
func FuzzDecode(f *testing.F) {
	var seed []byte
	seed = appendFrame(seed, &record{Type: typeClaim, AtMs: 7, Scope: "create_session", Key: "k", Digest: Digest([]byte("x"))})
	seed = appendFrame(seed, &record{Type: typeAnswer, AtMs: 8, Scope: "create_session", Key: "k", Status: 200, Body: []byte(`{}`)})
	seed = appendFrame(seed, &record{Type: typeRelease, AtMs: 9, Scope: "s", Key: "k"})
	seed = appendFrame(seed, &record{Type: typeHinted, AtMs: 10, Scope: "s", Key: "k", Digest: Digest([]byte("y")), Hint: []byte("hint")})
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		off := 0
		for off < len(b) {
			r, n, st := nextFrame(b[off:])
			if st != frameOK {
				return
			}
			if again := appendFrame(nil, &r); !bytes.Equal(again, b[off:off+n]) {
				t.Fatalf("frame at %d does not round-trip", off)
			}
			off += n
		}
		s := &Store{entries: map[entryKey]*entry{}}
		s.opts.Now = time.Now
		_, _ = s.load(b)
	})
}

// FuzzJournaled feeds arbitrary data to the decoder of journaled claim
// and answer records: it must never panic, and what it accepts is a
// valid requests.log record.
func FuzzJournaled(f *testing.F) {
	f.Add(true, []byte(`{"v":1,"scope":"send_message","key":"aw==","digest":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","at_ms":1}`))
	f.Add(false, []byte(`{"v":1,"scope":"send_message","key":"aw==","at_ms":2,"status":200,"body":"e30="}`))
	f.Add(false, []byte(`{`))
	f.Fuzz(func(t *testing.T, claim bool, data []byte) {
		kind := commits.AnswerKind
		if claim {
			kind = commits.ClaimKind
		}
		r, err := decodeJournaled(kind, data)
		if err != nil {
			return
		}
		if err := checkRecord(&r); err != nil {
			t.Fatalf("accepted record fails its check: %v", err)
		}
		s := &Store{entries: map[entryKey]*entry{}}
		var ignored func()
		s.foldJournaledLocked(&r, &ignored)
	})
}
