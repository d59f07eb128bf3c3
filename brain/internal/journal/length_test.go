package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
)

// A complete final frame whose length field was damaged to announce more
// bytes than the segment holds (but no more than the record limit) is not
// an incomplete write: its payload, read at the length it describes
// itself, passes the frame's checksum. It is refused like any complete
// corrupt frame, not cut as a torn tail, whether the session is first
// opened by Next or by a Read from its start.
func TestCompleteFinalFrameWithDamagedLengthRefused(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "bad", 5, nil)
	fill(t, dir, "good", 3, nil)
	path := segPath(dir, "bad", 1)
	offs := frameOffsets(t, path)
	orig, _ := os.ReadFile(path)
	last := offs[len(offs)-1]
	n := binary.LittleEndian.Uint32(orig[last:])
	for _, by := range []uint32{1, 7, 1000, 1 << 20} {
		for _, first := range []string{"Next", "Read"} {
			t.Run(fmt.Sprint(by, first), func(t *testing.T) {
				damaged := slices.Clone(orig)
				binary.LittleEndian.PutUint32(damaged[last:], n+by)
				os.WriteFile(path, damaged, 0o600)
				defer os.WriteFile(path, orig, 0o600)
				fs := openT(t, dir, nil)
				if first == "Read" {
					var de *DamagedError
					if rs, err := fs.Read(bg, "bad", 0, 0, 0); !errors.As(err, &de) {
						t.Fatalf("Read = %d records, %v; want a *DamagedError", len(rs), err)
					}
				}
				wantDamaged(t, fs, "bad", path, last, "length")
				healthyBeside(t, fs, "good", 3)
				if got, _ := os.ReadFile(path); !bytes.Equal(got, damaged) {
					t.Errorf("segment is %d bytes after open, want the %d damaged bytes untouched", len(got), len(damaged))
				}
				fs.Close()
				os.WriteFile(segPath(dir, "good", 1), nil, 0o600)
				fill(t, dir, "good", 3, nil)
			})
		}
	}
}
