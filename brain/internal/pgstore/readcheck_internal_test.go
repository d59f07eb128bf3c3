package pgstore

import (
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// FuzzCheckPage feeds arbitrary rows, as a damaged database could hold
// them, to the check of a read page: it never panics, refuses with
// journal.ErrDamaged only, and passes a record only when it is one an
// append could have written, in its place before the head.
func FuzzCheckPage(f *testing.F) {
	f.Add(uint64(0), int64(3), uint64(1), "k", []byte(`{"n":1}`), []byte(nil), uint64(2), []byte(`2`), true)
	f.Add(uint64(4), int64(6), uint64(5), "", []byte(`{`), []byte{0xff}, uint64(6), []byte(nil), false)
	f.Add(uint64(0), int64(-1), uint64(1), "k", []byte(nil), []byte(`null`), uint64(3), []byte(`{}`), true)
	f.Add(^uint64(0), int64(1<<62), uint64(0), "k", []byte(`1`), []byte(nil), uint64(1), []byte(`[`), true)
	f.Fuzz(func(t *testing.T, after uint64, next int64, seq uint64, kind string, data, origin []byte, seq2 uint64, data2 []byte, hasSession bool) {
		page := []journal.Record{
			{Sequence: seq, Kind: kind, Data: data, Origin: origin},
			{Sequence: seq2, Kind: "k", Data: data2},
		}
		var head *int64
		if hasSession {
			head = &next
		}
		got, err := checkPage("s", after, head, page)
		if err != nil {
			if got != nil || !errors.Is(err, journal.ErrDamaged) {
				t.Fatalf("checkPage = %d records, %v; want none and ErrDamaged", len(got), err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("checkPage passed no record of a page of two, without an error")
		}
		for i, r := range got {
			if head == nil || r.Sequence != after+1+uint64(i) || next < 2 || r.Sequence >= uint64(next) || journal.CheckAppend("s", got[i:i+1]) != nil {
				t.Fatalf("checkPage passed record %d %q %q %q after %d, head %v", r.Sequence, r.Kind, r.Data, r.Origin, after, next)
			}
		}
	})
}
