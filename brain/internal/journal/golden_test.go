package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The golden files in testdata/golden hold the bytes this version writes
// for a fixed input, in each of the formats doc.go specifies. The tests
// check that they still decode to that input (files written by this
// version must stay readable) and that the encoders still write exactly
// those bytes. After a deliberate format change, regenerate them with
//
//	go test ./brain/internal/journal -run Golden -update
//
// and keep reading the old ones (add them under a new name).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name (writing it with -update)
// and answers the file's bytes.
func golden(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: this version writes\n%x\nthe golden file holds\n%x", name, got, want)
	}
	return want
}

const goldenSession = "golden-session"

// goldenRecords is the input of every golden file.
func goldenRecords() []Record {
	return []Record{
		{Sequence: 1, Kind: "session_created", RecordedAtMs: 1767225600000, Data: json.RawMessage(`{"agentloop":"default"}`)},
		{Sequence: 2, Kind: "user_message", RecordedAtMs: 1767225600001, Data: json.RawMessage(`{"message":"héllo <&>"}`),
			Origin: json.RawMessage(`{"kind":"client"}`)},
		{Sequence: 3, Kind: "turn_started", RecordedAtMs: 1767225600001},
	}
}

func goldenSegment() []byte {
	var b []byte
	for _, r := range goldenRecords() {
		b = appendFrame(b, &r)
	}
	return b
}

func TestGoldenSegment(t *testing.T) {
	want := goldenRecords()
	seg := golden(t, "segment", goldenSegment())
	var got []Record
	for rest := seg; len(rest) > 0; {
		r, n, err := decodeFrame(rest, DefaultMaxRecordBytes)
		if err != nil {
			t.Fatalf("frame %d: %v", len(got)+1, err)
		}
		got = append(got, r)
		rest = rest[n:]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}

	// A data directory holding the golden segment opens and reads back.
	dir := t.TempDir()
	jdir := filepath.Join(dir, goldenSession, "journal")
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jdir, segmentName(1)), seg, 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	readGolden(t, fs, want)

	// The store itself writes the same bytes for the same appends.
	dir2 := t.TempDir()
	fs2, err := OpenFileStore(dir2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs2.Append(context.Background(), goldenSession, 1, want); err != nil {
		t.Fatal(err)
	}
	if err := fs2.Close(); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(dir2, goldenSession, "journal", segmentName(1)))
	if err != nil || !bytes.Equal(written, seg) {
		t.Errorf("the store wrote\n%x (%v)\nthe golden segment is\n%x", written, err, seg)
	}
}

// readGolden checks that fs holds exactly want in the golden session.
func readGolden(t *testing.T, fs *FileStore, want []Record) {
	t.Helper()
	got, err := fs.Read(context.Background(), goldenSession, 0, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
}

func TestGoldenCommitLog(t *testing.T) {
	want := goldenRecords()
	frames := goldenSegment()
	// Two entries: records 1-2 at offset 0, record 3 after them.
	split := frameSize(&want[0]) + frameSize(&want[1])
	log := appendLogEntry(nil, goldenSession, 1, 0, frames[:split])
	log = appendLogEntry(log, goldenSession, 1, int64(split), frames[split:])
	log = golden(t, "commitlog", log)

	type entry struct {
		id       string
		segFirst uint64
		off      int64
		frames   []byte
		first    uint64
		count    int
	}
	var got []entry
	for rest := log; len(rest) > 0; {
		e, n, err := decodeLogEntry(rest, DefaultMaxRecordBytes)
		if err != nil {
			t.Fatalf("entry %d: %v", len(got)+1, err)
		}
		got = append(got, entry(e))
		rest = rest[n:]
	}
	wantEntries := []entry{
		{goldenSession, 1, 0, frames[:split], 1, 2},
		{goldenSession, 1, int64(split), frames[split:], 3, 1},
	}
	if !reflect.DeepEqual(got, wantEntries) {
		t.Fatalf("decoded %+v, want %+v", got, wantEntries)
	}

	sp := golden(t, "syncpoint", encodeSyncPoint(7))

	// Replay rebuilds the session from the golden log alone, and a golden
	// marker retiring log 6 and below is read.
	dir := t.TempDir()
	ldir := filepath.Join(dir, commitLogDir)
	if err := os.MkdirAll(ldir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ldir, syncPointName), sp, 0o600); err != nil {
		t.Fatal(err)
	}
	if next, err := readSyncPoint(ldir); err != nil || next != 7 {
		t.Fatalf("readSyncPoint = %d, %v; want 7", next, err)
	}
	if err := os.WriteFile(filepath.Join(ldir, logName(7)), log, 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	readGolden(t, fs, want)
}

func TestGoldenCheckpoint(t *testing.T) {
	want := goldenRecords()
	seg := goldenSegment()
	lastOff := int64(frameSize(&want[0]) + frameSize(&want[1]))
	payload := []byte(`{"status":"running","transcript":[]}`)
	cp := golden(t, "checkpoint", encodeCheckpoint(3, []stamp{{first: 1, size: int64(len(seg))}}, lastOff, payload))

	got, err := decodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	wantCP := checkpointFile{through: 3, stamps: []stamp{{1, int64(len(seg))}}, lastOff: lastOff, payload: payload}
	if !reflect.DeepEqual(got, wantCP) {
		t.Fatalf("decoded %+v, want %+v", got, wantCP)
	}

	// A session directory with the golden segment and checkpoint answers
	// the payload, and the store writes the same checkpoint bytes.
	dir := t.TempDir()
	sdir := filepath.Join(dir, goldenSession)
	if err := os.MkdirAll(filepath.Join(sdir, "journal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sdir, "journal", segmentName(1)), seg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sdir, checkpointName), cp, 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	through, p, err := fs.ReadCheckpoint(context.Background(), goldenSession)
	if err != nil || through != 3 || !bytes.Equal(p, payload) {
		t.Fatalf("ReadCheckpoint = %d, %q, %v; want 3, %q", through, p, err, payload)
	}
	readGolden(t, fs, want)
	if err := os.Remove(filepath.Join(sdir, checkpointName)); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteCheckpoint(context.Background(), goldenSession, 3, payload); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(sdir, checkpointName))
	if err != nil || !bytes.Equal(written, cp) {
		t.Errorf("the store wrote\n%x (%v)\nthe golden checkpoint is\n%x", written, err, cp)
	}
}
