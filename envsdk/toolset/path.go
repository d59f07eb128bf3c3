package toolset

import (
	"io/fs"
	"path"
	"strings"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Clean checks a tool's path lexically and returns it cleaned (path.Clean),
// "." for the workspace itself (also for ""). A NUL byte is invalid_input;
// an absolute path, or one that leaves the workspace through "..", is
// path_escape with details {"path"}. Symbolic links are not looked at.
func Clean(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", invalid("path contains a NUL byte")
	}
	if p == "" {
		return ".", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", envsdk.Failf(envapi.CodePathEscape, "path %q is absolute; give a path relative to the workspace", p).
			WithDetails(map[string]string{"path": detailPath(p)})
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", envsdk.Failf(envapi.CodePathEscape, "path %q leaves the workspace", p).
			WithDetails(map[string]string{"path": detailPath(p)})
	}
	return c, nil
}

// detailPath is p as a failure's details hold it: cut, between characters,
// to envapi.MaxMessageLen bytes (a path no file system takes is longer),
// as the failure's message is, so that a path as long as the input allows
// does not make the answer larger than Brain takes.
func detailPath(p string) string { return envapi.Truncate(p) }

// Types of a list entry.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// Entry is one entry of the list tool's output; Path is relative to the
// workspace, Size is a regular file's size (0 for other types).
type Entry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// EntryType returns the entry type of a file mode.
func EntryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	}
	return TypeOther
}
