package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// inputFor returns a new input of the named tool.
func inputFor(tool string) any {
	switch tool {
	case ToolCommand:
		return &CommandInput{}
	case ToolRead:
		return &ReadInput{}
	case ToolWrite:
		return &WriteInput{}
	case ToolList:
		return &ListInput{}
	case ToolEdit:
		return &EditInput{}
	}
	return &Descriptor{}
}

// FuzzDecode checks that any input either decodes into a value that
// satisfies its tool's rules and survives a JSON round trip, or fails with
// invalid_input; it never panics.
func FuzzDecode(f *testing.F) {
	for _, seed := range []struct{ tool, raw string }{
		{ToolCommand, `{"argv":["ls","-l"],"cwd":"sub","env":{"A":"b"},"stdin":"x","timeout_ms":10}`},
		{ToolCommand, `{"shell":"echo hi"}`},
		{ToolCommand, `{"argv":["ls"],"shell":"ls"}`},
		{ToolRead, `{"path":"a/b","offset":1,"limit":2}`},
		{ToolWrite, `{"path":"f","content":"aGk=","encoding":"base64","append":true}`},
		{ToolList, `null`},
		{ToolEdit, `{"path":"f","old":"a","new":"b"}`},
		{"", `{"tool":"read"}`},
	} {
		f.Add(seed.tool, []byte(seed.raw))
	}
	f.Fuzz(func(t *testing.T, tool string, raw []byte) {
		v := inputFor(tool)
		err := Decode(raw, v)
		if err != nil {
			var e *envsdk.Error
			if !errors.As(err, &e) || e.Code != envapi.CodeInvalidInput {
				t.Fatalf("Decode(%q) failed with %v (%T), want invalid_input", raw, err, err)
			}
			if !strings.HasPrefix(e.Message, "input") {
				t.Fatalf("message %q does not start with input", e.Message)
			}
			if len(e.Details) > 0 {
				var d struct{ Field string }
				if json.Unmarshal(e.Details, &d) != nil || !strings.HasPrefix(d.Field, "input") {
					t.Fatalf("details %s", e.Details)
				}
			}
			return
		}
		checkRules(t, v)
		// Round trip: what decoded encodes to an input that decodes to the
		// same value.
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal %+v: %v", v, err)
		}
		w := inputFor(tool)
		if err := Decode(enc, w); err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if again, _ := json.Marshal(w); !bytes.Equal(again, enc) {
			t.Fatalf("round trip %s → %s", enc, again)
		}
	})
}

func checkRules(t *testing.T, v any) {
	t.Helper()
	switch in := v.(type) {
	case *CommandInput:
		if (len(in.Argv) == 0) == (in.Shell == "") || in.TimeoutMs < 0 || len(in.Args()) == 0 {
			t.Fatalf("accepted %+v", in)
		}
	case *ReadInput:
		if in.Path == "" || in.Offset < 0 || in.Limit < 0 || in.Limited(100) > 100 {
			t.Fatalf("accepted %+v", in)
		}
	case *WriteInput:
		if in.Path == "" || (in.Encoding != "" && in.Encoding != EncodingUTF8 && in.Encoding != EncodingBase64) {
			t.Fatalf("accepted %+v", in)
		}
		_, _ = in.Data()
	case *EditInput:
		if in.Path == "" || in.Old == "" {
			t.Fatalf("accepted %+v", in)
		}
		// Old occurs once in itself, twice in itself twice.
		if out, err := in.Apply([]byte(in.Old)); err != nil || string(out) != in.New {
			t.Fatalf("Apply(%q) = %q, %v; want %q", in.Old, out, err, in.New)
		}
		if _, err := in.Apply([]byte(in.Old + in.Old)); err == nil {
			t.Fatalf("Apply accepted two occurrences of %q", in.Old)
		}
	case *Descriptor:
		if in.Tool == "" {
			t.Fatalf("accepted %+v", in)
		}
	}
	if p, ok := pathOf(v); ok {
		if c, err := Clean(p); err == nil && (strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || path.Clean(c) != c) {
			t.Fatalf("Clean(%q) = %q", p, c)
		}
	}
}

func pathOf(v any) (string, bool) {
	switch in := v.(type) {
	case *ReadInput:
		return in.Path, true
	case *WriteInput:
		return in.Path, true
	case *ListInput:
		return in.Path, true
	case *EditInput:
		return in.Path, true
	case *CommandInput:
		return in.Cwd, true
	}
	return "", false
}
