package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// zeroTailLog leaves at path a requests log holding three answered keys
// and one claim whose request was still running when the process ended,
// and answers the file's bytes.
func zeroTailLog(t *testing.T, path string) []byte {
	t.Helper()
	ctx := context.Background()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c, _, err := s.Claim(ctx, "create_session", fmt.Sprint("k", i), Digest([]byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Answer(200, []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Claim(ctx, "create_session", "running", Digest([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkZeroTailLog checks that s holds what zeroTailLog wrote: every
// answer replays and the running claim stays ambiguous.
func checkZeroTailLog(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 3 {
		_, a, err := s.Claim(ctx, "create_session", fmt.Sprint("k", i), Digest([]byte("x")))
		if err != nil || a == nil || a.Status != 200 || string(a.Body) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("replay of k%d = %+v, %v", i, a, err)
		}
	}
	if _, _, err := s.Claim(ctx, "create_session", "running", Digest([]byte("x"))); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("Claim of the running key = %v, want ErrAmbiguous", err)
	}
}

// A crash can leave the log's new size durable without the data of a
// write that was never acknowledged: the file then ends in zero bytes.
// Open cuts them as an incomplete write, keeps every acknowledged claim
// and answer, and the records written afterwards are found after the next
// restart.
func TestZeroTailIsCut(t *testing.T) {
	for _, zeros := range []int{1, 7, 8, 15, 100, 4096, 5000, 1 << 20} {
		for _, how := range []string{"truncate", "write"} {
			t.Run(fmt.Sprint(how, zeros), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "requests.log")
				good := zeroTailLog(t, path)
				switch how {
				case "truncate":
					if err := os.Truncate(path, int64(len(good)+zeros)); err != nil {
						t.Fatal(err)
					}
				case "write":
					f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.Write(make([]byte, zeros)); err != nil {
						t.Fatal(err)
					}
					if err := f.Close(); err != nil {
						t.Fatal(err)
					}
				}
				checkCutThenAppended(t, path, good, fmt.Sprint(zeros, " zero bytes"))
			})
		}
	}
}

// checkCutThenAppended opens the log at path, which ends in what (a tail
// a crash left), and requires that Open cuts it back to good keeping the
// records of zeroTailLog, and that a claim answered after the cut is
// replayed after the next restart.
func checkCutThenAppended(t *testing.T, path string, good []byte, what string) {
	t.Helper()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open of a log ending in %s = %v", what, err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good) {
		t.Fatalf("log is %d bytes after Open, want the %d bytes before %s", len(b), len(good), what)
	}
	checkZeroTailLog(t, s)
	c, _, err := s.Claim(context.Background(), "create_session", "after", Digest([]byte("y")))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Answer(201, []byte("later")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, path, nil)
	defer s.Close()
	checkZeroTailLog(t, s)
	if _, a, err := s.Claim(context.Background(), "create_session", "after", Digest([]byte("y"))); err != nil || a == nil || a.Status != 201 || string(a.Body) != "later" {
		t.Fatalf("replay of the answer written after the cut = %+v, %v", a, err)
	}
}

// RecoverJournaled opens the log as Open does: a zero tail does not stop
// the journal's replay from appending what the log lacks.
func TestZeroTailRecoverJournaled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	good := zeroTailLog(t, path)
	if err := os.Truncate(path, int64(len(good)+4096)); err != nil {
		t.Fatal(err)
	}
	if err := RecoverJournaled(path, nil); err != nil {
		t.Fatalf("RecoverJournaled on a log ending in zeros = %v", err)
	}
	checkZeroTailLog(t, open(t, path, nil))
}

// Zero bytes that something other than zero follows are no crash's tail:
// a frame after them was written (and perhaps acknowledged), and a zeroed
// region inside the file may have held acknowledged frames. So is an
// incomplete or damaged frame followed by zeros. Open refuses each with
// ErrDamaged naming where the bad bytes start, and rewrites nothing.
func TestZerosBeforeDataAreDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	good := zeroTailLog(t, path)
	frame := appendFrame(nil, &record{Type: typeClaim, AtMs: 1, Scope: "create_session", Key: "later", Digest: Digest([]byte("z"))})
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 0x40 // inside the running claim's digest
	lastFrame := 0
	for off := 0; off < len(good); {
		_, n, st := nextFrame(good[off:])
		if st != frameOK {
			t.Fatalf("frame at %d: %v", off, st)
		}
		lastFrame, off = off, off+n
	}
	cases := []struct {
		name string
		file []byte
		at   int
	}{
		{"zeros then frame", concat(good, make([]byte, 4096), frame), len(good)},
		{"4 zeros then frame", concat(good, make([]byte, 4), frame), len(good)},
		{"8 zeros then frame", concat(good, make([]byte, 8), frame), len(good)},
		{"zeros then a byte", concat(good, make([]byte, 100), []byte{1}), len(good)},
		{"zeros then a torn frame", concat(good, make([]byte, 4), frame[:3]), len(good)},
		{"zeros then zeros and a byte", concat(good, make([]byte, 5000), []byte{0, 0, 7, 0}), len(good)},
		{"zeroed region inside", concat(good[:len(good)/2], make([]byte, len(good)-len(good)/2), frame), -1},
		{"non-zero garbage then zeros", concat(good, bytes.Repeat([]byte{0xee}, 20), make([]byte, 4096)), len(good)},
		{"damaged last frame then zeros", concat(flipped, make([]byte, 4096)), lastFrame},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, c.file, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, nil)
			if err == nil {
				n := s.Len()
				s.Close()
				t.Fatalf("Open = nil with %d entries, want ErrDamaged", n)
			}
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open = %v, want ErrDamaged", err)
			}
			if c.at >= 0 && !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprint("offset ", c.at))) {
				t.Fatalf("Open = %v, want the offset %d named", err, c.at)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, c.file) {
				t.Fatalf("damaged log was rewritten")
			}
		})
	}
}

func concat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
