package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

type sseEvent struct{ id, event, data string }

func scanAll(body string) ([]sseEvent, error) {
	var out []sseEvent
	err := scanSSE(strings.NewReader(body), func(id, event string, data []byte) error {
		out = append(out, sseEvent{id, event, string(data)})
		return nil
	})
	return out, err
}

// The stream format as the SSE standard has it: data lines joined, one
// leading space dropped, comments and unknown fields skipped, CRLF line
// ends, no dispatch without data; an id holds for its own event only.
func TestScanSSE(t *testing.T) {
	body := ": keep-alive\r\n\r\n" +
		"id: 7\r\nevent: turn_ended\r\ndata: {\"sequence\":7}\r\n\r\n" +
		"event: model_output\ndata:{\"text\":\ndata:  \"hi\"}\nretry: 10\n\n" +
		"event: no_data\n\n" +
		"id: 8\nevent: x\ndata\n\n" +
		"event: cr\rdata: 1\r\r" +
		"data: tail-without-blank-line"
	got, err := scanAll(body)
	want := []sseEvent{
		{"7", "turn_ended", `{"sequence":7}`},
		{"", "model_output", "{\"text\":\n \"hi\"}"},
		{"8", "x", ""},
		{"", "cr", "1"},
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("end of stream: %v, want io.ErrUnexpectedEOF", err)
	}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %q, want %q", i, got[i], want[i])
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := scanSSE(strings.NewReader(body), func(string, string, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("a handler's error: %v after %d events, want it at once", err, n)
	}
}

// FuzzScanSSE: any stream is read to its end or to an error, never a
// panic; an event's data never holds a line break the stream did not
// have between two data lines, and an id or a name never holds one.
func FuzzScanSSE(f *testing.F) {
	f.Add("id: 1\nevent: turn_started\ndata: {\"sequence\":1}\n\n")
	f.Add(": c\r\n\r\nevent: model_output\ndata: {}\ndata: x\n\n")
	f.Add("data\n\nid\n\nevent:\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		_ = scanSSE(strings.NewReader(body), func(id, event string, data []byte) error {
			if strings.ContainsAny(id, "\r\n") || strings.ContainsAny(event, "\r\n") {
				t.Fatalf("id %q event %q hold a line end", id, event)
			}
			if strings.Count(string(data), "\n") > strings.Count(body, "data") {
				t.Fatalf("data %q holds more lines than the stream has data fields", data)
			}
			return nil
		})
		// Within a bound no line reaches, scanSSECut reads what scanSSE
		// reads; within a small one, no event's data is longer.
		whole, _ := scanAll(body)
		var within []sseEvent
		_ = scanSSECut(iotest.OneByteReader(strings.NewReader(body)), len(body)+1, func(id, event string, data []byte, cut bool) error {
			if cut {
				t.Fatalf("event %q cut within a bound of %d", data, len(body)+1)
			}
			within = append(within, sseEvent{id, event, string(data)})
			return nil
		})
		if !slices.Equal(whole, within) {
			t.Fatalf("scanSSECut read %q, scanSSE %q", within, whole)
		}
		_ = scanSSECut(iotest.HalfReader(strings.NewReader(body)), 4, func(id, event string, data []byte, cut bool) error {
			if len(data) > 4 {
				t.Fatalf("data %q is longer than the bound", data)
			}
			return nil
		})
	})
}

// A followed stream yields a live frame's JSON as it came, and answers a
// live frame whose data is not JSON with ErrMalformedEvent instead of
// handing it on, at once: no reconnection fetches the same bytes again.
func TestFollowRefusesLiveFrameThatIsNotJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: model_output\ndata: {\"text\":\"hi\"}\n\n"+
			"event: model_output\ndata: {\"text\":\n\n")
	}))
	defer srv.Close()
	c, err := New(srv.URL, &Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var frames []string
	var failed error
	for ev, err := range c.Sessions.Open("ses_x").Events(t.Context(), 0, Follow(), LiveFrames()) {
		if err != nil {
			failed = err
			break
		}
		frames = append(frames, string(ev.Data))
	}
	if len(frames) != 1 || frames[0] != `{"text":"hi"}` {
		t.Errorf("frames %q, want the first alone", frames)
	}
	if !errors.Is(failed, ErrMalformedEvent) || !strings.Contains(failed.Error(), "not JSON") {
		t.Errorf("error %v, want the second frame refused", failed)
	}
}

// A line longer than the bound is cut to its start, and the rest of it
// dropped, wherever the reads of the stream end (a CRLF may come in two);
// an event's data is bounded as its lines are. scanSSEMax fails on the
// first such line instead.
func TestScanSSECutLongLines(t *testing.T) {
	type cutEvent struct {
		event, data string
		cut         bool
	}
	body := "event: a\r\ndata: 0123456789abcdef\r\n\r\n" +
		"data: ok\r\n\r\n" +
		": a comment longer than the bound\r\ndata: z\n\n" +
		"data: 0123456789\rdata: x\r\r" +
		"data: 0\ndata: 1\ndata: 2\ndata: 3\ndata: 4\ndata: 5\n\n" +
		"data: y\n\n"
	want := []cutEvent{{"a", "01", true}, {"", "ok", false}, {"", "z", false}, {"", "01\nx", true}, {"", "0\n1\n2\n3", true}, {"", "y", false}}
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(body) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(body)) },
	}
	for name, r := range readers {
		var got []cutEvent
		err := scanSSECut(r(), 8, func(_, event string, data []byte, cut bool) error {
			got = append(got, cutEvent{event, string(data), cut})
			return nil
		})
		if !errors.Is(err, io.ErrUnexpectedEOF) || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %+v; want %+v", name, err, got, want)
		}
		n := 0
		err = scanSSEMax(r(), 8, func(string, string, []byte) error { n++; return nil })
		if !errors.Is(err, bufio.ErrTooLong) || n != 0 {
			t.Errorf("%s: scanSSEMax: %v after %d events, want bufio.ErrTooLong at once", name, err, n)
		}
	}
}

// A followed stream whose recorded frames (those with an id) carry data
// that is not an event (the payload alone, as an older contract sent it;
// null) answers ErrMalformedEvent at once, instead of passing the frames
// over and waiting for events that never come.
func TestFollowRefusesRecordedFrameThatIsNoEvent(t *testing.T) {
	for _, data := range []string{`{"message":"hi"}`, `null`, `{"sequence":2,"data":{}}`} {
		var streams atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept") != "text/event-stream" {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"session_id":"ses_x","status":"running","last_sequence":9}`)
				return
			}
			streams.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Brain-Heartbeat-Ms", "15000")
			_, _ = io.WriteString(w, "id: 2\nevent: turn_started\ndata: "+data+"\n\n")
		}))
		c, err := New(srv.URL, &Options{Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		var failed error
		for ev, err := range c.Sessions.Open("ses_x").Events(ctx, 0, Follow()) {
			if err != nil {
				failed = err
				break
			}
			t.Errorf("frame %s yielded as %+v", data, ev)
		}
		cancel()
		c.Close()
		srv.Close()
		if !errors.Is(failed, ErrMalformedEvent) {
			t.Errorf("frame %s: error %v, want ErrMalformedEvent", data, failed)
		}
		if n := streams.Load(); n != 1 {
			t.Errorf("frame %s: the stream connected %d times, want once", data, n)
		}
	}
}
