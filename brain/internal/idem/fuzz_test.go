package idem

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
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
		good, err := s.load(b)
		if err != nil {
			return
		}
		// Zero bytes after what loads are cut as a crash's tail and
		// change nothing of what loads.
		zeroed := append(b[:good:good], make([]byte, 1+len(b)%5000)...)
		z := &Store{entries: map[entryKey]*entry{}}
		z.opts.Now = s.opts.Now
		if n, err := z.load(zeroed); err != nil || n != good || len(z.entries) != len(s.entries) {
			t.Fatalf("with zeros after %d good bytes: load = %d, %v with %d entries, want %d, nil with %d", good, n, err, len(z.entries), good, len(s.entries))
		}
		// So is a write whose first sectors reached the disk while the
		// rest reads as zero.
		big := appendFrame(nil, &record{Type: typeAnswer, AtMs: 1, Scope: "s", Key: "k", Status: 200, Body: bytes.Repeat([]byte("b"), 1200+len(b)%700)})
		kept := (good/tornSector+1+len(b)%2)*tornSector - good
		torn := append(b[:good:good], big[:kept]...)
		torn = append(torn, make([]byte, len(big)-kept+len(b)%100)...)
		if n, err := z.load(torn); err != nil || n != good {
			t.Fatalf("with a torn frame and zeros after %d good bytes: load = %d, %v", good, n, err)
		}
		// A frame after zeros (a zero length field at least) is damage.
		if good > 0 {
			zeroed = append(b[:good:good], make([]byte, 4+len(b)%5000)...)
			if _, err := z.load(append(zeroed, b[:good]...)); !errors.Is(err, ErrDamaged) {
				t.Fatalf("zeros before a frame: load = %v, want ErrDamaged", err)
			}
		}
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

// FuzzJournaledParse holds parseJournaled to encoding/json: what it
// accepts, json.Unmarshal decodes to the same value.
func FuzzJournaledParse(f *testing.F) {
	f.Add([]byte(`{"v":1,"scope":"send_message","key":"aw==","digest":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","at_ms":1}`))
	f.Add([]byte(`{"v":1,"scope":"send_message","key":"aw==","at_ms":-2,"status":200,"body":"e30="}`))
	f.Add([]byte(`{"v":1,"scope":"é\u2028","key":"","at_ms":0}`))
	f.Add([]byte(`{"v":01,"scope":"s","key":"aw==","at_ms":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := parseJournaled(data)
		if !ok {
			return
		}
		var want journaled
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("parseJournaled accepts %q, which json.Unmarshal refuses: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseJournaled(%q) = %+v, json.Unmarshal gives %+v", data, got, want)
		}
	})
}

// FuzzJournaledAppend holds appendJournaled to json.Marshal: the bytes
// are the same, and parseJournaled reads them back.
func FuzzJournaledAppend(f *testing.F) {
	f.Add("send_message", []byte("k"), make([]byte, 32), int64(1), 0, []byte(nil))
	f.Add("send_message_async", []byte("k2"), []byte(nil), int64(-5), 202, []byte(`{"a":1}`))
	f.Add("<&>\u2028\x01é\xff", []byte{}, []byte{1}, int64(0), -1, []byte{0})
	f.Fuzz(func(t *testing.T, scope string, key, digest []byte, at int64, status int, body []byte) {
		j := journaled{V: 1, Scope: scope, Key: key, Digest: digest, AtMs: at, Status: status, Body: body}
		want, err := json.Marshal(&j)
		if err != nil {
			t.Fatal(err)
		}
		if got := marshalJournaled(&j); !bytes.Equal(got, want) {
			t.Fatalf("marshalJournaled = %s, json.Marshal gives %s", got, want)
		}
		got, ok := appendJournaled(nil, &j)
		if !ok {
			return
		}
		back, ok := parseJournaled(got)
		if !ok {
			if status == int(int32(status)) {
				t.Fatalf("parseJournaled refuses %s", got)
			}
			return
		}
		var viaJSON journaled
		if err := json.Unmarshal(got, &viaJSON); err != nil || !reflect.DeepEqual(back, viaJSON) {
			t.Fatalf("read back %+v, json.Unmarshal gives %+v (%v)", back, viaJSON, err)
		}
	})
}
