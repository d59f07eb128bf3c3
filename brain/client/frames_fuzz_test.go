package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// FuzzStreamFrames reads any bytes as an event stream and as a host's
// commands stream, frame by frame as the client does. Never a panic; a
// frame that does not decode is ErrMalformedEvent on an event stream and
// passed over on a commands stream; a live frame's data is the frame's
// bytes as they came; an event taken has its frame's name as its type;
// an event or a command taken encodes to JSON that decodes to the same
// value again, and any start of that JSON names its call or none.
func FuzzStreamFrames(f *testing.F) {
	f.Add("id: 1\nevent: turn_started\ndata: {\"sequence\":1,\"recorded_at_ms\":5,\"event_type\":\"turn_started\",\"data\":{}}\n\n" +
		"event: model_output\ndata: {\"text\":\"hi\"}\n\n")
	f.Add("id: 7\ndata: {\"sequence\":7,\"event_type\":\"x\",\"data\":{\"a\":[1,2]},\"origin\":{\"kind\":\"tool\",\"sequence\":3}}\n\n")
	f.Add("event: model_output\ndata: {\"text\":\n\n")
	f.Add("id: 2\ndata: {\"sequence\":-1}\n\n")
	f.Add("event: command\ndata: {\"session_id\":\"ses_x\",\"sequence\":4,\"environment\":\"e\",\"deadline_at_ms\":1700000000000," +
		"\"operation\":{\"type\":\"invoke_tool\",\"name\":\"t\",\"input\":{\"q\":1}}}\n\n")
	f.Add("event: command\ndata: {\"session_id\":\"ses_x\",\"sequence\":5,\"operation\":{\"type\":\"cancel_tool\",\"target_sequence\":4}}\n\n")
	f.Add("event: command\ndata: {\"operation\":7}\n\nevent: displaced\ndata: {}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		_ = scanSSE(strings.NewReader(body), func(id, event string, data []byte) error {
			ev, journaled, err := decodeFrame(id, event, data)
			if journaled != (id != "") {
				t.Fatalf("frame with id %q taken as journaled=%v", id, journaled)
			}
			switch {
			case err != nil:
				if !errors.Is(err, ErrMalformedEvent) {
					t.Fatalf("frame %q: error %v is not ErrMalformedEvent", data, err)
				}
			case !journaled:
				if ev.EventType != event || !bytes.Equal(ev.Data, data) {
					t.Fatalf("live frame %s %q yielded as %+v", event, data, ev)
				}
			case ev.EventType != event:
				t.Fatalf("frame named %q taken as an event of type %q", event, ev.EventType)
			default:
				again := roundTrip[api.Event](t, ev)
				if !reflect.DeepEqual(normalEvent(ev), normalEvent(again)) {
					t.Fatalf("event %+v encodes to one that decodes to %+v", ev, again)
				}
			}

			cmd, ok, err := commandFrame(event, data)
			switch {
			case event == "displaced":
				if !errors.Is(err, ErrDisplaced) || ok {
					t.Fatalf("displaced frame: %v %v", ok, err)
				}
			case err != nil:
				t.Fatalf("frame %s ends the commands stream: %v", event, err)
			case ok && event != "command":
				t.Fatalf("frame %s taken as a command", event)
			case ok:
				again := roundTrip[api.HostCommand](t, cmd)
				if !reflect.DeepEqual(normalCommand(cmd), normalCommand(again)) {
					t.Fatalf("command %+v encodes to one that decodes to %+v", cmd, again)
				}
				// The start of the command as Brain encodes it, cut
				// anywhere, names its call or none.
				b, _ := json.Marshal(cmd)
				for n := range len(b) + 1 {
					head, named := commandHead(b[:n])
					if named && (head.SessionID != cmd.SessionID || head.Sequence != cmd.Sequence || head.Operation.Name != cmd.Operation.Name || cmd.Operation.Type != api.HostInvokeTool) {
						t.Fatalf("the start %q of command %+v names %+v", b[:n], cmd, head)
					}
				}
			}
			return nil
		})
	})
}

// roundTrip encodes v and decodes the result.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %+v: %v", v, err)
	}
	var again T
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatalf("%s does not decode: %v", b, err)
	}
	return again
}

// canonical is a raw JSON value's canonical form, so that values that
// differ only in white space or escapes compare equal; an absent value is
// null, as it encodes.
func canonical(raw json.RawMessage) string {
	if raw == nil {
		return "null"
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func normalEvent(ev api.Event) api.Event {
	ev.Data = json.RawMessage(canonical(ev.Data))
	return ev
}

func normalCommand(c api.HostCommand) api.HostCommand {
	c.Operation.Input = json.RawMessage(canonical(c.Operation.Input))
	return c
}
