package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/providers/internal/fit"
)

// The file tools run small POSIX shell scripts as the profile's user (busybox
// is enough). Each resolves symbolic links with realpath and refuses a
// target outside /workspace. Their exit codes:
const (
	exitNotFound = 44 // the path does not exist
	exitEscape   = 45 // the path resolves outside /workspace
	exitKind     = 46 // wrong kind of file (a directory where a file is wanted, ...)
	exitParent   = 47 // a parent of the path is not a directory
	exitLoop     = 48 // the path's symbolic links make a loop
)

// scriptPrelude defines inside(), which sets r to the resolved $1 and
// fails unless it is under the workspace (exitLoop when realpath failed on
// a loop of symbolic links, which every C library's message for ELOOP
// names: the message after "realpath: $1: " is looked at); parent(), which sets a to the deepest parent of $1 that exists
// (or is a link); and missing(), which exits for a path $1 that does not
// exist (a link that leads nowhere is checked as a link first):
// exitParent when the deepest parent that exists is not a directory (f/x
// with f a file), path_escape's exit when it resolves outside the
// workspace, exitNotFound otherwise. Names may end in newlines, which a
// command substitution would strip: realpath's output is kept whole by a
// "." printed after it, and parents are cut with ${p%/*} rather than
// dirname (the paths are absolute and clean).
const scriptPrelude = `inside() { r=$(realpath "$1" 2>/dev/null && echo .) || { e=$(realpath "$1" 2>&1 >/dev/null)
case "${e#*"$1": }" in *[Ss]ymbolic\ link*) exit 48;; esac; exit 44; }
r=${r%??}
case "$r" in /workspace|/workspace/*) ;; *) exit 45;; esac; }
parent() { a=${1%/*}
while [ -n "$a" ] && [ ! -e "$a" ] && [ ! -L "$a" ]; do a=${a%/*}; done
[ -n "$a" ] || a=/; }
missing() { [ -L "$1" ] && inside "$1"
parent "$1"
inside "$a"
[ -d "$r" ] || exit 47
exit 44; }
`

// readScript prints the size of $1 on stderr, then up to $3 bytes from
// offset $2 on stdout, nothing from an offset at or past the end; anything
// but a regular file (a FIFO, a device) is refused before it is opened.
// The size comes from stat and the offset is reached by dd seeking the
// open file (count=0 copies nothing), so that sizes and offsets of 4 GiB
// and more are exact: busybox's wc counts in 32 bits, its tail refuses
// offsets of 2^32 and more, and both read the file up to where they stop.
const readScript = scriptPrelude + `p=$1
[ -e "$p" ] || missing "$p"
inside "$p"
[ -f "$r" ] || exit 46
s=$(stat -c %s "$r") || exit 1
echo $s >&2
[ "$2" -lt "$s" ] || exit 0
{ dd bs=1 skip="$2" count=0 2>/dev/null || { echo "cannot seek to offset $2" >&2; exit 1; }
head -c "$3"; } <"$r"`

// writeScript writes stdin to $1 (appending when $2 is 1), creating
// parent directories after checking the deepest existing one. It refuses
// an existing target that is not a regular file (a directory, a FIFO that
// would block the open, a device), following links as the open would.
// Without append it replaces the file whole or leaves it as it was: once
// opening the file for appending (which changes nothing) shows that the
// user may write it, stdin goes to a temporary file beside the file the
// links lead to (.tmp-brain-write-PID, which a container killed part-way
// may leave behind), which is given the old file's permissions, synced
// and renamed over it; the links stay, and so does a link whose target
// does not exist yet: the target is created, as an append creates it.
// An append that fails part-way (a full disk) is cut back to the file's
// old size with dd (which truncates its output where it ends), or
// removes the file it created. Before it
// appends it prints the old size (empty when the file does not exist)
// and the file it appends to on stdout, each ending with a NUL, so that
// the provider can cut back an append it stopped (undoAppendScript); a
// write prints an empty size and its temporary file the same way before
// it creates that file, so that the provider can remove the temporary
// file of a write it stopped, which the script, killed, could not.
const writeScript = scriptPrelude + `p=$1
parent "$p"
inside "$a"
[ -d "$r" ] || exit 47
if [ -L "$p" ]; then inside "$p"; fi
if [ -e "$p" ] && [ ! -f "$p" ]; then exit 46; fi
mkdir -p "${p%/*}" || exit 1
if [ "$2" = 1 ]; then
t=$p; [ -L "$p" ] && t=$r
o=; if [ -e "$t" ]; then o=$(stat -c %s "$t") || exit 1; fi
printf '%s\0%s\0' "$o" "$t" || exit 1
cat >>"$t" && exit
if [ -n "$o" ]; then dd if=/dev/null of="$t" bs=1 seek="$o" 2>/dev/null; else rm -f "$t"; fi
exit 1
fi
t=$p
if [ -e "$p" ]; then
inside "$p"; t=$r
: >>"$t" || exit 1
elif [ -L "$p" ]; then t=$r
fi
n=${t%/*}/.tmp-brain-write-$$
trap 'rm -f "$n"' EXIT
printf '\0%s\0' "$n" || exit 1
cat >"$n" || exit 1
if [ -e "$t" ]; then chmod "$(stat -c %a "$t")" "$n" || exit 1; fi
sync "$n" 2>/dev/null || sync
mv -f "$n" "$t"`

// undoAppendScript cuts back the file $2 that an append stopped part-way
// had begun to write, once nothing of the append runs any more: to its
// old size $1, or removed when $1 is empty (the append created it, or it
// is the temporary file of a write). A file gone meanwhile is left gone.
const undoAppendScript = scriptPrelude + `o=$1
[ -e "$2" ] || exit 0
inside "$2"
if [ -n "$o" ]; then dd if=/dev/null of="$r" bs=1 seek="$o" 2>/dev/null || exit 1
else rm -f "$r" || exit 1; fi`

// listScript prints type, size and path of each entry under $1 (recursing
// when $2 is 1), NUL-separated, paths relative to $1. stat is given the
// path with "./" before it, so that a name beginning with a dash is not
// taken for an option.
const listScript = scriptPrelude + `p=$1
[ -e "$p" ] || missing "$p"
inside "$p"
[ -d "$r" ] || exit 46
cd "$r" || exit 1
walk() {
for f in "$1"* "$1".*; do
case "${f##*/}" in .|..) continue;; esac
[ -e "$f" ] || [ -L "$f" ] || continue
s=0
if [ -L "$f" ]; then t=symlink
elif [ -d "$f" ]; then t=dir
elif [ -f "$f" ]; then t=file; s=$(stat -c %s "./$f" 2>/dev/null) || s=0
else t=other; fi
printf '%s\0%s\0%s\0' "$t" "$s" "$f"
if [ "$2" = 1 ] && [ "$t" = dir ]; then walk "$f/" 1; fi
done
}
walk "" "$2"`

// cwdScript prints the resolved directory $1 for a command's working
// directory; it must exist, resolve inside /workspace and be a directory.
const cwdScript = scriptPrelude + `p=$1
[ -e "$p" ] || missing "$p"
inside "$p"
[ -d "$r" ] || exit 46
printf '%s' "$r"`

// codeReadOnly answers a write to a workspace the profile mounts read-only.
const codeReadOnly = "read_only"

// maxListBytes bounds the raw listing read back from the container; the
// list's answer is bounded apart (fit.ListRoom), since JSON may write six
// bytes for one of a name's and repeats the listed directory's path in
// every entry.
const maxListBytes = 8 << 20

// script runs a file-tool script and maps its exit code to a failure.
// When the exec itself fails (a stop, a lost Engine) stdout is what the
// script printed before.
func (k *call) script(script string, args []string, stdin []byte, limit int64) (stdout, stderr []byte, truncated bool, err error) {
	o := capture(limit, nil)
	spec := execSpec{Argv: append([]string{"/bin/sh", "-c", script, "brain-file"}, args...), Stdin: stdin, OutputBytes: limit}
	code, err := k.exec(spec, o.Stdout(), o.Stderr())
	out, errOut := o.Bytes()
	if err != nil {
		return out, nil, false, err
	}
	target := ""
	if len(args) > 0 {
		target = relPath(args[0])
	}
	switch code {
	case 0:
		return out, errOut, o.Truncated(), nil
	// The path is in the details of not_found and path_escape, as the
	// workspace provider answers them (and toolset.Clean a path_escape):
	// a caller learns which path failed without parsing the message.
	case exitNotFound:
		return nil, nil, false, envsdk.Failf(envapi.CodeNotFound, "%s does not exist", target).
			WithDetails(map[string]string{"path": target})
	case exitEscape:
		return nil, nil, false, envsdk.Failf(envapi.CodePathEscape, "%s resolves outside the workspace", target).
			WithDetails(map[string]string{"path": target})
	case exitKind:
		return nil, nil, false, envsdk.Failf(envapi.CodeInvalidInput, "%s is not the kind of file this tool works on", target)
	case exitParent:
		return nil, nil, false, envsdk.Failf(envapi.CodeInvalidInput, "a parent of %s is not a directory", target)
	case exitLoop:
		return nil, nil, false, envsdk.Failf(envapi.CodeInvalidInput, "%s: too many levels of symbolic links (a loop)", target).
			WithDetails(map[string]string{"path": target})
	}
	msg := strings.TrimSpace(toolset.Text(errOut))
	if strings.Contains(msg, "Read-only file system") {
		return nil, nil, false, envsdk.Failf(codeReadOnly, "the workspace is read-only: %s", msg)
	}
	return nil, nil, false, envsdk.Failf(envapi.CodeExecutionFailed, "file tool exited %d: %s", code, envapi.Truncate(msg))
}

func runRead(k *call) (any, error) {
	var in toolset.ReadInput
	abs, err := k.decode(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	// JSON takes at least a byte for each of the content's: no more than
	// the answer's room is read.
	room := fit.Room(k.p.maxAnswer)
	limit := min(in.Limited(k.b.profile.OutputBytes), int64(room))
	data, errOut, _, err := k.script(readScript, []string{abs, strconv.FormatInt(in.Offset, 10), strconv.FormatInt(limit, 10)}, nil, limit+64)
	if err != nil {
		return nil, err
	}
	size, perr := strconv.ParseInt(strings.TrimSpace(string(errOut)), 10, 64)
	if perr != nil {
		return nil, envsdk.Failf(envapi.CodeExecutionFailed, "read %s: unexpected size %q", in.Path, errOut)
	}
	truncated := size-in.Offset > int64(len(data))
	if truncated {
		data = toolset.TrimCutRune(data)
	}
	return fit.Read(data, size, truncated, room), nil
}

func (k *call) writable() error {
	if k.b.profile.Workspace != WorkspaceWrite {
		return envsdk.Failf(codeReadOnly, "the profile %q mounts the workspace read-only", k.b.state().Profile)
	}
	return nil
}

func runWrite(k *call) (any, error) {
	var in toolset.WriteInput
	abs, err := k.decode(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	if abs == workspaceDir {
		return nil, envsdk.Fail(envapi.CodeInvalidInput, "input.path: the workspace itself is a directory")
	}
	if err := k.writable(); err != nil {
		return nil, err
	}
	data, err := in.Data()
	if err != nil {
		return nil, err
	}
	if err := k.b.files.lock(k.ctx); err != nil {
		return nil, k.before(err, "another write or edit of the binding was running")
	}
	defer k.b.files.unlock()
	appendFlag := "0"
	if in.Append {
		appendFlag = "1"
	}
	if out, _, _, err := k.script(writeScript, []string{abs, appendFlag}, data, 64<<10); err != nil {
		return nil, k.undoWrite(out, err, in.Append)
	}
	return toolset.WriteOutput{Bytes: len(data)}, nil
}

// undoWrite undoes what a write that err says was stopped (a cancel or
// its deadline) left, once its command was confirmed dead, from what the
// script printed (out) before it began to write: an append is cut back,
// so that a stop answers that nothing was appended, and the temporary
// file of a write or edit is removed. When that fails the stop keeps its
// code and details.cleanup_error says why. Any other err is answered as
// it is.
func (k *call) undoWrite(out []byte, err error, appended bool) error {
	var stop *stopError
	if !errors.As(err, &stop) || stop.Cleanup != nil {
		return err
	}
	fields := bytes.SplitN(out, []byte{0}, 3)
	if len(fields) < 3 {
		return err // stopped before it began to append
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), killBudget)
	defer cancel()
	const undoOutput = 4 << 10
	o := capture(undoOutput, nil)
	spec := execSpec{
		Argv: []string{"/bin/sh", "-c", undoAppendScript, "brain-file", string(fields[0]), string(fields[1])},
		User: k.b.profile.User, Dir: workspaceDir, Tag: k.tag + "-undo", OutputBytes: undoOutput,
	}
	code, uerr := runExec(ctx, k.p.cli, k.a.Container, spec, o.Stdout(), o.Stderr())
	if uerr == nil && code != 0 {
		_, errOut := o.Bytes()
		uerr = fmt.Errorf("exited %d: %s", code, envapi.Truncate(strings.TrimSpace(toolset.Text(errOut))))
	}
	if uerr != nil {
		what := "the temporary file of the write could not be removed"
		if appended {
			what = "the part of the append written before the stop could not be cut back"
		}
		return envsdk.KeepFirst(stopFailure(k.ctx, nil), fmt.Errorf("%s: %w", what, uerr))
	}
	return err
}

func runList(k *call) (any, error) {
	var in toolset.ListInput
	abs, err := k.decode(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	rec := "0"
	if in.Recursive {
		rec = "1"
	}
	raw, _, truncated, err := k.script(listScript, []string{abs, rec}, nil, maxListBytes)
	if err != nil {
		return nil, err
	}
	entries, cut := listEntries(raw, relPath(abs), fit.ListRoom(k.p.maxAnswer))
	return toolset.ListOutput{Entries: entries, Truncated: truncated || cut}, nil
}

// listEntries decodes listScript's output: entries of three fields (type,
// size, path), each field ending with a NUL, paths relative to base. What
// follows the last NUL is an entry the output cap cut, and is left out
// rather than answered with a cut path. The entries stop before the first
// that would make the list's output take more than bound bytes as JSON
// (cut is then true).
func listEntries(raw []byte, base string, bound int) (entries []toolset.Entry, cut bool) {
	fields := bytes.Split(raw, []byte{0})
	fields = fields[:len(fields)-1]
	entries = []toolset.Entry{}
	answer := fit.EmptyList
	for i := 0; i+2 < len(fields); i += 3 {
		size, _ := strconv.ParseInt(string(fields[i+1]), 10, 64)
		p := toolset.Text(fields[i+2])
		if base != "." {
			p = base + "/" + p
		}
		e := toolset.Entry{Path: p, Type: string(fields[i]), Size: size}
		n := fit.Entry(e)
		if answer+n > bound {
			return entries, true
		}
		answer += n
		entries = append(entries, e)
	}
	return entries, false
}

func runEdit(k *call) (any, error) {
	var in toolset.EditInput
	abs, err := k.decode(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	if err := k.writable(); err != nil {
		return nil, err
	}
	// Held from the read to the write, so that no other write or edit of
	// the binding comes between and is undone by this one.
	if err := k.b.files.lock(k.ctx); err != nil {
		return nil, k.before(err, "another write or edit of the binding was running")
	}
	defer k.b.files.unlock()
	limit := k.b.profile.OutputBytes
	data, errOut, _, err := k.script(readScript, []string{abs, "0", strconv.FormatInt(limit, 10)}, nil, limit+64)
	if err != nil {
		return nil, err
	}
	if size, _ := strconv.ParseInt(strings.TrimSpace(string(errOut)), 10, 64); size > int64(len(data)) {
		return nil, envsdk.Failf(envapi.CodeOutputLimit, "%s is larger than the profile's %d-byte limit", in.Path, limit)
	}
	edited, err := in.Apply(data)
	if err != nil {
		return nil, err
	}
	if out, _, _, err := k.script(writeScript, []string{abs, "0"}, edited, 64<<10); err != nil {
		return nil, k.undoWrite(out, err, false)
	}
	return toolset.EditOutput{Replacements: 1}, nil
}

// decode decodes a file tool's input into in and maps the path it names (at
// *path) into the container.
func (k *call) decode(in any, path *string) (string, error) {
	if err := toolset.Decode(k.input, in); err != nil {
		return "", err
	}
	return containerPath(*path)
}

// fileLock serializes the writes and edits of a binding: an edit reads the
// file and writes it whole, so another write or edit of the file between
// the two would be lost. Waiting ends with the execute's context. The
// zero value is unlocked. (It also holds a binding's executes back while
// the leftovers of its paused container are killed: see settleLeftovers.)
type fileLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *fileLock) lock(ctx context.Context) error {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *fileLock) unlock() { <-l.ch }
