package loophost

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeNote: a stored rejection note, whatever its bytes, is taken
// only as a rejection of its own module with an error to show; never a
// panic, never another status.
func FuzzDecodeNote(f *testing.F) {
	id := idOf([]byte("module"))
	good, _ := json.Marshal(note{Admission: rejected(id, "exports no memory"), Judged: "j"})
	f.Add(id, good)
	f.Add(id, []byte(`{"id":"`+id+`","status":"admitted"}`))
	f.Add(id, []byte(`{"id":"`+id+`","status":"rejected","error":{"code":"","message":"m"}}`))
	f.Add(id, []byte(`{"id":"other","status":"rejected","error":{"code":"invalid_request","message":"m"}}`))
	f.Add(id, []byte(`null`))
	f.Fuzz(func(t *testing.T, id string, b []byte) {
		a, ok := decodeNote(id, b, "j")
		if !ok {
			return
		}
		if a.ID != id || a.Status != StatusRejected || a.Error == nil || a.Error.Code == "" || a.Error.Message == "" {
			t.Fatalf("note %s taken as %+v", b, a)
		}
	})
}
