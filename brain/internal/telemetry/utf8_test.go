package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// TestFileLinesAreUTF8: a record whose bytes are not UTF-8 is refused as
// invalid and never reaches the file, while records in UTF-8 (whatever
// their characters, escaped lone surrogates included) and origins naming
// a tool with bytes that are not UTF-8 are written; read back, every line
// of the file is one UTF-8 JSON object.
func TestFileLinesAreUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	f, err := OpenFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Options{Sink: f})
	good := []string{`{"a":"é"}`, "{\"a\":\"\u2028𝄞\"}", `"\ud800"`, `{"k\u00ff":[1,"ok"]}`}
	bad := []string{"{\"a\":\"\xff\"}", "\"\xc3\"", "\"\xed\xa0\x80\"", "{\"\xfe\":1}", "[\"\xe2\x82\"]"}
	for _, r := range good {
		if err := p.Accept(toolOrigin("ses_a"), []byte(r)); err != nil {
			t.Fatalf("Accept %q: %v", r, err)
		}
	}
	for _, r := range bad {
		if err := p.Accept(toolOrigin("ses_a"), []byte(r)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Accept %q = %v, want ErrInvalid", r, err)
		}
	}
	odd := Origin{SessionID: "ses_\xff", Origin: api.EventOrigin{Kind: api.OriginTool, Sequence: 1}, Tool: "t\xc3", Environment: "e\xff"}
	if err := p.Accept(odd, []byte(`{"from":"odd"}`)); err != nil {
		t.Fatalf("Accept from %+v: %v", odd, err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Written != uint64(len(good)+1) || s.Dropped[DropInvalid] != uint64(len(bad)) {
		t.Errorf("written %d, dropped %v; want %d written, %d invalid", s.Written, s.Dropped, len(good)+1, len(bad))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != len(good)+1 {
		t.Fatalf("%d lines, want %d:\n%q", len(lines), len(good)+1, data)
	}
	for i, line := range lines {
		if !utf8.Valid(line) || !json.Valid(line) || line[len(line)-1] != '\n' {
			t.Errorf("line %d %q is not one UTF-8 JSON line", i, line)
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if i < len(good) {
			if string(e.Record) != good[i] {
				t.Errorf("line %d record %s, want %s", i, e.Record, good[i])
			}
		} else if e.SessionID != "ses_\uFFFD" || e.Tool != "t\uFFFD" || e.Environment != "e\uFFFD" {
			t.Errorf("line %d origin %q %q %q, want its bytes that are not UTF-8 replaced by U+FFFD", i, e.SessionID, e.Tool, e.Environment)
		}
	}
}

// TestFileRefusesRecordNotUTF8: an entry handed to the file whose record
// is not UTF-8 is refused, and the file keeps only UTF-8 lines.
func TestFileRefusesRecordNotUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	f, err := OpenFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := f.Write(ctx, Entry{SessionID: "s", Record: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, Entry{SessionID: "s", Record: json.RawMessage("\"\xff\"")}); err == nil {
		t.Error("a record that is not UTF-8 was written")
	}
	if err := f.Write(ctx, Entry{SessionID: "s", Record: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 || string(lines[0]["record"]) != `{"n":1}` || string(lines[1]["record"]) != `{"n":2}` {
		t.Errorf("file holds %d lines %v, want the records n=1 and n=2", len(lines), lines)
	}
}
