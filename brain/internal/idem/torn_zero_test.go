package idem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tornAnswer is an answer frame spanning several sectors, as the last
// write before a crash.
func tornAnswer() []byte {
	body := []byte(`{"text":"` + strings.Repeat("word ", 600) + `"}`)
	return appendFrame(nil, &record{Type: typeAnswer, AtMs: 5, Scope: "create_session", Key: "running", Status: 200, Body: body})
}

// A crash can make the log's new size durable with only the first sectors
// of the last write on disk: the file then ends in the start of a frame
// followed by zeros up to where the write would have ended, and perhaps
// more. Open cuts that write as it cuts a file ending inside a frame:
// every acknowledged claim and answer is kept, the running claim stays
// ambiguous (its answer was never acknowledged), and records written
// afterwards are found after the next restart.
func TestTornFrameIntoZerosIsCut(t *testing.T) {
	frame := tornAnswer()
	for _, sectors := range []int{0, 1, 3} {
		for _, extra := range []int{0, 100, 4096} {
			t.Run(fmt.Sprint(sectors, "sectors+", extra), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "requests.log")
				good := zeroTailLog(t, path)
				// The write reached the disk up to a sector boundary.
				kept := (len(good)/tornSector+sectors)*tornSector + tornSector - len(good)
				if kept >= len(frame) {
					t.Fatalf("frame of %d bytes does not reach past %d", len(frame), kept)
				}
				file := concat(good, frame[:kept], make([]byte, len(frame)-kept+extra))
				if err := os.WriteFile(path, file, 0o600); err != nil {
					t.Fatal(err)
				}
				checkCutThenAppended(t, path, good, "a torn frame and zeros")
			})
		}
	}
}

// A frame whose bytes reach the sector its length ends in was written
// whole: when it does not check out it is damage, even with zeros after
// it, and so is one whose tear lies inside the sector it ends in (no
// crash leaves part of a sector). Open refuses each with ErrDamaged at the
// frame and rewrites nothing: cutting an acknowledged claim could run its
// request twice.
func TestFrameIntoZerosDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.log")
	good := zeroTailLog(t, path)
	frame := tornAnswer()
	// An answer with an empty body ends in four zero bytes (its body
	// length): flipped elsewhere, it still ends within its last sector.
	empty := appendFrame(nil, &record{Type: typeAnswer, AtMs: 6, Scope: "create_session", Key: "running", Status: 204})
	if (len(good)+len(empty)-4)/tornSector != (len(good)+len(empty)-1)/tornSector {
		t.Fatal("the empty answer's body length crosses a sector boundary; change the fixture")
	}
	flippedEmpty := bytes.Clone(empty)
	flippedEmpty[frameHeader+3] ^= 0x10 // at_ms
	claim := appendFrame(nil, &record{Type: typeClaim, AtMs: 6, Scope: "create_session", Key: "next", Digest: Digest([]byte("n"))})
	if len(good)/tornSector != (len(good)+len(claim)-1)/tornSector {
		t.Fatal("the claim crosses a sector boundary; change the fixture")
	}
	flippedBig := bytes.Clone(frame)
	flippedBig[len(flippedBig)/2] ^= 0x01
	cases := []struct {
		name string
		file []byte
	}{
		{"flipped empty-body answer then zeros", concat(good, flippedEmpty, make([]byte, 4096))},
		{"flipped frame then zeros", concat(good, flippedBig, make([]byte, 4096))},
		{"torn inside a sector then zeros", concat(good, claim[:len(claim)/2], make([]byte, 4096))},
		{"length field past the payload then zeros", func() []byte {
			f := bytes.Clone(empty)
			f[1] = 0x10 // length grows by 4096: past the zeros' sectors
			return concat(good, f, make([]byte, 8192))
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, c.file, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, nil)
			if err == nil {
				s.Close()
				t.Fatal("Open = nil, want ErrDamaged")
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), fmt.Sprint("offset ", len(good))) {
				t.Fatalf("Open = %v, want ErrDamaged at offset %d", err, len(good))
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, c.file) {
				t.Fatal("damaged log was rewritten")
			}
		})
	}
}
