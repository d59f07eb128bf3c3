package toolset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Encodings of file content.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// CommandInput is the input of the command tool: Argv, or a Shell line run
// by /bin/sh -c (exactly one of them), in the directory Cwd relative to the
// workspace, with the variables Env added to the provider's environment
// and Stdin on standard input.
type CommandInput struct {
	Argv  []string          `json:"argv,omitempty" validate:"omitempty,max=4096"`
	Shell string            `json:"shell,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	Env   map[string]string `json:"env,omitempty" validate:"omitempty,max=256"`
	Stdin *string           `json:"stdin,omitempty"`
	// TimeoutMs bounds this command below the execute's deadline.
	TimeoutMs int64 `json:"timeout_ms,omitempty" validate:"omitempty,min=1"`
}

// Validate checks that exactly one of Argv and Shell is given, that no
// argument, shell line, variable name or value holds a NUL byte, which no
// program can be given, and that every variable has a name without "=",
// which would end the name in the program's environment and set another
// variable than the one given (invalid_input with details {"field"}).
func (in CommandInput) Validate() error {
	switch {
	case len(in.Argv) > 0 && in.Shell != "":
		return invalid("input: give argv or shell, not both")
	case len(in.Argv) == 0 && in.Shell == "":
		return invalid("input: argv or shell is required")
	}
	for i, a := range in.Argv {
		if hasNUL(a) {
			return invalidField("input.argv", fmt.Sprintf("input.argv: argument %d contains a NUL byte", i))
		}
	}
	if hasNUL(in.Shell) {
		return invalidField("input.shell", "input.shell: the line contains a NUL byte")
	}
	names := make([]string, 0, len(in.Env))
	for name := range in.Env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case name == "":
			return invalidField("input.env", "input.env: a variable has an empty name")
		case hasNUL(name):
			return invalidField("input.env", fmt.Sprintf("input.env: the name %q contains a NUL byte", name))
		case strings.Contains(name, "="):
			return invalidField("input.env", fmt.Sprintf("input.env: the name %q contains \"=\"", name))
		case hasNUL(in.Env[name]):
			return invalidField("input.env", fmt.Sprintf("input.env: the value of %s contains a NUL byte", name))
		}
	}
	return nil
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// Args returns the program and arguments to run: Argv, or /bin/sh -c Shell.
func (in CommandInput) Args() []string {
	if in.Shell != "" {
		return []string{"/bin/sh", "-c", in.Shell}
	}
	return in.Argv
}

// CommandOutput is the output of the command tool. Signal names the signal
// that ended the program, when a provider knows it; Truncated is set when
// output beyond the provider's cap was dropped.
type CommandOutput struct {
	ExitCode  int    `json:"exit_code"`
	Signal    string `json:"signal,omitempty"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

// ReadInput is the input of the read tool: up to Limit bytes (0: the
// provider's cap) from Offset.
type ReadInput struct {
	Path   string `json:"path" validate:"required"`
	Offset int64  `json:"offset,omitempty" validate:"min=0"`
	Limit  int64  `json:"limit,omitempty" validate:"min=0"`
}

// Validate refuses a path whose form names a directory (see fileForm).
func (in ReadInput) Validate() error { return fileForm(in.Path) }

// Limited returns how many bytes to read under the provider's cap: Limit
// when it is positive and below the cap, else the cap.
func (in ReadInput) Limited(cap int64) int64 {
	if in.Limit > 0 && in.Limit < cap {
		return in.Limit
	}
	return cap
}

// ReadOutput is the output of the read tool. Content is text when it is
// valid UTF-8, else base64 (Encoding says which); Size is the file's size.
type ReadOutput struct {
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated"`
}

// NewReadOutput encodes data read from a file of size bytes.
func NewReadOutput(data []byte, size int64, truncated bool) ReadOutput {
	out := ReadOutput{Size: size, Truncated: truncated}
	out.Content, out.Encoding = encode(data)
	return out
}

// WriteInput is the input of the write tool: Content, in Encoding ("utf8"
// by default, or "base64"), replaces the file or, with Append, is added to
// its end. Missing parent directories are created.
type WriteInput struct {
	Path     string `json:"path" validate:"required"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty" validate:"omitempty,oneof=utf8 base64"`
	Append   bool   `json:"append,omitempty"`
}

// Validate refuses a path whose form names a directory (see fileForm).
func (in WriteInput) Validate() error { return fileForm(in.Path) }

// Data returns the bytes to write, decoding base64 content.
func (in WriteInput) Data() ([]byte, error) {
	if in.Encoding != EncodingBase64 {
		return []byte(in.Content), nil
	}
	data, err := base64.StdEncoding.DecodeString(in.Content)
	if err != nil {
		return nil, invalid(fmt.Sprintf("input.content: not base64: %v", err))
	}
	return data, nil
}

// WriteOutput is the output of the write tool.
type WriteOutput struct {
	Bytes int `json:"bytes"`
}

// ListInput is the input of the list tool: the entries of the directory
// Path ("" for the workspace), and of its subdirectories with Recursive.
type ListInput struct {
	Path      string `json:"path,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
}

// ListOutput is the output of the list tool; Truncated is set when the
// provider's cap on entries, or on the bytes of its answer, cut the list
// (the entries kept are whole, in the order listed).
type ListOutput struct {
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

// EditInput is the input of the edit tool: Old, which must occur exactly
// once in the file, is replaced by New.
type EditInput struct {
	Path string `json:"path" validate:"required"`
	Old  string `json:"old" validate:"min=1"`
	New  string `json:"new"`
}

// Validate refuses a path whose form names a directory (see fileForm).
func (in EditInput) Validate() error { return fileForm(in.Path) }

// Apply replaces the one occurrence of Old in data by New. No occurrence,
// or more than one, is invalid_input with details {"matches": N}.
func (in EditInput) Apply(data []byte) ([]byte, error) {
	old := []byte(in.Old)
	if len(old) == 0 {
		return nil, invalid("input.old: must not be empty")
	}
	switch n := bytes.Count(data, old); n {
	case 1:
	case 0:
		return nil, envsdk.Failf(envapi.CodeInvalidInput, "input.old does not occur in %s", in.Path).
			WithDetails(map[string]int{"matches": 0})
	default:
		return nil, envsdk.Failf(envapi.CodeInvalidInput, "input.old occurs %d times in %s; it must occur exactly once", n, in.Path).
			WithDetails(map[string]int{"matches": n})
	}
	return bytes.Replace(data, old, []byte(in.New), 1), nil
}

// EditOutput is the output of the edit tool.
type EditOutput struct {
	Replacements int `json:"replacements"`
}

// Decode decodes a tool input strictly into v (a pointer to one of the
// inputs of this package, or to a provider's own) and then runs v's
// Validate method if it has one. An absent or null input is {}. Failures
// are invalid_input; one about a field names it, as "input.NAME", in the
// message and in details {"field"}.
func Decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := envapi.Strict(raw, v); err != nil {
		var fe *envapi.FieldError
		if errors.As(err, &fe) {
			field := "input"
			if fe.Field != "" {
				field += "." + fe.Field
			}
			return envsdk.Failf(envapi.CodeInvalidInput, "%s: %s", field, fe.Reason).WithDetails(map[string]string{"field": field})
		}
		return envsdk.Failf(envapi.CodeInvalidInput, "input: %v", err)
	}
	if c, ok := v.(interface{ Validate() error }); ok {
		return c.Validate()
	}
	return nil
}

// fileForm refuses, for a tool that works on a file, a path whose form
// names a directory: one ending in "/", "/." or "/..". Clean would drop
// the ending, and "a/" would name the file a. The failure is invalid_input
// with details {"field": "input.path", "path"}.
func fileForm(p string) error {
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") {
		return envsdk.Failf(envapi.CodeInvalidInput, "input.path: %q names a directory; this tool works on a file", p).
			WithDetails(map[string]string{"field": "input.path", "path": detailPath(p)})
	}
	return nil
}

func invalid(msg string) *envsdk.Error { return envsdk.Fail(envapi.CodeInvalidInput, msg) }

// invalidField is invalid_input about field, named in details {"field"}.
func invalidField(field, msg string) *envsdk.Error {
	return invalid(msg).WithDetails(map[string]string{"field": field})
}
