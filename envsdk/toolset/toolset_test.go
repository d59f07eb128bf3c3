package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// failure asserts that err is an *envsdk.Error with code and returns it.
func failure(t *testing.T, err error, code string) *envsdk.Error {
	t.Helper()
	var e *envsdk.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a failure %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("failure %s: %s, want code %s", e.Code, e.Message, code)
	}
	return e
}

func details(t *testing.T, e *envsdk.Error) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Details, &d); err != nil {
		t.Fatalf("details %s: %v", e.Details, err)
	}
	return d
}

func TestSelect(t *testing.T) {
	tools := map[string]int{ToolCommand: 1, ToolRead: 2}
	for _, tc := range []struct {
		impl string
		want int
		msg  string // in the unsupported message; "" for success
	}{
		{`{"tool":"command"}`, 1, ""},
		{`{"tool":"read"}`, 2, ""},
		{`{"tool":"edit"}`, 0, `unsupported tool "edit"`},
		{`{"tool":""}`, 0, "want {\"tool\": NAME}"},
		{`{}`, 0, "want {\"tool\": NAME}"},
		{`{"tool":"read","x":1}`, 0, "want {\"tool\": NAME}"},
		{`{"tool":7}`, 0, "want {\"tool\": NAME}"},
		{`"read"`, 0, "want {\"tool\": NAME}"},
		{``, 0, "want {\"tool\": NAME}"},
	} {
		got, err := Select(json.RawMessage(tc.impl), tools)
		if tc.msg == "" {
			if err != nil || got != tc.want {
				t.Errorf("Select(%s) = %d, %v; want %d", tc.impl, got, err, tc.want)
			}
			continue
		}
		e := failure(t, err, envapi.CodeUnsupported)
		if !strings.Contains(e.Message, tc.msg) {
			t.Errorf("Select(%s): message %q, want it to contain %q", tc.impl, e.Message, tc.msg)
		}
	}
}

func TestImplementation(t *testing.T) {
	for _, name := range Tools() {
		if got, want := string(Implementation(name)), `{"tool":"`+name+`"}`; got != want {
			t.Errorf("Implementation(%s) = %s, want %s", name, got, want)
		}
		if _, err := Select(Implementation(name), map[string]bool{name: true}); err != nil {
			t.Errorf("Select(Implementation(%s)): %v", name, err)
		}
	}
}

// TestDecode covers the inputs of every tool: what decodes, and the field
// an invalid_input failure names.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input func() any
		raw   string
		field string // "" for success; "-" for a failure without a field
	}{
		{"command argv", func() any { return &CommandInput{} }, `{"argv":["ls","-l"],"cwd":"sub","timeout_ms":5}`, ""},
		{"command shell", func() any { return &CommandInput{} }, `{"shell":"echo hi","stdin":"","env":{"A":"b"}}`, ""},
		{"command both", func() any { return &CommandInput{} }, `{"argv":["ls"],"shell":"ls"}`, "-"},
		{"command neither", func() any { return &CommandInput{} }, `{}`, "-"},
		{"command null", func() any { return &CommandInput{} }, `null`, "-"},
		{"command zero timeout", func() any { return &CommandInput{} }, `{"argv":["ls"],"timeout_ms":0}`, ""},
		{"command negative timeout", func() any { return &CommandInput{} }, `{"argv":["ls"],"timeout_ms":-1}`, "input.timeout_ms"},
		{"command argv type", func() any { return &CommandInput{} }, `{"argv":"ls"}`, "input.argv"},
		{"command unknown field", func() any { return &CommandInput{} }, `{"argv":["ls"],"dir":"x"}`, "input.dir"},
		{"command env value type", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"A":1}}`, "input.env"},
		{"command NUL in argv", func() any { return &CommandInput{} }, `{"argv":["ls","a\u0000b"]}`, "input.argv"},
		{"command NUL in shell", func() any { return &CommandInput{} }, `{"shell":"ls\u0000"}`, "input.shell"},
		{"command NUL in a variable", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"A":"\u0000"}}`, "input.env"},
		{"command NUL in a name", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"A\u0000":""}}`, "input.env"},
		{"command NUL on stdin", func() any { return &CommandInput{} }, `{"argv":["ls"],"stdin":"\u0000"}`, ""},
		{"command empty variable name", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"":"x"}}`, "input.env"},
		{"command = in a variable name", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"PATH=/tmp/evil:":"x"}}`, "input.env"},
		{"command = alone as a name", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"=":""}}`, "input.env"},
		{"command = in a value", func() any { return &CommandInput{} }, `{"argv":["ls"],"env":{"A":"b=c"}}`, ""},
		{"read", func() any { return &ReadInput{} }, `{"path":"a","offset":3,"limit":4}`, ""},
		{"read no path", func() any { return &ReadInput{} }, `{"offset":3}`, "input.path"},
		{"read negative offset", func() any { return &ReadInput{} }, `{"path":"a","offset":-1}`, "input.offset"},
		{"read negative limit", func() any { return &ReadInput{} }, `{"path":"a","limit":-1}`, "input.limit"},
		{"read fractional limit", func() any { return &ReadInput{} }, `{"path":"a","limit":1.5}`, "input.limit"},
		{"write", func() any { return &WriteInput{} }, `{"path":"a","content":"x","encoding":"base64","append":true}`, ""},
		{"write empty content", func() any { return &WriteInput{} }, `{"path":"a"}`, ""},
		{"write bad encoding", func() any { return &WriteInput{} }, `{"path":"a","encoding":"latin1"}`, "input.encoding"},
		{"list empty", func() any { return &ListInput{} }, ``, ""},
		{"list null", func() any { return &ListInput{} }, `null`, ""},
		{"list", func() any { return &ListInput{} }, `{"path":"d","recursive":true}`, ""},
		{"list not an object", func() any { return &ListInput{} }, `[]`, "input"},
		{"list malformed", func() any { return &ListInput{} }, `{"path":`, "input"},
		{"list trailing data", func() any { return &ListInput{} }, `{} {}`, "-"},
		{"edit", func() any { return &EditInput{} }, `{"path":"a","old":"x","new":""}`, ""},
		{"edit empty old", func() any { return &EditInput{} }, `{"path":"a","old":"","new":"y"}`, "input.old"},
		{"edit no old", func() any { return &EditInput{} }, `{"path":"a","new":"y"}`, "input.old"},
		{"descriptor as input", func() any { return &Descriptor{} }, `{"tool":"read"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(json.RawMessage(tc.raw), tc.input())
			switch tc.field {
			case "":
				if err != nil {
					t.Fatalf("Decode(%s): %v", tc.raw, err)
				}
			case "-":
				e := failure(t, err, envapi.CodeInvalidInput)
				if !strings.HasPrefix(e.Message, "input") {
					t.Errorf("message %q does not start with input", e.Message)
				}
			default:
				e := failure(t, err, envapi.CodeInvalidInput)
				if got := details(t, e)["field"]; got != tc.field {
					t.Errorf("details.field = %v, want %s (message %q)", got, tc.field, e.Message)
				}
				if !strings.HasPrefix(e.Message, tc.field+":") {
					t.Errorf("message %q does not name %s", e.Message, tc.field)
				}
			}
		})
	}
}

func TestCommandArgs(t *testing.T) {
	if got := (CommandInput{Argv: []string{"ls", "-l"}}).Args(); fmt.Sprint(got) != "[ls -l]" {
		t.Errorf("argv: %q", got)
	}
	if got := (CommandInput{Shell: "echo $X"}).Args(); fmt.Sprint(got) != "[/bin/sh -c echo $X]" {
		t.Errorf("shell: %q", got)
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in, want, code string
	}{
		{"", ".", ""},
		{".", ".", ""},
		{"./", ".", ""},
		{"a", "a", ""},
		{"a/b/../c/", "a/c", ""},
		{"a/..", ".", ""},
		{"./a//b", "a/b", ""},
		{"..a", "..a", ""},
		{"a/..b", "a/..b", ""},
		{`..\x`, `..\x`, ""},
		{"..", "", envapi.CodePathEscape},
		{"../x", "", envapi.CodePathEscape},
		{"a/../../x", "", envapi.CodePathEscape},
		{"/etc/passwd", "", envapi.CodePathEscape},
		{"/", "", envapi.CodePathEscape},
		{"a\x00b", "", envapi.CodeInvalidInput},
	} {
		got, err := Clean(tc.in)
		if tc.code == "" {
			if err != nil || got != tc.want {
				t.Errorf("Clean(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		e := failure(t, err, tc.code)
		if tc.code == envapi.CodePathEscape && details(t, e)["path"] != tc.in {
			t.Errorf("Clean(%q): details %s", tc.in, e.Details)
		}
	}
}

func TestEditApply(t *testing.T) {
	for _, tc := range []struct {
		data, old, new, want string
		matches              int // of a failure; -1 for success
	}{
		{"hello world", "world", "there", "hello there", -1},
		{"aXa", "X", "", "aa", -1},
		{"abc", "abc", "xyz", "xyz", -1},
		{"ab", "b", "bb", "abb", -1},
		{"aaa", "aa", "b", "ba", -1}, // occurrences do not overlap
		{"aaaa", "aa", "b", "", 2},
		{"abab", "ab", "x", "", 2},
		{"abc", "d", "x", "", 0},
		{"", "a", "x", "", 0},
		{"\xff\xfe", "\xfe", "ok", "\xffok", -1},
	} {
		in := EditInput{Path: "f", Old: tc.old, New: tc.new}
		got, err := in.Apply([]byte(tc.data))
		if tc.matches < 0 {
			if err != nil || string(got) != tc.want {
				t.Errorf("Apply(%q, %q→%q) = %q, %v; want %q", tc.data, tc.old, tc.new, got, err, tc.want)
			}
			continue
		}
		e := failure(t, err, envapi.CodeInvalidInput)
		if d := details(t, e); d["matches"] != float64(tc.matches) {
			t.Errorf("Apply(%q, %q): details %s, want %d matches", tc.data, tc.old, e.Details, tc.matches)
		}
		if !strings.Contains(e.Message, "input.old") || !strings.Contains(e.Message, " f") {
			t.Errorf("message %q names neither input.old nor the path", e.Message)
		}
	}
	// Apply leaves its argument alone.
	data := []byte("one two")
	if _, err := (EditInput{Path: "f", Old: "one", New: "1"}).Apply(data); err != nil || string(data) != "one two" {
		t.Errorf("data changed to %q (%v)", data, err)
	}
	failure(t, func() error { _, err := (EditInput{Path: "f"}).Apply([]byte("x")); return err }(), envapi.CodeInvalidInput)
}

func TestWriteData(t *testing.T) {
	for _, tc := range []struct {
		in   WriteInput
		want string
		ok   bool
	}{
		{WriteInput{Content: "héllo"}, "héllo", true},
		{WriteInput{Content: "aGk=", Encoding: EncodingUTF8}, "aGk=", true},
		{WriteInput{Content: "aGk=", Encoding: EncodingBase64}, "hi", true},
		{WriteInput{Content: "", Encoding: EncodingBase64}, "", true},
		{WriteInput{Content: "not base64!", Encoding: EncodingBase64}, "", false},
	} {
		got, err := tc.in.Data()
		if !tc.ok {
			e := failure(t, err, envapi.CodeInvalidInput)
			if !strings.HasPrefix(e.Message, "input.content:") {
				t.Errorf("message %q", e.Message)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestReadLimitedAndOutput(t *testing.T) {
	for _, tc := range []struct{ limit, cap, want int64 }{
		{0, 100, 100}, {10, 100, 10}, {100, 100, 100}, {1000, 100, 100}, {5, 0, 0},
	} {
		if got := (ReadInput{Limit: tc.limit}).Limited(tc.cap); got != tc.want {
			t.Errorf("Limited(limit %d, cap %d) = %d, want %d", tc.limit, tc.cap, got, tc.want)
		}
	}
	for _, tc := range []struct {
		data, content, encoding string
	}{
		{"", "", EncodingUTF8},
		{"hello ✓", "hello ✓", EncodingUTF8},
		{"\xff\x00\xfe", "/wD+", EncodingBase64},
		{"ab\xe2\x9c", "YWLinA==", EncodingBase64}, // a character cut short
	} {
		out := NewReadOutput([]byte(tc.data), 42, true)
		if out.Content != tc.content || out.Encoding != tc.encoding || out.Size != 42 || !out.Truncated {
			t.Errorf("NewReadOutput(%q) = %+v", tc.data, out)
		}
	}
}

// TestWireFormat pins the JSON of the outputs.
func TestWireFormat(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{CommandOutput{ExitCode: 1, Stdout: "o", Stderr: "e"}, `{"exit_code":1,"stdout":"o","stderr":"e","truncated":false}`},
		{CommandOutput{ExitCode: -1, Signal: "killed", Truncated: true}, `{"exit_code":-1,"signal":"killed","stdout":"","stderr":"","truncated":true}`},
		{ReadOutput{Content: "x", Encoding: "utf8", Size: 1}, `{"content":"x","encoding":"utf8","size":1,"truncated":false}`},
		{WriteOutput{Bytes: 3}, `{"bytes":3}`},
		{ListOutput{Entries: []Entry{{Path: "a", Type: TypeFile, Size: 2}}}, `{"entries":[{"path":"a","type":"file","size":2}],"truncated":false}`},
		{EditOutput{Replacements: 1}, `{"replacements":1}`},
		{CommandInput{Argv: []string{"ls"}}, `{"argv":["ls"]}`},
		{ListInput{}, `{}`},
	} {
		raw, err := json.Marshal(tc.v)
		if err != nil || string(raw) != tc.want {
			t.Errorf("%T: %s, %v; want %s", tc.v, raw, err, tc.want)
		}
	}
}

func TestEntryType(t *testing.T) {
	for _, tc := range []struct {
		m    fs.FileMode
		want string
	}{
		{0o644, TypeFile}, {fs.ModeDir | 0o755, TypeDir}, {fs.ModeSymlink | 0o777, TypeSymlink},
		{fs.ModeNamedPipe, TypeOther}, {fs.ModeSocket, TypeOther}, {fs.ModeDevice, TypeOther},
	} {
		if got := EntryType(tc.m); got != tc.want {
			t.Errorf("EntryType(%v) = %s, want %s", tc.m, got, tc.want)
		}
	}
}

func TestBudget(t *testing.T) {
	type write struct {
		stdout bool
		data   string
	}
	for _, tc := range []struct {
		name           string
		limit          int64
		shared         bool
		writes         []write
		stdout, stderr string
		truncated      bool // of stdout's budget
	}{
		{"fits", 10, true, []write{{true, "abc"}, {false, "de"}}, "abc", "de", false},
		{"exactly", 5, true, []write{{true, "abc"}, {false, "de"}}, "abc", "de", false},
		{"shared cut", 4, true, []write{{true, "abc"}, {false, "de"}, {true, "f"}}, "abc", "d", true},
		{"separate cut", 2, false, []write{{true, "abc"}, {false, "de"}}, "ab", "de", true},
		{"separate other stream cut", 2, false, []write{{true, "a"}, {false, "def"}}, "a", "de", false},
		{"zero", 0, true, []write{{true, "a"}}, "", "", true},
		{"empty writes", 0, true, []write{{true, ""}, {false, ""}}, "", "", false},
		{"negative", -1, true, []write{{true, "a"}}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var forwarded []string // "o:" or "e:" and the piece
			fwd := func(name string) func([]byte) {
				return func(p []byte) { forwarded = append(forwarded, name+":"+string(p)) }
			}
			b := NewBudget(tc.limit)
			other := b
			if !tc.shared {
				other = NewBudget(tc.limit)
			}
			stdout, stderr := b.Head(fwd("o")), other.Head(fwd("e"))
			for _, w := range tc.writes {
				h := stderr
				if w.stdout {
					h = stdout
				}
				n, err := h.Write([]byte(w.data))
				if n != len(w.data) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w.data, n, err)
				}
			}
			if got := string(stdout.Bytes()); got != tc.stdout {
				t.Errorf("stdout %q, want %q", got, tc.stdout)
			}
			if got := string(stderr.Bytes()); got != tc.stderr {
				t.Errorf("stderr %q, want %q", got, tc.stderr)
			}
			if stdout.Truncated() != tc.truncated || b.Truncated() != tc.truncated {
				t.Errorf("truncated %v, want %v", stdout.Truncated(), tc.truncated)
			}
			// What was forwarded is exactly what was kept, in order.
			var fo, fe string
			for _, f := range forwarded {
				if s, ok := strings.CutPrefix(f, "o:"); ok {
					fo += s
				} else {
					fe += strings.TrimPrefix(f, "e:")
				}
				if f == "o:" || f == "e:" {
					t.Errorf("an empty piece was forwarded")
				}
			}
			if fo != tc.stdout || fe != tc.stderr {
				t.Errorf("forwarded %q", forwarded)
			}
		})
	}
}

func TestBudgetConcurrent(t *testing.T) {
	const limit = 1000
	b := NewBudget(limit)
	var mu sync.Mutex
	forwarded := 0
	heads := []*Head{b.Head(nil), b.Head(func(p []byte) { mu.Lock(); forwarded += len(p); mu.Unlock() })}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := heads[i%2].Write(bytes.Repeat([]byte{'x'}, 7)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	kept := len(heads[0].Bytes()) + len(heads[1].Bytes())
	if kept != limit || !b.Truncated() || forwarded != len(heads[1].Bytes()) {
		t.Errorf("kept %d, forwarded %d of %d, truncated %v", kept, forwarded, len(heads[1].Bytes()), b.Truncated())
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain ✓", "plain ✓"},
		{"ab\xe2\x9c", "ab\uFFFD"},
		{"\xff\xfex", "\uFFFDx"},
	} {
		if got := Text([]byte(tc.in)); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A path as long as an input may carry is not copied whole into the
// details of its failure: details.path is its head, cut between
// characters to the bound of a message.
func TestLongPathDetailsAreBounded(t *testing.T) {
	long := strings.Repeat("é", 1<<20) // 2 MiB
	for _, tc := range []struct {
		name, path, code string
		run              func(p string) error
	}{
		{"read of a directory", long + "/", envapi.CodeInvalidInput, func(p string) error {
			raw, _ := json.Marshal(map[string]string{"path": p})
			return Decode(raw, &ReadInput{})
		}},
		{"edit of a directory", long + "/..", envapi.CodeInvalidInput, func(p string) error {
			raw, _ := json.Marshal(map[string]string{"path": p, "old": "a", "new": "b"})
			return Decode(raw, &EditInput{})
		}},
		{"absolute path", "/" + long, envapi.CodePathEscape, func(p string) error { _, err := Clean(p); return err }},
		{"climbing path", "../" + long, envapi.CodePathEscape, func(p string) error { _, err := Clean(p); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := failure(t, tc.run(tc.path), tc.code)
			got, _ := details(t, e)["path"].(string)
			if got == "" || len(got) > envapi.MaxMessageLen || len(got) < envapi.MaxMessageLen-utf8.UTFMax {
				t.Fatalf("details.path holds %d bytes, want the head of the %d-byte path within %d", len(got), len(tc.path), envapi.MaxMessageLen)
			}
			if !utf8.ValidString(got) || !strings.HasPrefix(tc.path, got) {
				t.Errorf("details.path is not the path's head cut between characters: %q…", got[len(got)-8:])
			}
			if wire := envapi.Failure(e.Code, e.Message, false, e.Details); len(e.Details)+len(wire.Message) > 4*envapi.MaxMessageLen {
				t.Errorf("the failure carries %d bytes of details and %d of message", len(e.Details), len(wire.Message))
			}
		})
	}
	// A path within the bound is kept whole.
	e := failure(t, Decode(json.RawMessage(`{"path":"dir/"}`), &WriteInput{}), envapi.CodeInvalidInput)
	if got := details(t, e)["path"]; got != "dir/" {
		t.Errorf("details.path = %v, want dir/", got)
	}
}
