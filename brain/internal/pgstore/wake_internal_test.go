package pgstore

import "testing"

// FuzzParseWake feeds arbitrary notification payloads (any client of the
// database can NOTIFY the channel): parsing never panics, and whatever it
// accepts encodes back to the same payload.
func FuzzParseWake(f *testing.F) {
	f.Add(wakePayload("s-1", 7))
	f.Add(wakePayload("ses\x00sion", 0))
	f.Add("zz 1")
	f.Add("7331 -1")
	f.Add("7331 01")
	f.Add("")
	f.Fuzz(func(t *testing.T, payload string) {
		session, seq, ok := parseWake(payload)
		if !ok {
			return
		}
		if got := wakePayload(session, seq); got != payload {
			t.Fatalf("parseWake(%q) = %q, %d; encodes back to %q", payload, session, seq, got)
		}
	})
}

func TestParseWake(t *testing.T) {
	if s, n, ok := parseWake(wakePayload("sess-1", 42)); !ok || s != "sess-1" || n != 42 {
		t.Fatalf("round trip = %q, %d, %v", s, n, ok)
	}
	for _, bad := range []string{"", "7331", "zz 1", "7331 x", "7331 -1", "7331 01", "2f 1", " 1"} {
		if _, _, ok := parseWake(bad); ok {
			t.Errorf("parseWake(%q) accepted", bad)
		}
	}
}
