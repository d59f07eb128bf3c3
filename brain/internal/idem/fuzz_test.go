package idem

import (
	"bytes"
	"testing"
	"time"
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
