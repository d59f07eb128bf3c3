// Package workspace is an environment/v1 provider that gives every binding a
// directory on the provider's host, allocated lazily on first use, and runs
// commands and file tools inside it.
//
// # Lifecycle
//
// setup validates the binding's configuration (BindingConfig; a variable
// of env whose value holds a NUL byte, which no program can be given, is
// invalid_configuration) and records the binding on disk; it allocates
// nothing. A second setup of a binding
// that is still set up fails with already_exists. The first execute creates
// the workspace directory, and syncs it and the directory holding it
// before the binding's state records it; concurrent first executes share that one
// allocation, and a failed allocation stays failed (allocation_failed) until
// the method reset. detach keeps the directory. teardown removes it (with
// the directories in it a command made read-only) and forgets the binding,
// holding back no other binding while it removes; it is repeatable and
// answers accepted again (a repeat during the removal once it is done).
// Any other operation on an
// unknown or torn-down binding fails with unavailable, also one that
// began before the teardown was done (at once, not once the removal is
// done): it records and reports nothing. The executes that arrive while
// reset removes the old directory run in the next one at once.
// detach and teardown while executes run fail with busy. teardown
// forgets the binding on disk before it removes the directory, and reset
// records the binding's next directory before it removes the old one, so a
// provider killed part-way through either restarts with it done, never
// with a workspace that lost part of its files; a removal that fails
// answers cleanup_failed. Each start removes the workspace directories no
// binding names (those such a removal left).
//
// A root serves one provider at a time: New takes an exclusive lock
// (flock(2) of <root>/.lock, not inherited by commands) before it reads
// anything there and holds it until Close or the end of the process; a
// second provider on the root, in this process or another, fails with
// ErrRootInUse and touches nothing. Once Close has begun the provider
// answers every operation unavailable; it stops the commands running
// (their executes answer cancelled) and waits for the operations in
// flight to end before it releases the lock, so that none of them writes
// to a root that another provider may have taken.
//
// Each binding's state is one JSON file under <root>/bindings (see State
// below), so a provider restarted on the same root finds its workspaces. A
// workspace directory that was removed or replaced behind the provider's
// back is reported as resource_lost — as a failure and, when the binding
// has a reporter, as a resource observation — and is never silently
// re-created; reset allocates a fresh one. The provider tells the
// directory it made from one made at its path afterwards by a mark of
// random digits it writes, when it creates the directory, in the extended
// attribute user.brain.workspace, and by its creation time; where the file
// system keeps no extended attributes (an NFS mount, for one), by its file
// handle (name_to_handle_at(2)) instead of the mark, which holds the
// inode's generation, so that a directory re-created with the inode number
// of the one removed is told from it; by its inode number where the file
// system gives no handle either (or where the binding's state, written by
// an earlier release, holds neither mark nor handle: the next start gives
// such a workspace, once it finds it to be the directory allocated, a
// mark and records its handle). A file system that keeps none of mark,
// creation time and handle (ramfs) leaves a directory re-created with the
// inode number of the workspace's taken for it: the provider warns of
// that in its log, once, at its first allocation there.
// A marker file in the workspace would not serve: the session's own
// commands remove it, and a change time changes with every entry added.
// Device numbers are not compared: overlayfs and btrfs number theirs anew
// at each mount, and a remount loses no workspace.
//
// # State
//
// A binding's state file is named by the binding key in base64url (by
// "sha256." and the key's SHA-256 in hex when that name would be too long
// for the file system) with ".json", and written atomically (temporary
// file, fsync, rename, directory fsync); a start removes the temporary
// files a provider killed part way left there. The first releases named
// every file by the key in base64url, however long: a start gives such a
// file (of a key of 176 to 187 bytes) the current name, so that a
// teardown forgets its binding for good, and a binding with files under
// both names stops it from starting. A state file holds
//
//	{"version": 1, "key": KEY, "session_id": ID, "environment": NAME,
//	 "binding_sequence": N, "configuration": BindingConfig,
//	 "dir": 32 hex digits, "phase": "new"|"ready"|"failed"|"lost",
//	 "mark"?: HEX, "handle"?: "TYPE:HEX", "ino"?: N, "birth"?: NS,
//	 "dev"?: N, "error"?: TEXT, "created": RFC 3339}
//
// dir is the workspace directory under <root>/workspaces; mark, handle,
// ino and birth identify it once allocated (absent: not known); error
// says why a failed allocation failed or a lost workspace was lost. dev,
// the directory's device number, is written for the providers of earlier
// releases, which compare it and would take every workspace for replaced
// without it; this one never reads it. version is the layout: a file
// without one was written by an earlier release (with dev, ino and birth,
// no mark or handle; the first release without birth) and is read the
// same way, the fields it lacks unknown, so no workspace is lost for its
// layout. The version changes only when a provider reading a file as this
// one does would act wrongly on it; fields added that an earlier release
// may ignore keep it. A file that does not decode, is not named by its
// key, holds an unknown phase, names a workspace directory the provider
// does not make or is of a later version stops the provider from
// starting, with the file named; nothing is removed on its word.
//
// # Tools
//
// The provider implements the standard tool set of package
// envsdk/toolset: the implementation of an execute is {"tool": NAME} with
// NAME one of command, read, write, list and edit; any other tool is
// unsupported. A command's output names the signal that killed it, if
// any. File tools resolve paths with os.Root inside
// the workspace: absolute paths, ".." and symbolic links that lead outside
// fail with path_escape, and so do absolute symbolic links even when they
// name a place inside (os.Root follows relative links only); a path the
// file system cannot resolve (a name longer than it allows, a loop of
// symbolic links) is invalid_input with details {"path"}; the path in
// the details of a failure is cut, between characters, to
// envapi.MaxMessageLen bytes, as the message is, so that a long path never
// makes an answer larger than Brain takes. A read cut by its limit inside a multi-byte
// character ends before that character, so that text is returned as text;
// the caller continues from the offset plus the bytes returned; a read
// from an offset at or past the end answers empty content. A write
// (without append) or an edit replaces the file whole or leaves it as it
// was: the new content goes to a temporary file beside it (".tmp-NAME-"
// and random digits, which a provider killed part-way may leave behind),
// which is synced, given the old file's permissions and owner and renamed
// over it; a write through a symbolic link replaces the file the link
// leads to and keeps the link, and one below a link that leads to nothing
// fails with not_found, naming the link (the directory it names is not
// created). The next write or edit of that file first
// removes the regular files so named beside it (and those named
// ".tmp-NAME-" and 16 hex digits by earlier releases), except the ones of
// writes still running. Replacing a file needs room for the old
// and the new content at once. A failed append is cut back to the file's
// old size, and one that created its file removes it. A failed write
// removes the missing parent directories it created, those still empty.
// A write, an edit or a list stops at the execute's deadline or cancel,
// even on a path thousands of directories deep or in a tree of hundreds of
// thousands of entries, answering timeout or cancelled; so do the
// measure of the workspace against its limits before a command, which
// stops at the command's own timeout too, and the wait of a command, a
// write or an edit for another write or edit of the workspace to finish
// (a command stopped there answers that it did not start). An
// edit holds the file in memory and so works only on a file
// within the operator's output limit (output_limit beyond it). A list
// answers its entries in lexical order, each directory before its
// contents, and stops with truncated true at 10,000 entries or at 8 MiB
// of them as JSON (less when the answer bound below is lower: the room
// that bound leaves an output), so that long names never make an answer
// larger than Brain takes. Of each directory it reads, a list holds only
// the entries it may still answer (the others are read and dropped as
// they come), so that a directory of millions of entries costs it no
// more memory than one of 10,000. A list shows a subdirectory it cannot read (or that is
// removed meanwhile) without its contents, and so does the measure of the
// workspace against its limits. A list, the measure and a removal reach
// every entry of a tree of any depth (one deeper than the provider's
// limit on open files included) in time linear in its size, holding a
// bounded number of directories open and following no symbolic link
// below the directory it starts at. A name that is not UTF-8 is listed with
// each of its invalid bytes replaced by U+FFFD, and a directory so named is listed
// with its contents; such names do not keep teardown, reset or a wipe
// from removing the workspace. A command
// runs with its working directory inside the workspace, an environment
// built from the provider's variables the operator's allow-list names,
// WORKSPACE (the directory), the binding's variables and the input's, the
// later winning, and only programs the operator allows; while the operator restricts the programs,
// a session may not set the variables through which an allowed program
// would load a library of the session's choosing (LD_* and GCONV_PATH:
// not_allowed in an input, invalid_configuration at setup). Its output
// is streamed while it runs as "workspace.output" events through the
// execution's emit service ({"stream", "data", "skipped"?}, chunks of at
// most 16 KiB; skipped counts the bytes not streamed while the emit
// service fell behind; the first output limit bytes of each stream are
// streamed) and returned with each stream capped at the output limit: the
// start of stdout and the end of stderr (where a failure says what went
// wrong), both cut between characters, are kept and truncated is true.
// Commands are not sandboxed: the directory is a working area, not an
// isolation boundary.
//
// The operator tells the provider the largest answer Brain takes
// (Options.MaxAnswerBytes, Command's --max-answer-bytes: Brain's
// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES, 32 MiB by default); one below
// MinAnswerBytes (1 KiB) is refused at start, since it would hold neither
// the failure output_limit nor a read of one character beside its
// envelope, so that a caller paging through a file would make no
// progress. JSON may write
// six bytes for one of an output's ("\u003c" for '<', "\u0001" for a
// control character, "\ufffd" for a byte that is not UTF-8), so a read or
// a command's output within the output limit could still make a larger
// answer: it is cut instead, between characters, to what fits in the
// bound less 4 KiB (less half the bound below 8 KiB; a read holds no more
// bytes than that to begin with), with truncated true — a command's
// stdout and stderr each to half of that room or to what the other
// leaves; a stopped command's output in its failure's details leaves
// room for the cleanup evidence too. The caller of a cut read continues
// from the offset plus the bytes returned. Any answer still larger than
// the bound is answered as the failure output_limit (see envsdk), never
// sent.
//
// # Stopping
//
// Every command runs in its own process group and, where the kernel offers
// cgroup v2 with cgroup.kill to the provider, in a cgroup of its own that
// its descendants cannot leave; it is also tracked by group, parent chain
// and an inherited marker variable (see providers/internal/proctree). At the
// deadline, on cancel, and after the command exits, the whole tree is
// killed with SIGKILL — including children that trap SIGTERM, call setsid,
// are reparented away and exec with an empty environment (the last only
// with the cgroup).
// A provider killed before it could stop its commands (SIGKILL, a crash)
// leaves them running with nobody to enforce their deadlines: a provider
// started afterwards, on any root, kills them (their cgroups, and the
// processes whose marker names a provider that is gone), so a command never
// outlives its provider's next start.
// A stopped command answers timeout or cancelled; if some process could not
// be killed the first cause is kept with the evidence in
// details.cleanup_error.
//
// # Methods
//
// reset drops the workspace (and a sticky allocation failure or loss) so the
// next execute allocates afresh; release is the turn-end hook (registered by
// setup when the binding sets release_on_turn_end) and keeps or wipes the
// workspace per Options.Release (a wipe does not clear a failed
// allocation or a loss, nor one it finds, which it records and reports:
// it answers released false and leaves them for reset); inspect reports whether the workspace is
// allocated, its size and file count (its measure stops when its caller
// gives up, answering cancelled, or when Close begins, answering
// unavailable). reset and release fail with busy while
// executes run.
package workspace
