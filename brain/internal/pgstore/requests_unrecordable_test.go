package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestUnrecordableAnswerLeavesKeyAmbiguous: an answer no record can hold
// (a body past idem.MaxPayloadBytes) is refused, though its request ran;
// the key then answers ErrAmbiguous at once, in this process and on
// another node, instead of keeping a retry waiting for an answer that
// never comes.
func TestUnrecordableAnswerLeavesKeyAmbiguous(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openDB(t, url, nil).Requests(nil), openDB(t, url, nil).Requests(nil)
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	c, _, err := a.Claim(ctx, "s", "big", d)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Answer(200, make([]byte, idem.MaxPayloadBytes)); err == nil {
		t.Fatal("Answer recorded a body larger than a record holds")
	}
	retry := func(name string, claim func(context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := claim(ctx); !errors.Is(err, idem.ErrAmbiguous) {
			t.Fatalf("retry %s after an unrecordable answer = %v, want ErrAmbiguous", name, err)
		}
	}
	retry("in the same process", func(ctx context.Context) error {
		_, _, err := a.Claim(ctx, "s", "big", d)
		return err
	})
	retry("on another node", func(ctx context.Context) error {
		_, _, err := b.Claim(ctx, "s", "big", d)
		return err
	})
}
