package idem

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A complete frame whose length field was damaged to announce more bytes
// than the file holds is not an incomplete write: its payload, read at the
// length its own fields give, passes the frame's checksum. Open refuses
// the log with ErrDamaged and rewrites nothing, wherever the frame is:
// cutting there would forget it and every claim after it, and a forgotten
// claim without an answer would let its request run again.
func TestCompleteFrameWithDamagedLengthRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	for i := range 3 {
		c, _, err := s.Claim(ctx, "s", fmt.Sprint(i), Digest([]byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Answer(200, []byte("answer")); err != nil {
			t.Fatal(err)
		}
	}
	// The process ends while this request runs: its key is ambiguous.
	if _, _, err := s.Claim(ctx, "s", "running", Digest([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	good, _ := os.ReadFile(path)
	var offs []int
	for off := 0; off < len(good); {
		_, n, st := nextFrame(good[off:])
		if st != frameOK {
			t.Fatalf("frame at %d: %v", off, st)
		}
		offs = append(offs, off)
		off += n
	}
	for _, frame := range []int{1, len(offs) - 1} {
		for _, by := range []uint32{1, 1000, 1 << 20} {
			t.Run(fmt.Sprint(frame, "+", by), func(t *testing.T) {
				bad := bytes.Clone(good)
				at := offs[frame]
				binary.LittleEndian.PutUint32(bad[at:], binary.LittleEndian.Uint32(bad[at:])+by)
				os.WriteFile(path, bad, 0o600)
				s, err := Open(path, nil)
				if err == nil {
					n := s.Len()
					s.Close()
					t.Fatalf("Open = nil with %d entries, want ErrDamaged", n)
				}
				if !errors.Is(err, ErrDamaged) || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprint("offset ", at))) {
					t.Fatalf("Open = %v, want ErrDamaged naming offset %d", err, at)
				}
				if b, _ := os.ReadFile(path); !bytes.Equal(b, bad) {
					t.Fatalf("damaged log was rewritten: %d bytes, want %d", len(b), len(bad))
				}
			})
		}
	}
	// The undamaged log still opens, and the running claim is ambiguous.
	os.WriteFile(path, good, 0o600)
	s = open(t, path, nil)
	if _, _, err := s.Claim(ctx, "s", "running", Digest([]byte("x"))); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("unanswered claim = %v, want ErrAmbiguous", err)
	}
}
