package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
)

// TestTranscriptPartAndTail reads parts of a session's transcript from a
// served Brain: the messages asked for, with the transcript's total and
// the place of the first one.
func TestTranscriptPartAndTail(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, brain.Config{})
	req := scripted
	for i := range 30 {
		req.Transcript = append(req.Transcript, api.UserMessage(api.UserInput{Message: fmt.Sprint("message ", i)}))
	}
	s, err := c.Sessions.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	texts := func(p api.TranscriptPart) (out []string) {
		for _, m := range p.Messages {
			out = append(out, m.Text())
		}
		return out
	}
	tail, err := s.TranscriptTail(ctx, 3)
	if err != nil || fmt.Sprint(texts(tail)) != "[message 27 message 28 message 29]" || tail.Total != 30 || tail.Offset != 27 {
		t.Errorf("TranscriptTail(3) = %v, total %d, offset %d, %v; want messages 27..29 of 30 at 27", texts(tail), tail.Total, tail.Offset, err)
	}
	part, err := s.TranscriptPart(ctx, 10, 2)
	if err != nil || fmt.Sprint(texts(part)) != "[message 10 message 11]" || part.Total != 30 || part.Offset != 10 {
		t.Errorf("TranscriptPart(10, 2) = %v, total %d, offset %d, %v; want messages 10..11 of 30 at 10", texts(part), part.Total, part.Offset, err)
	}
	past, err := s.TranscriptPart(ctx, 50, 5)
	if err != nil || len(past.Messages) != 0 || past.Messages == nil || past.Total != 30 || past.Offset != 30 {
		t.Errorf("TranscriptPart(50, 5) = %+v, %v; want no messages of 30 at 30", past, err)
	}
	for _, bad := range []func() error{
		func() error { _, err := s.TranscriptPart(ctx, -1, 5); return err },
		func() error { _, err := s.TranscriptPart(ctx, 0, api.MaxTranscriptPart+1); return err },
		func() error { _, err := s.TranscriptTail(ctx, -2); return err },
	} {
		if bad() == nil {
			t.Error("a part out of range was read without an error")
		}
	}
}
