package client_test

import (
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestFrameIDOtherThanSequenceIsMalformed: Brain marks each recorded
// frame of a followed stream with its event's sequence as the id. A
// frame whose id names another sequence than its data (something between
// Brain and the client mixed frames up) is not taken on trust: the
// events before it are yielded, it is not, and the stream ends with
// ErrMalformedEvent without connecting again (the same bytes would come
// again).
func TestFrameIDOtherThanSequenceIsMalformed(t *testing.T) {
	for name, frame := range map[string]string{
		"id ahead of data":  "id: 5\nevent: turn_started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"id behind data":    "id: 2\nevent: turn_started\ndata: {\"sequence\":9,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"id not a sequence": "id: abc\nevent: turn_started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			evs, streams, failed := followFrames(t, "id: 1\nevent: session_creation_started\ndata: {\"sequence\":1,\"recorded_at_ms\":1700000000000,\"event_type\":\"session_creation_started\",\"data\":{}}\n\n"+
				"event: model_output\ndata: {\"model_call_sequence\":1,\"text\":\"hi\"}\n\n"+
				frame)
			var got []uint64
			for _, ev := range evs {
				if ev.Sequence != 0 {
					got = append(got, ev.Sequence)
				}
			}
			if !errors.Is(failed, client.ErrMalformedEvent) {
				t.Fatalf("stream with the frame %q: error %v, want ErrMalformedEvent", frame, failed)
			}
			if len(got) != 1 || got[0] != 1 {
				t.Fatalf("stream with the frame %q yielded the events %v, want only 1", frame, got)
			}
			if streams != 1 {
				t.Fatalf("stream with the frame %q connected %d times, want once", frame, streams)
			}
			var ae *api.ApiError
			if errors.As(failed, &ae) {
				t.Fatalf("stream with the frame %q: error %v taken for Brain's answer", frame, failed)
			}
		})
	}
}
