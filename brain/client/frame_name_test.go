package client_test

import (
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/client"
)

// TestFrameNameOtherThanEventTypeIsMalformed: Brain names each recorded
// frame of a followed stream with its event's type. A frame whose name
// is another type than its data's, or that has no name, is not taken on
// trust (a terminal event named as an ordinary one, or the reverse,
// would end a follower's stream early or never): the events before it
// are yielded, it is not, and the stream ends with ErrMalformedEvent
// without connecting again.
func TestFrameNameOtherThanEventTypeIsMalformed(t *testing.T) {
	for name, frame := range map[string]string{
		"name of another type": "id: 2\nevent: turn_started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"session_ended\",\"data\":{}}\n\n",
		"terminal name":        "id: 2\nevent: session_ended\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"no name":              "id: 2\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"name of other case":   "id: 2\nevent: Turn_Started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, streams, failed := followFrames(t, "id: 1\nevent: session_creation_started\ndata: {\"sequence\":1,\"recorded_at_ms\":1700000000000,\"event_type\":\"session_creation_started\",\"data\":{}}\n\n"+
				frame+
				"id: 3\nevent: turn_ended\ndata: {\"sequence\":3,\"recorded_at_ms\":1700000000002,\"event_type\":\"turn_ended\",\"data\":{}}\n\n")
			if !errors.Is(failed, client.ErrMalformedEvent) {
				t.Fatalf("stream with the frame %q: error %v, want ErrMalformedEvent", frame, failed)
			}
			if len(got) != 1 || got[0].Sequence != 1 {
				t.Fatalf("stream with the frame %q yielded %+v, want only event 1", frame, got)
			}
			if streams != 1 {
				t.Fatalf("stream with the frame %q connected %d times, want once", frame, streams)
			}
		})
	}
}
