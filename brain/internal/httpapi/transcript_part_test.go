package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// createWithTranscript creates a session opened with n user messages,
// "message 0" to "message n-1", and answers its id.
func (f *fixture) createWithTranscript(key string, n int) string {
	f.t.Helper()
	msgs := make([]api.Message, n)
	for i := range msgs {
		msgs[i] = api.UserMessage(api.UserInput{Message: fmt.Sprint("message ", i)})
	}
	body, err := json.Marshal(map[string]any{"model": map[string]string{"provider": "scripted", "name": "m"}, "transcript": msgs})
	if err != nil {
		f.t.Fatal(err)
	}
	st, _, b := f.do("POST", "/v1/sessions", string(body), "Idempotency-Key", key)
	if st != 200 {
		f.t.Fatalf("create = %d %.300s", st, b)
	}
	var sum api.SessionSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		f.t.Fatal(err)
	}
	return sum.SessionID
}

// texts answers the text of each message.
func texts(msgs []api.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		if len(m.Content) > 0 {
			out[i] = m.Content[0].Text
		}
	}
	return out
}

// numbered answers "message from" to "message to-1".
func numbered(from, to int) []string {
	out := []string{}
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint("message ", i))
	}
	return out
}

// TestTranscriptPart reads parts of a transcript with from and limit or
// tail: each answers the messages asked for, the transcript's total and
// the place of the first one, while a read without them answers the
// whole transcript as it always has.
func TestTranscriptPart(t *testing.T) {
	f := newFixture(t, Options{})
	const total = 25
	id := f.createWithTranscript("c-part", total)
	path := "/v1/sessions/" + id + "/transcript"

	st, _, whole := f.do("GET", path, "")
	if st != 200 {
		t.Fatalf("GET %s = %d %.300s", path, st, whole)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(whole, &members); err != nil {
		t.Fatal(err)
	}
	if _, ok := members["total"]; ok || len(members) != 2 {
		t.Errorf("the whole transcript answers the members %v, want messages and through_sequence only", keysOf(members))
	}
	var all api.SessionTranscript
	if err := json.Unmarshal(whole, &all); err != nil {
		t.Fatal(err)
	}
	if got := texts(all.Messages); strings.Join(got, ",") != strings.Join(numbered(0, total), ",") {
		t.Fatalf("the whole transcript is %v", got)
	}
	// A query naming none of the part's values reads the whole, unchanged.
	if st, _, b := f.do("GET", path+"?other=1", ""); st != 200 || string(b) != string(whole) {
		t.Errorf("GET %s?other=1 = %d %.300s, want the whole transcript as without a query", path, st, b)
	}

	for _, c := range []struct {
		query          string
		from, to, at   int
		wantTotalCount int
	}{
		{"tail=5", 20, 25, 20, total},
		{"tail=0", 0, 0, 25, total},
		{"tail=1000", 0, 25, 0, total},
		{"from=3&limit=4", 3, 7, 3, total},
		{"limit=4&from=3", 3, 7, 3, total},
		{"from=23", 23, 25, 23, total},
		{"from=25", 0, 0, 25, total},
		{"from=40&limit=3", 0, 0, 25, total},
		{"limit=2", 0, 2, 0, total},
		{"from=7&limit=0", 0, 0, 7, total},
		{"from=0&other=1", 0, 25, 0, total},
	} {
		st, _, b := f.do("GET", path+"?"+c.query, "")
		if st != 200 {
			t.Errorf("GET ?%s = %d %.300s, want 200", c.query, st, b)
			continue
		}
		var part api.TranscriptPart
		if err := json.Unmarshal(b, &part); err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		want := numbered(c.from, c.to)
		if got := texts(part.Messages); strings.Join(got, ",") != strings.Join(want, ",") || part.Total != c.wantTotalCount || part.Offset != c.at ||
			part.ThroughSequence != all.ThroughSequence || m["total"] == nil || m["offset"] == nil || string(m["messages"]) == "null" {
			t.Errorf("GET ?%s = %.300s; want messages %v, total %d, offset %d, through_sequence %d", c.query, b, want, c.wantTotalCount, c.at, all.ThroughSequence)
		}
	}
}

// TestTranscriptPartBounds: a part read with from alone holds at most
// MaxTranscriptPart messages, saying how many the transcript holds.
func TestTranscriptPartBounds(t *testing.T) {
	f := newFixture(t, Options{})
	const total = api.MaxTranscriptPart + 300
	id := f.createWithTranscript("c-bounds", total)
	st, _, b := f.do("GET", "/v1/sessions/"+id+"/transcript?from=100", "")
	var part api.TranscriptPart
	if err := json.Unmarshal(b, &part); st != 200 || err != nil {
		t.Fatalf("GET ?from=100 = %d %.300s", st, b)
	}
	if got := texts(part.Messages); len(got) != api.MaxTranscriptPart || got[0] != "message 100" || got[len(got)-1] != fmt.Sprint("message ", 100+api.MaxTranscriptPart-1) ||
		part.Total != total || part.Offset != 100 {
		t.Errorf("GET ?from=100 answered %d messages (%q..) at offset %d of %d; want %d from message 100 of %d",
			len(got), got[0], part.Offset, part.Total, api.MaxTranscriptPart, total)
	}
}

// TestTranscriptPartRefused: a part's value the server cannot take is
// refused with 400 invalid_request, not read as no part (which would
// send the whole transcript), and leaves the transcript as it was.
func TestTranscriptPartRefused(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.createWithTranscript("c-refused", 3)
	path := "/v1/sessions/" + id + "/transcript"
	_, _, before := f.do("GET", path, "")
	for _, q := range []string{
		"from=-1", "from=x", "from=", "from=1.5", "from=1&from=2", "from=%2B1", "from=99999999999999999999",
		"limit=-3", "limit=1001", "limit=", "limit=1&limit=1",
		"tail=1001", "tail=-1", "tail=", "tail=0x10", "tail=2&tail=2",
		"tail=2&from=1", "tail=2&limit=1",
		"tail=%zz", "from=1&%zz",
	} {
		st, _, b := f.do("GET", path+"?"+q, "")
		var e api.ApiError
		json.Unmarshal(b, &e)
		if st != 400 || e.Code != api.CodeInvalidRequest || e.Message == "" {
			t.Errorf("GET ?%s = %d %.300s, want 400 invalid_request", q, st, b)
		}
	}
	if st, _, after := f.do("GET", path, ""); st != 200 || string(after) != string(before) {
		t.Errorf("after the refused reads the transcript reads %d %.300s, want %.300s", st, after, before)
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
