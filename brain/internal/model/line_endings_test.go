package model

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// withEndings answers an event stream written with "\n" line endings as
// the same stream ending its lines with end ("\r\n" or "\r").
func withEndings(lf, end string) string { return strings.ReplaceAll(lf, "\n", end) }

// TestStreamLineEndings: an event stream may end its lines with CRLF, LF
// or a lone CR. Every dialect answers the same result for each, whether
// the stream comes whole or one byte at a time (so that a CR ends one
// read and the LF of a CRLF begins the next); a stream of lone CRs was
// read as one line that never ended, failing as response_too_large.
func TestStreamLineEndings(t *testing.T) {
	tr := turn{text: []string{"Let me", " check."}, calls: []fakeCall{{id: "call_1", name: "get_weather", args: []string{`{"city":`, ` "Paris"}`}}},
		stop: api.StopToolUse, in: 100, cached: 20, out: 7}
	for _, d := range dialects {
		for _, end := range []string{"\n", "\r\n", "\r"} {
			for _, bytewise := range []bool{false, true} {
				name := d.provider + "/" + strings.NewReplacer("\r", "CR", "\n", "LF").Replace(end)
				if bytewise {
					name += "/bytewise"
				}
				t.Run(name, func(t *testing.T) {
					body := withEndings(d.render(tr), end)
					f, c := open(t, d, Limits{MaxFrameBytes: 4 << 10, MaxStreamBytes: 1 << 20})
					f.set(func(w http.ResponseWriter, _ *recorded) {
						w.Header().Set("Content-Type", "text/event-stream")
						w.WriteHeader(http.StatusOK)
						if !bytewise {
							_, _ = io.WriteString(w, body)
							return
						}
						for i := range len(body) {
							_, _ = io.WriteString(w, body[i:i+1])
							w.(http.Flusher).Flush()
						}
					})
					var live strings.Builder
					res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris?"})},
						Tools: []api.ToolDefinition{weatherTool}}, func(dl Delta) { live.WriteString(dl.Text) })
					if err != nil {
						t.Fatal(err)
					}
					if res.Message.Text() != "Let me check." || live.String() != "Let me check." || res.StopReason != api.StopToolUse {
						t.Fatalf("text %q, live %q, stop %q", res.Message.Text(), live.String(), res.StopReason)
					}
					var calls []api.ContentBlock
					for _, b := range res.Message.Content {
						if b.Type == api.BlockToolUse {
							calls = append(calls, b)
						}
					}
					if len(calls) != 1 || calls[0].ID != "call_1" || string(calls[0].Input) != `{"city":"Paris"}` {
						t.Fatalf("tool calls %+v", calls)
					}
					sameUsage(t, res.Usage, usageOf(80, 20, 100, 7))
				})
			}
		}
	}
}

// TestStreamCRLFAcrossReads: a CR that ends what one read brought, and
// the LF that begins the next, end one line: the event's data lines
// around them are joined, not dispatched apart (which cut the JSON of
// the event in two, an invalid answer).
func TestStreamCRLFAcrossReads(t *testing.T) {
	first := "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":0,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hel\"}\r\r" +
		"data: {\"type\":\"response.output_text.delta\",\r"
	second := "\ndata: \"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"lo\"}\r\r"
	rest := withEndings(renderResponses(turn{text: []string{"Hello"}, stop: api.StopEndTurn, in: 3, out: 1}), "\r")
	rest = rest[strings.Index(rest, "event: response.output_text.done"):]
	f, c := open(t, responsesDialect, Limits{})
	gotFirst, ended := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(ended) })
	f.set(func(w http.ResponseWriter, r *recorded) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, first)
		w.(http.Flusher).Flush()
		// The first read ended with the CR: the reader dispatched the
		// event before it, and now waits for what follows the CR.
		select {
		case <-gotFirst:
		case <-time.After(5 * time.Second):
			// A reader still waiting for more of the first line does
			// not hold the test up: it reads the rest as it can.
		case <-ended:
			return
		}
		_, _ = io.WriteString(w, second+rest)
	})
	var live []string
	res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, func(d Delta) {
		live = append(live, d.Text)
		if len(live) == 1 {
			close(gotFirst)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(live, "|") != "Hel|lo" || res.Message.Text() != "Hello" {
		t.Fatalf("live %q, text %q", live, res.Message.Text())
	}
}

// TestSSEReaderLineEndings: the reader splits lines at CRLF, LF and a
// lone CR, mixed in one stream, a CR at the end of one read and the LF
// at the start of the next ending one line (a CR followed by a CR ends
// two, the second blank).
func TestSSEReaderLineEndings(t *testing.T) {
	in := "\ufeffevent: a\rdata: 1\r\ndata: 2\n\r" +
		"data: b\r\r\n" +
		": comment\r\rdata: c\n\n" +
		"data: d\r\rdata: e"
	want := []struct{ ev, data string }{{"a", "1\n2"}, {"", "b"}, {"", "c"}, {"", "d"}, {"", "e"}}
	for _, src := range []struct {
		name string
		r    io.Reader
	}{{"whole", strings.NewReader(in)}, {"bytewise", iotest.OneByteReader(strings.NewReader(in))}} {
		t.Run(src.name, func(t *testing.T) {
			r := &sseReader{r: bufio.NewReaderSize(src.r, 16), maxFrame: 1 << 10}
			for _, w := range want {
				ev, data, err := r.next()
				if err != nil || ev != w.ev || string(data) != w.data {
					t.Fatalf("got %q %q %v, want %q %q", ev, data, err, w.ev, w.data)
				}
			}
			if !r.atEOF {
				t.Error("the last event, closed by the end of the stream, is not marked so")
			}
			if _, _, err := r.next(); err != io.EOF {
				t.Fatalf("err = %v, want EOF", err)
			}
		})
	}
}
