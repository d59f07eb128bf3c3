package docker

import (
	"path"
	"strings"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// containerPath maps a path relative to the workspace to its absolute path
// in the container. Absolute paths and paths that climb out with ".." are
// refused with path_escape before anything runs; symbolic links are checked
// inside the container by the file tools (realpath must stay under
// /workspace).
func containerPath(rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", envsdk.Fail(envapi.CodeInvalidInput, "path contains a NUL byte")
	}
	if rel == "" || rel == "." {
		return workspaceDir, nil
	}
	if strings.HasPrefix(rel, "/") {
		return "", envsdk.Failf(envapi.CodePathEscape, "path %q is absolute; paths are relative to the workspace", rel)
	}
	clean := path.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", envsdk.Failf(envapi.CodePathEscape, "path %q leaves the workspace", rel)
	}
	if clean == "." {
		return workspaceDir, nil
	}
	return workspaceDir + "/" + clean, nil
}

// relPath is the inverse of containerPath for paths under the workspace.
func relPath(abs string) string {
	if abs == workspaceDir {
		return "."
	}
	return strings.TrimPrefix(abs, workspaceDir+"/")
}
