package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// allSequences answers the sequences of every event of the session, read
// page by page.
func allSequences(t *testing.T, f *fixture, sid string) []uint64 {
	t.Helper()
	var out []uint64
	for cursor := uint64(0); ; {
		st, _, b := f.do("GET", fmt.Sprint("/v1/sessions/", sid, "/events?after=", cursor), "")
		var page api.EventPage
		if st != 200 || json.Unmarshal(b, &page) != nil {
			t.Fatalf("events = %d %s", st, b)
		}
		if len(page.Events) == 0 {
			return out
		}
		for _, ev := range page.Events {
			out = append(out, ev.Sequence)
		}
		cursor = page.NextCursor
	}
}

// A stream still reading history is not a lagging subscriber: records
// committed meanwhile, more than the live backlog, reach it once each,
// in order, after the history, and the stream goes on to the session's
// end instead of being cut.
func TestStreamCatchingUpIsNotCutAsLagging(t *testing.T) {
	f := newFixtureSndbuf(t, Options{MaxLiveBacklog: 16}, 8<<10)
	sid := f.create("c").SessionID
	big := strings.Repeat("z", 256<<10)
	for i := range 3 {
		if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"`+big+`"}}`, "Idempotency-Key", fmt.Sprint("h", i)); st != 200 {
			t.Fatalf("send = %d %s", st, b)
		}
	}
	// The reader does not read yet: the catch-up stops on a full socket.
	_, br := openRaw(t, f, sid, 4<<10)
	for i := range 6 {
		if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"m"}}`, "Idempotency-Key", fmt.Sprint("m", i)); st != 200 {
			t.Fatalf("send = %d %s", st, b)
		}
	}
	want := allSequences(t, f, sid)
	if len(want) < 3*16 {
		t.Fatalf("only %d events: too few to overrun the backlog", len(want))
	}
	var got []uint64
	read := func(until func(line string) bool) {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended (%v) after %d events (%d committed before)", err, len(got), len(want))
			}
			var seq uint64
			if _, err := fmt.Sscanf(line, "id: %d", &seq); err == nil {
				got = append(got, seq)
			}
			if until(line) {
				return
			}
		}
	}
	read(func(string) bool { return len(got) > 0 && got[len(got)-1] >= want[len(want)-1] })
	// Caught up, the stream follows the session live.
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	read(func(line string) bool { return strings.HasPrefix(line, "event: session_ended") })
	if want := allSequences(t, f, sid); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A stream catching up while a model call streams its output never
// shows that output after the call's model_call_ended (the catch-up may
// already have written it): such frames are dropped, as live frames may
// be, and the stream ends with session_ended.
func TestStreamCatchingUpKeepsLiveFramesInsideTheirCall(t *testing.T) {
	f := newFixtureSndbuf(t, Options{}, 8<<10)
	sid := f.create("c").SessionID
	big := strings.Repeat("z", 256<<10)
	for i := range 3 {
		if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"`+big+`"}}`, "Idempotency-Key", fmt.Sprint("h", i)); st != 200 {
			t.Fatalf("send = %d %s", st, b)
		}
	}
	// The reader does not read yet: the catch-up stops on a full socket
	// while the model call streams and ends.
	_, br := openRaw(t, f, sid, 4<<10)
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"{\"reply\":\"one two three four\",\"stream\":true}"}}`, "Idempotency-Key", "s"); st != 200 {
		t.Fatalf("send = %d %s", st, b)
	}
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	open := map[uint64]bool{} // model calls started, not ended
	var event string
	for {
		line, err := br.ReadString('\n')
		if errors.Is(err, io.EOF) {
			if event != api.KindSessionEnded {
				t.Fatalf("the stream's last frame is %s, not session_ended", event)
			}
			return
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			var v struct {
				Sequence uint64 `json:"sequence"`
				Call     uint64 `json:"model_call_sequence"`
				Data     struct {
					Sequence uint64 `json:"sequence"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			switch event {
			case api.KindModelCallStarted:
				open[v.Sequence] = true
			case api.KindModelCallEnded, api.KindModelCallFailed:
				delete(open, v.Data.Sequence)
			case api.LiveModelOutput, api.LiveModelRequest, api.LiveModelUsage:
				if !open[v.Call] {
					t.Fatalf("%s of model call %d outside that call: %s", event, v.Call, line)
				}
			}
		}
	}
}
