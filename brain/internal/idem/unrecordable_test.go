package idem

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestUnrecordableAnswerLeavesKeyAmbiguous: an answer too large for a
// record cannot be recorded, though its request ran. Answer refuses it,
// and the key answers ErrAmbiguous from then on, at once, in this process
// and after a restart: a retry neither waits for an answer that never
// comes nor runs the request again.
func TestUnrecordableAnswerLeavesKeyAmbiguous(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	d := Digest([]byte("x"))
	c, _, err := s.Claim(context.Background(), "s", "big", d)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Answer(200, make([]byte, MaxPayloadBytes)); err == nil {
		t.Fatal("Answer recorded a body larger than a record holds")
	}
	retry := func(s *Store) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, a, err := s.Claim(ctx, "s", "big", d)
		if c != nil || a != nil {
			t.Fatalf("retry = %v, %v; want no claim and no answer", c, a)
		}
		return err
	}
	if err := retry(s); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("retry after an unrecordable answer = %v, want ErrAmbiguous", err)
	}
	s.Close()
	s2 := open(t, path, nil)
	if err := retry(s2); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("retry after a restart = %v, want ErrAmbiguous", err)
	}
}
