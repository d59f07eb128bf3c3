package docker

import (
	"strings"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// containerPath maps a path relative to the workspace to its absolute path
// in the container. Paths are checked lexically by toolset.Clean before
// anything runs; symbolic links are checked inside the container by the
// file tools (realpath must stay under /workspace).
func containerPath(rel string) (string, error) {
	clean, err := toolset.Clean(rel)
	if err != nil {
		return "", err
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
