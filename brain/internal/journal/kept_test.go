package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recoveryOutcome is everything a recovery decides that a user can see:
// the damage it reports, or the records it serves, the next sequence, the
// segment bytes it leaves and the torn tails it keeps aside.
type recoveryOutcome struct {
	damage  *DamagedError
	next    uint64
	records []Record
	files   map[string]string
}

// recoverVia writes segs (segment first sequence -> bytes) as session s
// and opens it, first with Next (frames checked by the scanner) or first
// with a Read from the start (each segment read once, checked in memory
// and kept for the pages).
func recoverVia(t *testing.T, segs map[uint64][]byte, byRead bool, opts *Options) recoveryOutcome {
	t.Helper()
	dir := t.TempDir()
	jdir := filepath.Join(dir, "s", "journal")
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	for first, b := range segs {
		if err := os.WriteFile(filepath.Join(jdir, segmentName(first)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := OpenFileStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var out recoveryOutcome
	var de *DamagedError
	var rs []Record
	if byRead {
		rs, err = fs.Read(bg, "s", 0, 7, 0)
	} else {
		_, err = fs.Next(bg, "s")
		if err == nil {
			rs, err = fs.Read(bg, "s", 0, 7, 0)
		}
	}
	if err != nil {
		if !errors.As(err, &de) {
			t.Fatalf("first use = %v, want success or a *DamagedError", err)
		}
		d := *de // its file relative to the data directory, to compare
		d.File = strings.TrimPrefix(d.File, dir)
		out.damage = &d
		return out
	}
	for len(rs) > 0 {
		out.records = append(out.records, rs...)
		if rs, err = fs.Read(bg, "s", rs[len(rs)-1].Sequence, 7, 0); err != nil {
			t.Fatalf("Read = %v", err)
		}
	}
	if out.next, err = fs.Next(bg, "s"); err != nil {
		t.Fatal(err)
	}
	out.files = map[string]string{}
	entries, _ := os.ReadDir(jdir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(jdir, e.Name()))
		out.files[e.Name()] = string(b)
	}
	return out
}

// sameOutcome fails unless a recovery started by a Read from the start
// judged segs exactly as one started by Next.
func sameOutcome(t *testing.T, name string, segs map[uint64][]byte, opts *Options) {
	t.Helper()
	scan, kept := recoverVia(t, segs, false, opts), recoverVia(t, segs, true, opts)
	if (scan.damage == nil) != (kept.damage == nil) || scan.damage != nil && *scan.damage != *kept.damage {
		t.Fatalf("%s: damage by Next %+v, by Read %+v", name, scan.damage, kept.damage)
	}
	if scan.damage != nil {
		return
	}
	if scan.next != kept.next || len(scan.records) != len(kept.records) || len(scan.records) != int(scan.next-1) {
		t.Fatalf("%s: Next %d / %d, records %d / %d", name, scan.next, kept.next, len(scan.records), len(kept.records))
	}
	for i, a := range scan.records {
		b := kept.records[i]
		if a.Sequence != b.Sequence || a.Kind != b.Kind || a.RecordedAtMs != b.RecordedAtMs ||
			!bytes.Equal(a.Data, b.Data) || (a.Data == nil) != (b.Data == nil) ||
			!bytes.Equal(a.Origin, b.Origin) || (a.Origin == nil) != (b.Origin == nil) {
			t.Fatalf("%s: record %d by Next %+v, by Read %+v", name, i+1, a, b)
		}
	}
	if !maps2Equal(scan.files, kept.files) {
		t.Fatalf("%s: files left by Next %v, by Read %v", name, keys(scan.files), keys(kept.files))
	}
}

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var ks []string
	for k, v := range m {
		ks = append(ks, fmt.Sprintf("%s(%d)", k, len(v)))
	}
	slices.Sort(ks)
	return ks
}

// mixedFrames encodes records from..from+n-1 of every shape: data, no
// data, origin, an origin with no data, kinds of several lengths.
func mixedFrames(from, n int) ([]byte, []int) {
	var b []byte
	var offs []int
	for i := range n {
		r := Record{Sequence: uint64(from + i), RecordedAtMs: int64(1000 + i), Kind: "k" + string(make([]byte, i%5))}
		switch i % 4 {
		case 0:
			r.Data = json.RawMessage(fmt.Sprintf(`{"n":%d}`, from+i))
		case 1:
			r.Origin = json.RawMessage(`{"o":1}`)
		case 2:
			r.Data, r.Origin = json.RawMessage(`[1,2,3]`), json.RawMessage(`"x"`)
		}
		offs = append(offs, len(b))
		b = appendFrame(b, &r)
	}
	return b, offs
}

// reframe replaces the frame at off of b with one holding payload p under
// a matching checksum.
func reframe(b []byte, off int, p []byte) []byte {
	n := int(binary.LittleEndian.Uint32(b[off:]))
	f := binary.LittleEndian.AppendUint32(nil, uint32(len(p)))
	f = binary.LittleEndian.AppendUint32(f, crc32.Checksum(p, castagnoli))
	f = append(f, p...)
	return slices.Concat(b[:off], f, b[off+frameHeaderSize+n:])
}

// TestKeptRecoveryJudgesLikeScan: a session whose first use is a Read from
// its start is recovered from one read of each segment, checked in memory
// (three frames' checksums at a time). Whatever the damage — a flipped bit
// in any header or payload byte, a frame whose checksum matches a payload
// that does not decode, a sequence gap, a length above the limit, a torn
// tail at any byte of a first, middle or last frame, across segments — it must report the same damage (file,
// offset, reason) as a recovery started by Next, or serve the same records
// and leave the same files.
func TestKeptRecoveryJudgesLikeScan(t *testing.T) {
	opts := &Options{MaxRecordBytes: 4 << 10}
	seg, offs := mixedFrames(1, 11)
	sameOutcome(t, "intact", map[uint64][]byte{1: seg}, opts)
	eachFrameDamage(seg, offs, 5<<10, func(name string, b []byte) {
		sameOutcome(t, name, map[uint64][]byte{1: b}, opts)
	})
	for f := 0; f < len(offs); f += 5 {
		for cut := offs[f]; cut < frameEnd(seg, offs, f); cut++ {
			sameOutcome(t, fmt.Sprintf("cut at %d", cut), map[uint64][]byte{1: seg[:cut]}, opts)
		}
	}

	// Across segments: damage in a middle segment, a torn final segment,
	// a gap between segments, an empty final segment past the records.
	s2, _ := mixedFrames(12, 9)
	s3, _ := mixedFrames(21, 5)
	sameOutcome(t, "three segments", map[uint64][]byte{1: seg, 12: s2, 21: s3}, opts)
	flipped := slices.Clone(s2)
	flipped[40] ^= 4
	sameOutcome(t, "middle segment", map[uint64][]byte{1: seg, 12: flipped, 21: s3}, opts)
	sameOutcome(t, "torn middle segment", map[uint64][]byte{1: seg, 12: s2[:len(s2)-2], 21: s3}, opts)
	sameOutcome(t, "torn final segment", map[uint64][]byte{1: seg, 12: s2, 21: s3[:len(s3)-9]}, opts)
	sameOutcome(t, "gap between segments", map[uint64][]byte{1: seg, 13: s2}, opts)
	sameOutcome(t, "empty final segment", map[uint64][]byte{1: seg, 12: s2, 40: nil}, opts)
	sameOutcome(t, "empty middle segment", map[uint64][]byte{1: seg, 12: nil, 21: s3}, opts)
}

// FuzzKeptRecovery writes arbitrary bytes after two valid frames as a
// session's segment and checks that a recovery started by a Read from the
// start judges them exactly as one started by Next.
func FuzzKeptRecovery(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	head, _ := mixedFrames(1, 2)
	f.Fuzz(func(t *testing.T, b []byte) {
		sameOutcome(t, "fuzz", map[uint64][]byte{1: b}, &Options{MaxRecordBytes: 1 << 20})
		sameOutcome(t, "fuzz after two frames", map[uint64][]byte{1: slices.Concat(head, b)}, &Options{MaxRecordBytes: 1 << 20})
	})
}

// FuzzPayloadOK: the fast payload check the recovery loops use accepts
// exactly what parsePayload accepts.
func FuzzPayloadOK(f *testing.F) {
	for _, s := range seedFrames() {
		if len(s) > frameHeaderSize {
			f.Add(s[frameHeaderSize:])
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		_, err := parsePayload(p)
		if ok := payloadOK(p); ok != (err == nil) {
			t.Fatalf("payloadOK(%x) = %v, parsePayload: %v", p, ok, err)
		}
	})
}

// checkFrameByFrame is checkKept's rules applied one frame at a time,
// with hash/crc32: the reference the three-frame check must agree with.
func checkFrameByFrame(b []byte, expect uint64, maxPayload int, si int, lastMs int64, index []indexEntry) (keptCheck, error) {
	c := keptCheck{next: expect, lastMs: lastMs, index: index}
	lastIdx := int64(-1)
	if n := len(index); n > 0 && index[n-1].seg == si {
		lastIdx = index[n-1].off
	}
	for off := 0; off < len(b); {
		c.end = int64(off)
		rest := b[off:]
		if len(rest) < frameHeaderSize {
			return c, errShortFrame
		}
		n := uint64(binary.LittleEndian.Uint32(rest))
		if n > uint64(maxPayload) {
			return c, fmt.Errorf("%w: %d bytes", errFrameSize, n)
		}
		if n > uint64(len(rest)-frameHeaderSize) {
			return c, errShortFrame
		}
		p := rest[frameHeaderSize : frameHeaderSize+int(n)]
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(rest[4:]) {
			return c, errChecksum
		}
		v, err := parsePayload(p)
		if err != nil {
			return c, err
		}
		if v.seq != c.next {
			return c, &seqError{got: v.seq, want: c.next}
		}
		if o := int64(off); o == 0 || lastIdx < 0 || o-lastIdx >= indexEveryBytes {
			c.index = append(c.index, indexEntry{seq: c.next, seg: si, off: o})
			lastIdx = o
		}
		c.lastMs = max(c.lastMs, v.ms)
		c.next++
		off += frameHeaderSize + int(n)
		c.end = int64(off)
	}
	return c, nil
}

// checkLikeFrameByFrame fails unless checkKept judges seg exactly as
// checkFrameByFrame does.
func checkLikeFrameByFrame(t *testing.T, name string, seg []byte) {
	t.Helper()
	index := []indexEntry{{seq: 1, seg: 0, off: 0}}
	got, gerr := checkKept(seg, 4, 4<<10, 1, 7, slices.Clone(index))
	want, werr := checkFrameByFrame(seg, 4, 4<<10, 1, 7, slices.Clone(index))
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || got.end != want.end || got.next != want.next || got.lastMs != want.lastMs || !slices.Equal(got.index, want.index) {
		t.Fatalf("%s: end %d next %d lastMs %d index %v err %v; frame by frame: end %d next %d lastMs %d index %v err %v",
			name, got.end, got.next, got.lastMs, got.index, gerr, want.end, want.next, want.lastMs, want.index, werr)
	}
	// Read and checked chunk by chunk, with chunk boundaries falling in
	// headers, in payloads and between frames.
	for _, chunk := range []int64{1, 5, 64, 131} {
		b, got, gerr, rerr := readCheckedBy(chunk, bytes.NewReader(seg), int64(len(seg)), 4, 4<<10, 1, 7, slices.Clone(index))
		if rerr != nil || !bytes.Equal(b[:got.end], seg[:got.end]) || fmt.Sprint(gerr) != fmt.Sprint(werr) || got.end != want.end || got.next != want.next || got.lastMs != want.lastMs || !slices.Equal(got.index, want.index) {
			t.Fatalf("%s, read in chunks of %d: end %d next %d lastMs %d index %v err %v (read: %v); frame by frame: end %d next %d lastMs %d index %v err %v",
				name, chunk, got.end, got.next, got.lastMs, got.index, gerr, rerr, want.end, want.next, want.lastMs, want.index, werr)
		}
	}
}

// TestCheckKeptLikeFrameByFrame: the check of kept bytes, which takes
// three frames at a time (and runs on at once while three in a row check
// out), stops at the same frame for the same reason, with the same next
// sequence, last recorded_at_ms and index entries, as a check of one
// frame at a time — whichever frame of a run of three is damaged (a
// flipped bit in any byte, a payload that does not decode under a
// matching checksum, a sequence out of place, a length above the limit)
// or cut, and across index entries every 64 KiB.
func TestCheckKeptLikeFrameByFrame(t *testing.T) {
	seg, offs := mixedFrames(4, 14)
	checkLikeFrameByFrame(t, "intact", seg)
	eachFrameDamage(seg, offs, 5<<10, func(name string, b []byte) {
		checkLikeFrameByFrame(t, name, b)
	})
	for i := range seg {
		checkLikeFrameByFrame(t, fmt.Sprintf("cut at byte %d", i), seg[:i])
	}
	var long []byte
	for i := 0; len(long) < 3*indexEveryBytes; i++ {
		r := Record{Sequence: uint64(4 + i), RecordedAtMs: int64(i * 7919 % 1000), Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("x", 300+i%200) + `"`)}
		long = appendFrame(long, &r)
	}
	checkLikeFrameByFrame(t, "index entries", long)
	flipped := slices.Clone(long)
	flipped[2*indexEveryBytes] ^= 1
	checkLikeFrameByFrame(t, "index entries, then damage", flipped)
}

// FuzzCheckKept compares the check of kept bytes with a check of one
// frame at a time on arbitrary bytes after valid frames.
func FuzzCheckKept(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s, uint8(0))
	}
	head, _ := mixedFrames(4, 7)
	f.Fuzz(func(t *testing.T, b []byte, skip uint8) {
		// After 0..7 valid frames, so that the arbitrary bytes fall in
		// every place of a run of three.
		cut := len(head)
		if n := int(skip % 8); n < 7 {
			_, offs := mixedFrames(4, 7)
			cut = offs[n]
		}
		checkLikeFrameByFrame(t, "fuzz", slices.Concat(head[:cut], b))
	})
}

// frameEnd answers where frame f of seg, whose frames start at offs, ends.
func frameEnd(seg []byte, offs []int, f int) int {
	if f+1 < len(offs) {
		return offs[f+1]
	}
	return len(seg)
}

// eachFrameDamage calls fn with a copy of seg, whose frames start at offs,
// damaged in each way a check must refuse, one frame at a time: one bit
// flipped in each of the frame's bytes, each of badPayloads under a
// matching checksum, and a length above limit.
func eachFrameDamage(seg []byte, offs []int, limit uint32, fn func(name string, b []byte)) {
	for f, off := range offs {
		end := frameEnd(seg, offs, f)
		for i := off; i < end; i++ {
			b := slices.Clone(seg)
			b[i] ^= 1 << (i % 8)
			fn(fmt.Sprintf("frame %d byte %d flipped", f, i-off), b)
		}
		for what, q := range badPayloads(seg[off+frameHeaderSize:end], f+5) {
			fn(fmt.Sprintf("frame %d %s", f, what), reframe(seg, off, q))
		}
		huge := slices.Clone(seg)
		binary.LittleEndian.PutUint32(huge[off:], limit)
		fn(fmt.Sprintf("frame %d above the limit", f), huge)
	}
}

// badPayloads answers payloads made from the good payload p that a check
// must refuse, by what is wrong with them; "sequence" carries seq.
func badPayloads(good []byte, seq int) map[string][]byte {
	p := slices.Clone(good)
	return map[string][]byte{
		"version":  append([]byte{2}, p[1:]...),
		"flags":    append([]byte{p[0], p[1] | 2}, p[2:]...),
		"trailing": append(slices.Clone(p), 0),
		"short":    p[:payloadFixed-1],
		"kind 0":   append(slices.Concat(p[:18], []byte{0, 0}), p[20:]...),
		"sequence": append(slices.Concat(p[:2], binary.LittleEndian.AppendUint64(nil, uint64(seq))), p[10:]...),
	}
}

// failingReader reads like its bytes until off, then fails with err.
type failingReader struct {
	b   []byte
	off int64
	err error
}

func (r failingReader) ReadAt(p []byte, at int64) (int, error) {
	if at+int64(len(p)) <= r.off {
		return copy(p, r.b[at:]), nil
	}
	n := 0
	if at < r.off {
		n = copy(p, r.b[at:r.off])
	}
	return n, r.err
}

// TestReadCheckedReadError: a segment that cannot be read through its size
// — an I/O error or a file that shrank — is a read error, whichever chunk
// fails, never a torn tail or damage; the intact frames before it do not
// hide it.
func TestReadCheckedReadError(t *testing.T) {
	seg, _ := mixedFrames(4, 14)
	eio := errors.New("input/output error")
	for _, chunk := range []int64{5, 64, int64(len(seg))} {
		for _, at := range []int64{0, 3, int64(len(seg)) / 2, int64(len(seg)) - 1} {
			_, _, err, rerr := readCheckedBy(chunk, failingReader{seg, at, eio}, int64(len(seg)), 4, 4<<10, 1, 7, nil)
			if !errors.Is(rerr, eio) || err != nil {
				t.Fatalf("chunks of %d, failing at %d: read error %v, check %v; want %v", chunk, at, rerr, err, eio)
			}
			_, _, err, rerr = readCheckedBy(chunk, bytes.NewReader(seg[:at]), int64(len(seg)), 4, 4<<10, 1, 7, nil)
			if !errors.Is(rerr, io.ErrUnexpectedEOF) || err != nil {
				t.Fatalf("chunks of %d, file cut at %d: read error %v, check %v; want %v", chunk, at, rerr, err, io.ErrUnexpectedEOF)
			}
		}
	}
}
