package workspace

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Encodings of file content.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// maxListEntries bounds a list answer.
const maxListEntries = 10_000

type readInput struct {
	Path   string `json:"path" validate:"required"`
	Offset int64  `json:"offset,omitempty" validate:"min=0"`
	Limit  int    `json:"limit,omitempty" validate:"min=0"`
}

// ReadOutput is the output of the read tool. Content is text when it is
// valid UTF-8, else base64 (Encoding says which).
type ReadOutput struct {
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated"`
}

func runRead(k *call) (any, error) {
	var in readInput
	if err := decodeInput(k.x.Input, &in); err != nil {
		return nil, err
	}
	p, err := cleanPath(in.Path)
	if err != nil {
		return nil, err
	}
	r, err := k.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(p)
	if err != nil {
		return nil, fsError(in.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fsError(in.Path, err)
	}
	if fi.IsDir() {
		return nil, invalidInput("%s is a directory; use the list tool", in.Path)
	}
	limit := k.outputLimit()
	if in.Limit > 0 && in.Limit < limit {
		limit = in.Limit
	}
	buf := make([]byte, min(int64(limit), max(fi.Size()-in.Offset, 0)+1))
	n, err := f.ReadAt(buf, in.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fsError(in.Path, err)
	}
	data := buf[:n]
	out := ReadOutput{Size: fi.Size(), Truncated: in.Offset+int64(n) < fi.Size()}
	if len(data) > limit {
		data, out.Truncated = data[:limit], true
	}
	if utf8.Valid(data) {
		out.Content, out.Encoding = string(data), EncodingUTF8
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(data), EncodingBase64
	}
	return out, nil
}

type writeInput struct {
	Path     string `json:"path" validate:"required"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty" validate:"omitempty,oneof=utf8 base64"`
	Append   bool   `json:"append,omitempty"`
}

func decodeContent(content, encoding string) ([]byte, error) {
	if encoding == EncodingBase64 {
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, invalidInput("input.content: not base64: %v", err)
		}
		return data, nil
	}
	return []byte(content), nil
}

func runWrite(k *call) (any, error) {
	var in writeInput
	if err := decodeInput(k.x.Input, &in); err != nil {
		return nil, err
	}
	p, err := cleanPath(in.Path)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, invalidInput("input.path: names the workspace itself")
	}
	data, err := decodeContent(in.Content, in.Encoding)
	if err != nil {
		return nil, err
	}
	r, err := k.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	grow, files := int64(len(data)), 1
	if fi, err := r.Stat(p); err == nil {
		files = 0
		if !in.Append {
			grow -= fi.Size()
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fsError(in.Path, err)
	}
	if dir := filepath.Dir(p); dir != "." {
		if _, err := r.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			files += 1 + countSeparators(dir)
		}
	}
	if err := k.checkLimits(grow, files); err != nil {
		return nil, err
	}
	if err := writeFile(r, p, data, in.Append); err != nil {
		return nil, fsError(in.Path, err)
	}
	return map[string]int{"bytes": len(data)}, nil
}

func countSeparators(p string) int { return bytes.Count([]byte(p), []byte{filepath.Separator}) }

// writeFile writes data to p inside r, creating parent directories.
func writeFile(r *os.Root, p string, data []byte, appendTo bool) error {
	if dir := filepath.Dir(p); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := r.OpenFile(p, flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type listInput struct {
	Path      string `json:"path,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
}

// Entry is one entry of the list tool's output; Path is relative to the
// workspace and Type is file, dir, symlink or other.
type Entry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

func runList(k *call) (any, error) {
	var in listInput
	if err := decodeInput(k.x.Input, &in); err != nil {
		return nil, err
	}
	p, err := cleanPath(in.Path)
	if err != nil {
		return nil, err
	}
	r, err := k.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Stat(p)
	if err != nil {
		return nil, fsError(in.Path, err)
	}
	if !fi.IsDir() {
		return nil, invalidInput("%s is not a directory", in.Path)
	}
	entries := []Entry{}
	truncated := false
	fsys := r.FS()
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == p {
			return nil
		}
		if len(entries) == maxListEntries {
			truncated = true
			return fs.SkipAll
		}
		var size int64
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size = info.Size()
			}
		}
		entries = append(entries, Entry{Path: filepath.ToSlash(path), Type: entryType(d.Type()), Size: size})
		if d.IsDir() && !in.Recursive {
			return fs.SkipDir
		}
		return nil
	}
	if err := fs.WalkDir(fsys, filepath.ToSlash(p), walk); err != nil {
		return nil, fsError(in.Path, err)
	}
	return map[string]any{"entries": entries, "truncated": truncated}, nil
}

type editInput struct {
	Path string `json:"path" validate:"required"`
	Old  string `json:"old" validate:"min=1"`
	New  string `json:"new"`
}

func runEdit(k *call) (any, error) {
	var in editInput
	if err := decodeInput(k.x.Input, &in); err != nil {
		return nil, err
	}
	p, err := cleanPath(in.Path)
	if err != nil {
		return nil, err
	}
	r, err := k.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Stat(p)
	if err != nil {
		return nil, fsError(in.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, invalidInput("%s is not a regular file", in.Path)
	}
	if o := k.b.p.opts.MaxBytes; o >= 0 && fi.Size() > o {
		return nil, envsdk.Failf(CodeLimitExceeded, "%s is larger than the workspace limit", in.Path)
	}
	data, err := r.ReadFile(p)
	if err != nil {
		return nil, fsError(in.Path, err)
	}
	old := []byte(in.Old)
	switch n := bytes.Count(data, old); n {
	case 1:
	case 0:
		return nil, envsdk.Failf(envapi.CodeInvalidInput, "the old text does not occur in %s", in.Path).
			WithDetails(map[string]int{"matches": 0})
	default:
		return nil, envsdk.Failf(envapi.CodeInvalidInput, "the old text occurs %d times in %s; it must be unique", n, in.Path).
			WithDetails(map[string]int{"matches": n})
	}
	edited := bytes.Replace(data, old, []byte(in.New), 1)
	if err := k.checkLimits(int64(len(edited)-len(data)), 0); err != nil {
		return nil, err
	}
	if err := writeFile(r, p, edited, false); err != nil {
		return nil, fsError(in.Path, err)
	}
	return map[string]int{"replacements": 1}, nil
}
