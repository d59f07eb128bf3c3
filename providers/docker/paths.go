package docker

import (
	"strings"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// The kernel's bounds on a name (NAME_MAX, which every Linux file system
// keeps) and on a path given to a system call (PATH_MAX, its NUL included).
const (
	maxNameBytes = 255
	maxPathBytes = 4095
)

// containerPath maps a path relative to the workspace to its absolute path
// in the container. Paths are checked lexically by toolset.Clean before
// anything runs, and so are the kernel's bounds: a name longer than 255
// bytes, or an absolute path longer than 4095, is invalid_input with
// details {"path"} (the file tools would otherwise fail part-way, after
// mkdir -p created what it could); symbolic links are checked inside the
// container by the file tools (realpath must stay under /workspace).
func containerPath(rel string) (string, error) {
	clean, err := toolset.Clean(rel)
	if err != nil {
		return "", err
	}
	if clean == "." {
		return workspaceDir, nil
	}
	abs := workspaceDir + "/" + clean
	if len(abs) > maxPathBytes {
		return "", envsdk.Failf(envapi.CodeInvalidInput, "%s: the path is longer than the %d bytes the kernel takes", rel, maxPathBytes).
			WithDetails(map[string]string{"path": rel})
	}
	for name := range strings.SplitSeq(clean, "/") {
		if len(name) > maxNameBytes {
			return "", envsdk.Failf(envapi.CodeInvalidInput, "%s: a name in the path is longer than the %d bytes a file system allows", rel, maxNameBytes).
				WithDetails(map[string]string{"path": rel})
		}
	}
	return abs, nil
}

// relPath is the inverse of containerPath for paths under the workspace.
func relPath(abs string) string {
	if abs == workspaceDir {
		return "."
	}
	return strings.TrimPrefix(abs, workspaceDir+"/")
}
