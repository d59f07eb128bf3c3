package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crashedRound answers the frames of records from..from+n-1 of session
// "s", large enough to span several sectors each: the frames of a round a
// crash cut short, whose log entry never reached the disk.
func crashedRound(from, n int) []byte {
	var b []byte
	for i := range n {
		r := Record{Sequence: uint64(from + i), RecordedAtMs: 1, Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("y", 1500) + `"`)}
		b = appendFrame(b, &r)
	}
	return b
}

// sectorTear answers the bytes a crash leaves of frames written at off of
// a file whose new size became durable while only the sectors up to the
// k-th boundary after off reached the disk: the rest reads as zero.
func sectorTear(frames []byte, off, k int) []byte {
	kept := (off/512+k)*512 - off
	return concat(frames[:kept], make([]byte, len(frames)-kept))
}

// checkCut checks that session "s" of the store at sdir holds exactly the
// n records before the crashed round, that appends go on densely, also
// after a restart. The first use of the session is a Read from its start
// (which checks each segment in memory) when viaRead is set, else Next.
func checkCut(t *testing.T, sdir string, n int, viaRead bool) {
	t.Helper()
	fs := openT(t, sdir, nil)
	if viaRead {
		if page, err := fs.Read(bg, "s", 0, 0, 0); err != nil || len(page) != n {
			fs.Close()
			t.Fatalf("first Read = %d records, %v; want %d", len(page), err, n)
		}
	}
	if next, err := fs.Next(bg, "s"); err != nil || next != uint64(n+1) {
		fs.Close()
		t.Fatalf("Next = %d, %v; want %d", next, err, n+1)
	}
	if got := readSession(t, fs, "s"); len(got) != n {
		t.Fatalf("session holds %d records, want %d", len(got), n)
	}
	if err := fs.Append(bg, "s", uint64(n+1), numbered(n+1, 2)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	fs = openT(t, sdir, nil)
	defer fs.Close()
	got := readSession(t, fs, "s")
	if len(got) != n+2 {
		t.Fatalf("after restart the session holds %d records, want %d", len(got), n+2)
	}
	for i, r := range got {
		if r.Sequence != uint64(i+1) {
			t.Fatalf("record %d has sequence %d", i+1, r.Sequence)
		}
	}
}

// A crash can make a segment's new size durable while only the first
// sectors of a write that was never acknowledged reached the disk: the
// segment then ends in the start of a frame and zeros. That write is cut
// as any incomplete one, the session keeps every record before it, and
// appends go on.
func TestSegmentTornFrameIntoZerosIsCut(t *testing.T) {
	for i, k := range []int{1, 2, 3, 1, 2, 3} { // the first frame spans more than 3 sectors
		sdir := filepath.Join(t.TempDir(), "sessions")
		fill(t, sdir, "s", 3, nil)
		seg := segPath(sdir, "s", 1)
		whole := mustRead(t, seg)
		torn := concat(whole, sectorTear(crashedRound(4, 2), len(whole), k))
		if err := os.WriteFile(seg, torn, 0o600); err != nil {
			t.Fatal(err)
		}
		checkCut(t, sdir, 3, i >= 3)
		if b := mustRead(t, seg); len(b) < len(whole) || !bytes.Equal(b[:len(whole)], whole) {
			t.Fatalf("records before the torn write were changed")
		}
	}
}

// A round that rolls creates the next segment before it writes its frames
// to the current one, and segments are made durable only at sync points:
// a crash before the round's log entry reached the disk can leave the
// segment it was filling with a torn tail (cut short, zeros, or the start
// of a frame and zeros) while the next segment exists holding nothing.
// Nothing of that round was acknowledged: the tail is cut, the empty
// segment removed, and the session keeps every record before the round.
func TestNonFinalSegmentTornByCrashIsCut(t *testing.T) {
	// Each tail and how many records of the round it holds whole (those
	// stay, as after any torn write).
	type tail struct {
		bytes func(whole []byte) []byte
		whole int
	}
	tails := map[string]tail{
		"cut short":            {func(w []byte) []byte { return crashedRound(4, 2)[:700] }, 0},
		"zeros":                {func(w []byte) []byte { return make([]byte, len(crashedRound(4, 2))) }, 0},
		"sectors and zeros":    {func(w []byte) []byte { return sectorTear(crashedRound(4, 2), len(w), 2) }, 0},
		"header cut":           {func(w []byte) []byte { return crashedRound(4, 1)[:5] }, 0},
		"whole frame and torn": {func(w []byte) []byte { f := crashedRound(4, 2); return f[:len(f)-100] }, 1},
		"whole frame and zeros": {func(w []byte) []byte {
			f := crashedRound(4, 2)
			return concat(f[:len(f)/2], make([]byte, len(f)/2))
		}, 1},
	}
	nexts := map[string][]byte{"empty": nil, "zeros": make([]byte, 4096)}
	for tname, tail := range tails {
		for nname, next := range nexts {
			t.Run(tname+"/next "+nname, func(t *testing.T) {
				sdir := filepath.Join(t.TempDir(), "sessions")
				fill(t, sdir, "s", 3, nil)
				seg := segPath(sdir, "s", 1)
				whole := mustRead(t, seg)
				if err := os.WriteFile(seg, concat(whole, tail.bytes(whole)), 0o600); err != nil {
					t.Fatal(err)
				}
				past := segPath(sdir, "s", 6)
				if err := os.WriteFile(past, next, 0o600); err != nil {
					t.Fatal(err)
				}
				checkCut(t, sdir, 3+tail.whole, nname == "zeros")
				if torn, _ := filepath.Glob(seg + ".torn-*"); len(torn) != 1 {
					t.Fatalf("torn tails kept: %v, want the one cut", torn)
				}
				if _, err := os.Stat(past); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("segment past the records: %v, want it removed", err)
				}
			})
		}
	}
}

// A torn tail in a segment that a segment holding records follows is no
// crash of the last round alone: the session is refused as damaged and
// nothing is cut.
func TestNonFinalSegmentTornBeforeRecordsIsDamage(t *testing.T) {
	sdir := filepath.Join(t.TempDir(), "sessions")
	fill(t, sdir, "s", 3, nil)
	seg := segPath(sdir, "s", 1)
	whole := mustRead(t, seg)
	f := crashedRound(4, 2)
	bad := concat(whole, f[:700])
	if err := os.WriteFile(seg, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	past := segPath(sdir, "s", 6)
	if err := os.WriteFile(past, crashedRound(6, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := openT(t, sdir, nil)
	defer fs.Close()
	_, err := fs.Next(bg, "s")
	var de *DamagedError
	if !errors.As(err, &de) || de.File != seg || de.Offset != int64(len(whole)) {
		t.Fatalf("Next = %v, want a *DamagedError at %s offset %d", err, seg, len(whole))
	}
	if b := mustRead(t, seg); !bytes.Equal(b, bad) {
		t.Fatal("damaged segment was rewritten")
	}
}

// A create whose first round a crash cut short leaves a first segment
// holding the first sectors of its first frame and zeros, perhaps with
// the empty segment a roll of that round created: the session holds no
// record, so Sessions does not list it, and its first append starts at
// sequence 1. A torn first frame that a segment holding a record follows
// is damage, and listed.
func TestSessionsTornFirstRound(t *testing.T) {
	sdir := filepath.Join(t.TempDir(), "sessions")
	fill(t, sdir, "kept", 2, nil)
	first := crashedRound(1, 2)
	for _, id := range []string{"torn", "rolled", "damaged"} {
		if err := os.MkdirAll(filepath.Join(sdir, id, "journal"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segPath(sdir, id, 1), sectorTear(first, 0, 1), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(segPath(sdir, "rolled", 3), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segPath(sdir, "damaged", 3), crashedRound(3, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := openT(t, sdir, nil)
	defer fs.Close()
	ids, err := fs.Sessions(bg)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[damaged kept]" {
		t.Fatalf("Sessions = %v, want [damaged kept]", ids)
	}
	for _, id := range []string{"torn", "rolled"} {
		if next, err := fs.Next(bg, id); err != nil || next != 1 {
			t.Fatalf("Next(%s) = %d, %v; want 1", id, next, err)
		}
		if err := fs.Append(bg, id, 1, numbered(1, 1)); err != nil {
			t.Fatalf("first append to %s = %v", id, err)
		}
	}
	var de *DamagedError
	if _, err := fs.Next(bg, "damaged"); !errors.As(err, &de) {
		t.Fatalf("Next(damaged) = %v, want a *DamagedError", err)
	}
}
