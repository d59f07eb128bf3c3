package loophost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/brain-in-go/brain/brain/tool"
)

// Guest paths of the filesystem grants.
const (
	WorkspacePath = "/workspace"
	ScratchPath   = "/scratch"
	SecretsPath   = "/secrets"
	// AllowScratch is the FilesystemAllow entry that allows scratch
	// grants.
	AllowScratch = "scratch"
)

// Workspace access modes.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// scratchDirName is the directory under Options.ToolsDir that holds the
// scratch directories of running invocations; Open empties it.
const scratchDirName = "scratch"

// ErrNotAllowed is wrapped when a grant exceeds what the operator allows.
var ErrNotAllowed = errors.New("loophost: grant not allowed")

// ToolImplementation is the implementation of a Tool placed on the
// built-in environment:
//
//	{"type":"brain_component","entrypoint":"run","id":<sha256 hex>,
//	 "grants":{"filesystem":{"workspace":{"path":<host dir>,"access":"read"|"write"},
//	                         "scratch":true},
//	           "secrets":[<name>,...]}}
//
// Every grant is optional and denied unless granted here and allowed by the
// operator (Options.FilesystemAllow, Options.SecretAllow). A workspace is
// preopened at /workspace (read-only for "read"), a scratch directory —
// empty, private to one invocation and removed after it — at /scratch, and
// each secret read-only at /secrets/<name>. There is no network grant:
// WASI preview 1 has no sockets.
type ToolImplementation struct {
	Type       string  `json:"type"`
	Entrypoint string  `json:"entrypoint"`
	ID         string  `json:"id"`
	Grants     *Grants `json:"grants,omitempty"`
}

// Grants are the capabilities of a Tool.
type Grants struct {
	Filesystem *FilesystemGrants `json:"filesystem,omitempty"`
	Secrets    []string          `json:"secrets,omitempty"`
}

// FilesystemGrants are the directories of a Tool.
type FilesystemGrants struct {
	Workspace *WorkspaceGrant `json:"workspace,omitempty"`
	Scratch   bool            `json:"scratch,omitempty"`
}

// WorkspaceGrant is a host directory and the access the Tool has to it.
type WorkspaceGrant struct {
	Path   string `json:"path"`
	Access string `json:"access"`
}

// IsComponent reports whether an implementation descriptor names an
// admitted Wasm module ({"type":"brain_component",...}).
func IsComponent(impl json.RawMessage) bool {
	var d struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(impl, &d) == nil && d.Type == ImplementationComponent
}

// ParseToolImplementation decodes and checks a Tool implementation: its
// shape, that it names an admitted Tool module, and that its grants are
// allowed. It is what a session create checks for a Wasm placement.
// A Tool admitted on another node of the cluster is fetched first
// (Options.SharedTools), within lookupBound. A module that cannot be
// looked up for a condition of the server, not of the implementation,
// fails as Func does: a retryable overloaded session.TurnError wrapping
// ErrClosed, ErrBusy, ErrStorage or the store's failure.
func (h *Host) ParseToolImplementation(impl json.RawMessage) (ToolImplementation, error) {
	ctx, cancel := withLookupBound(context.Background())
	defer cancel()
	d, err := h.parseToolImplementation(ctx, impl)
	return d, lookupFailure(ctx, kindTool, d.ID, err)
}

func (h *Host) parseToolImplementation(ctx context.Context, impl json.RawMessage) (ToolImplementation, error) {
	var d ToolImplementation
	dec := json.NewDecoder(strings.NewReader(string(impl)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("%w: tool implementation: %v", ErrUnsupported, err)
	}
	if d.Type != ImplementationComponent {
		return d, fmt.Errorf("%w: tool implementation type %q (want %q)", ErrUnsupported, d.Type, ImplementationComponent)
	}
	if d.Entrypoint != tool.ExportRun {
		return d, fmt.Errorf("%w: entrypoint %q (want %q)", ErrUnsupported, d.Entrypoint, tool.ExportRun)
	}
	if _, err := h.toolModule(ctx, d.ID); err != nil {
		return d, err
	}
	if err := h.checkGrants(d.Grants); err != nil {
		return d, err
	}
	return d, nil
}

// checkGrants checks grants against what the operator allows.
func (h *Host) checkGrants(g *Grants) error {
	if g == nil {
		return nil
	}
	if fsg := g.Filesystem; fsg != nil {
		if w := fsg.Workspace; w != nil {
			if w.Access != AccessRead && w.Access != AccessWrite {
				return fmt.Errorf("%w: workspace access %q (want %q or %q)", ErrNotAllowed, w.Access, AccessRead, AccessWrite)
			}
			if _, err := h.allowedDir(w.Path); err != nil {
				return err
			}
		}
		if fsg.Scratch && !slices.Contains(h.opts.FilesystemAllow, AllowScratch) {
			return fmt.Errorf("%w: scratch directories are not allowed (BRAIN_ENV_FILESYSTEM_ALLOW has no %q)", ErrNotAllowed, AllowScratch)
		}
	}
	for _, name := range g.Secrets {
		if _, ok := h.opts.SecretAllow[name]; !ok {
			return fmt.Errorf("%w: secret %q is not allowed (BRAIN_ENV_SECRET_ALLOW)", ErrNotAllowed, name)
		}
	}
	return nil
}

// allowedDir resolves a workspace path and checks that it is a directory
// inside an allowed root (symbolic links resolved on both sides).
func (h *Host) allowedDir(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: workspace path %q is not absolute", ErrNotAllowed, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: workspace path %q: %v", ErrNotAllowed, p, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: workspace path %q is not a directory", ErrNotAllowed, p)
	}
	for _, root := range h.opts.FilesystemAllow {
		if root == AllowScratch {
			continue
		}
		if r, err := filepath.Rel(root, real); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			return real, nil
		}
	}
	return "", fmt.Errorf("%w: workspace path %q is outside BRAIN_ENV_FILESYSTEM_ALLOW", ErrNotAllowed, p)
}

// CheckGrants checks the allow lists of Options.FilesystemAllow and
// Options.SecretAllow as Open does, without opening anything: a server
// refuses them before it touches its data directory.
func CheckGrants(fsAllow []string, secrets map[string]string) error {
	_, err := checkAllow(fsAllow, secrets)
	return err
}

// checkAllow normalises the allow lists: absolute directories with
// symbolic links resolved, and the scratch entry.
func checkAllow(fsAllow []string, secrets map[string]string) ([]string, error) {
	var out []string
	for _, e := range fsAllow {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case e == AllowScratch:
			out = append(out, e)
			continue
		case !filepath.IsAbs(e):
			return nil, fmt.Errorf("loophost: filesystem allow entry %q is neither an absolute directory nor %q", e, AllowScratch)
		}
		real, err := filepath.EvalSymlinks(e)
		if err != nil {
			return nil, fmt.Errorf("loophost: filesystem allow entry %q: %w", e, err)
		}
		out = append(out, real)
	}
	for name, dir := range secrets {
		if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			return nil, fmt.Errorf("loophost: secret name %q is not a file name", name)
		}
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("loophost: secret %q: %q is not an absolute directory", name, dir)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("loophost: secret %q: %w", name, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("loophost: secret %q: %q is not a directory", name, dir)
		}
	}
	return out, nil
}

// mounts are the directories of one invocation, released after it.
type mounts struct {
	fs      []*rootFS
	scratch string
	budget  *budget    // of the scratch directory
	files   *openFiles // open in any of them
	hide    hidden     // the contents of the granted secret files
}

func (m *mounts) release() {
	for _, f := range m.fs {
		f.close()
	}
	if m.scratch != "" {
		_ = os.RemoveAll(m.scratch)
	}
}

// prepare opens the granted directories of one invocation as WASI
// preopens; grants are checked again, since the operator's directories may
// have changed since the session was created.
func (h *Host) prepare(g *Grants) (wazero.FSConfig, *mounts, error) {
	m := &mounts{files: &openFiles{}}
	cfg := wazero.NewFSConfig()
	if g == nil {
		return cfg, m, nil
	}
	if err := h.checkGrants(g); err != nil {
		return nil, m, err
	}
	mount := func(dir, guest string, readOnly bool, b *budget) error {
		r, err := newRootFS(dir, readOnly)
		if err != nil {
			return err
		}
		r.budget, r.files = b, m.files
		m.fs = append(m.fs, r)
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(r, guest)
		return nil
	}
	if fsg := g.Filesystem; fsg != nil {
		if w := fsg.Workspace; w != nil {
			dir, err := h.allowedDir(w.Path)
			if err != nil {
				return nil, m, err
			}
			if err := mount(dir, WorkspacePath, w.Access != AccessWrite, nil); err != nil {
				m.release()
				return nil, m, err
			}
		}
		if fsg.Scratch {
			base := filepath.Join(h.opts.ToolsDir, scratchDirName)
			if err := os.MkdirAll(base, 0o700); err != nil {
				m.release()
				return nil, m, err
			}
			dir, err := os.MkdirTemp(base, "run-")
			if err != nil {
				m.release()
				return nil, m, err
			}
			m.scratch = dir
			m.budget = newBudget(h.opts.MaxScratchBytes)
			if err := mount(dir, ScratchPath, false, m.budget); err != nil {
				m.release()
				return nil, m, err
			}
		}
	}
	for _, name := range g.Secrets {
		if err := mount(h.opts.SecretAllow[name], SecretsPath+"/"+name, true, nil); err != nil {
			m.release()
			return nil, m, err
		}
	}
	m.hide = h.grantedSecrets(g)
	return cfg, m, nil
}
