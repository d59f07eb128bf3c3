// Package docker is an environment/v1 provider that runs each binding's
// tools in a hardened container on a local Docker Engine, with the
// binding's files in a Docker volume mounted at /workspace.
//
// # Profiles
//
// The operator defines named profiles (LoadProfiles, or Command's flags):
// image, workspace ("write" or "read"), user (numeric uid:gid, each at
// most 2147483647 as the Engine takes, never root; default 1000:1000),
// memory_mb, pids, cpus (at least 0.01, the least CPU time
// the kernel bounds, and at most the CPU count the Engine reports),
// network ("none" by default), tmpfs_mb, output_bytes, timeout (for
// executes without a deadline) and env_allow. A cpus bound above the
// Engine's CPU count, or a network the Engine does not have, which the
// Engine would refuse only when the first execute creates the container,
// is refused as soon as it can be known: Command does not start
// (CheckProfiles) when the Engine answers then, and a setup naming such a
// profile fails with invalid_configuration (details.field
// "configuration.profile") naming the limit or the network.
// A binding's setup configuration {"profile": NAME} picks one ("default"
// when absent); an unknown profile is unsupported, a malformed
// configuration invalid_configuration naming the field. Setup resolves the
// profile's image to its immutable ID and pins it for the binding; the
// provider never pulls, so a missing image fails setup with not_found.
// A second setup of a live binding fails with already_exists. A binding
// whose profile a restarted provider no longer offers runs nothing: its
// executes fail with unavailable until it is torn down. A profile
// changed between two provider processes is applied to the container a
// binding already has at its first execute after the restart: its
// memory, pids and cpus are updated in place (as docker update does: the
// container, its /tmp and its workspace are kept; a
// cpus bound taken away becomes one of all the Engine's CPUs, since an
// update cannot remove it), and an update the Engine refuses fails that
// execute with unavailable saying why. Its network, user, workspace and
// tmpfs_mb cannot change in a container that exists: while they differ
// from the container's, its executes fail with unavailable naming them,
// so that nothing runs looser than the profile now says, until the
// binding is torn down or the profile gives them back (what an earlier
// provider process left running there is still killed, at start or by a
// cancel, as the user the container was made with). A changed image
// changes nothing for the binding, which keeps the image pinned at its
// setup. A binding set up but not yet allocated has no container to keep:
// its first execute makes it with the profile as it is then, user and
// workspace included, and the new volume belongs to that user (setup's
// finding of who owns the image's /workspace is made again for it).
//
// # One long-lived container per binding
//
// The first execute allocates lazily (envsdk.Lazy: concurrent first
// executes share one allocation; a failure stays failed): a volume and one
// container that lives as long as the binding, running the Engine's init
// and an idle sleep; every tool call is an exec in it. The allocation is
// no part of the execute's deadline: an execute whose deadline passes
// (or that is cancelled) first answers timeout (cancelled) saying that
// its command never started, and the allocation goes on for the next. A container per call
// would make cleanup trivial (remove it whole) but costs a container start
// (hundreds of milliseconds) per call against one exec (tens); with the
// process-group wrapper below a stopped call leaves nothing behind either,
// so the container is per binding. Every container is created with: no
// network unless the profile names one, CapDrop ALL, no-new-privileges, a
// read-only root filesystem, the profile's non-root user, memory (and
// swap) and pids limits, optional CPU limit, a tmpfs /tmp owned by the
// profile's user, logging off,
// and the volume read-only for "read" profiles. On its first start the
// Engine copies the image's /workspace, content and ownership, into the
// empty volume. A write workspace belongs, with everything the image put
// in it, to the profile's user, so that its tools can change the files
// the image gave them: an image whose /workspace and its content belong to
// that user (e.g. RUN mkdir /workspace && chown 1000:1000 /workspace)
// needs nothing more. Otherwise (found at setup, by reading the headers
// of the directory's archive, at most 64 MiB of it, from a created, never
// started container) the allocation runs a one-shot container — root with
// CAP_CHOWN only, no network — that chowns the volume and its content
// (chown -h of each entry not yet the user's: a symbolic link itself,
// never what it points to), which
// costs one more container start. A read workspace is never chowned.
// A volume that an earlier version of the provider made, which gave the
// profile's user the volume's root alone and left the image's files in it
// to their owner (its state file does not say the owner was decided for
// the workspace's whole content), is given, with everything in it, to the
// container's user by the same one-shot container at the binding's first
// execute after the restart, once: its state file records it (a chown
// that fails answers unavailable, and the next execute tries again).
// That chown is no part of the execute's command and does not run under
// its deadline: it runs apart, bounded by 30 minutes, and the binding's
// executes wait for it; one whose deadline passes (or that is cancelled)
// first answers timeout (cancelled) saying that its command never
// started, while the chown goes on and is recorded once done. Close, a
// detach or a teardown stops it (its container removed, even one the
// Engine made after the provider stopped asking), and one stopped, or
// cut short by its bound (its execute answers unavailable), is not
// recorded: the next execute takes it up again. The chown changes only
// what does not already belong to the user (find … ! -user … -exec chown),
// so that a chown taken up again goes on from where the last one stopped
// and a workspace too large for one run is given whole by a few; an image
// whose find cannot select files by owner gets chown -R, which starts
// over each time.
//
// The image needs a POSIX shell at /bin/sh with setsid, kill, sleep, cat,
// head, dd, tr, grep, mkdir, realpath, chmod, stat, sync, mv and
// rm (busybox suffices), and chown (with -h, and -R when find lacks
// -user, -group or -exec … +) and find when its /workspace or its content
// does not belong to the profile's user (the one-shot chown container
// runs them).
//
// Every container and volume carries the labels brain.provider=docker,
// brain.instance (a digest of the state directory, so instances sharing an
// Engine never touch each other's resources), brain.session,
// brain.environment, brain.binding (the binding key), brain.resource and
// brain.created; the container and the volume are both named
// brain-<resource>.
//
// # Tools
//
// The provider implements the standard tool set of package
// envsdk/toolset: the implementation of an execute is {"tool": NAME} with
// NAME one of command, read, write, list and edit; any other tool is
// unsupported. A command's argument, shell line or variable ("NAME=value")
// longer than the kernel takes (128 KiB) fails with invalid_input naming
// the field before anything runs, and arguments and variables more than
// it takes in all fail with invalid_input too. A command may set only the variables named by the
// profile's env_allow, and sees them with the values it gave, whatever
// their names (the wrapper described below sets none of its own before
// the command starts); env_allow cannot name BRAIN_EXEC_TAG, which the
// provider sets (below). Paths are relative to /workspace: absolute
// paths and ".." escapes fail with path_escape before anything runs, and a
// symbolic link whose target resolves outside /workspace fails the same
// way in the container; a command's cwd is checked the same way, and one
// that does not exist or is not a directory fails with not_found or
// invalid_input before the command runs. A path one of whose parents is
// not a directory (f/x with f a regular file) fails with invalid_input for
// every tool, as in the workspace provider, and so does a path the kernel
// cannot take (a name longer than 255 bytes, or more than 4095 bytes in
// all, refused before anything runs) or resolve (a loop of symbolic
// links), with details {"path"}; a not_found or path_escape of a path
// has the same details, the path relative to /workspace. write and edit on a read profile fail with
// read_only. The writes and edits of a binding run one at a time, so that
// edits of one file that arrive together are all kept (a command is not
// held back). A write (without append) or an edit replaces the file whole
// or leaves it as it was (see writeScript), and an append that fails
// part-way (a full disk) is cut back to the file's old size, and so is
// one stopped part-way by its deadline or a cancel (or removed, when it
// created the file), once its command is confirmed dead: timeout and
// cancelled mean nothing was appended, unless details.cleanup_error is set
// (the command was not confirmed dead, or the cut failed); a write or edit
// stopped the same way leaves no temporary file in the workspace, unless
// details.cleanup_error is set; a read from
// an offset at or past the end answers empty content, and sizes and
// offsets of 4 GiB and more are exact. stdout and stderr are demultiplexed
// and share the profile's output_bytes cap: output within it is kept
// whole; beyond it the start of stdout and the end of stderr (where a
// failure says what went wrong) are kept, each within half of the cap or
// what the other leaves, cut between characters, the rest drained, and
// truncated is set. The first output_bytes of the two, as they come, are
// streamed while the command runs as "docker.output" events
// ({"stream", "data"}, at most 16 KiB each, cut between characters, so
// that a stream's events join into its output when nothing was cut)
// through the execution's emit service when granted; all events precede
// the finish.
//
// The operator tells the provider the largest answer Brain takes
// (Config.MaxAnswerBytes, Command's --max-answer-bytes: Brain's
// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES, 32 MiB by default; at least
// MinAnswerBytes, 1 KiB, below which no answer fits). JSON may write
// six bytes for one of an output's ("\u003c" for '<', "\u0001" for a
// control character), so a read or a command's output within the
// profile's output_bytes could still make a larger answer: it is cut
// instead, between characters, to what fits in the bound less 4 KiB (less
// half the bound below 8 KiB; a read holds no more bytes than that to
// begin with), with truncated true — a command's stdout and stderr each
// to half of that room or to what the other leaves, the start of stdout
// and the end of stderr (where a failure says what went wrong) kept; the caller of a cut
// read continues from the offset plus the bytes returned. A list reads at
// most 8 MiB of listing from the container and answers its entries in at
// most 8 MiB of JSON, or that room when it is less (each entry repeats the
// listed directory's path), stopping before the first entry beyond either
// with truncated true. Any answer still larger than the bound is answered
// as the failure output_limit (see envsdk), never sent.
//
// # Stopping a call
//
// The Engine cannot kill an exec. Each command therefore runs under a
// wrapper shell that starts it with setsid (a new process group), writes
// the group id, its own pid and the start times of both to
// /tmp/.brain-exec-<sequence> and waits. Every process of
// the command carries BRAIN_EXEC_TAG=<sequence> in its environment, which
// its children inherit, those that leave the group with a setsid of their
// own included. A process that also clears its environment carries no
// tag; once its parent ends it is an orphan, adopted by the container's
// init (PID 1). When the command's main process ends the wrapper kills
// what is left of the group, every other process carrying the tag, and
// every orphan that started after the command did and carries no tag, or
// only tags of no running command (one it gave itself), so a
// background child never outlives the call. A command whose exit status
// says a signal ended it may have killed its wrapper before that cleanup
// (killall sh): the provider then runs the kill described below before it
// answers. An orphan that carries
// the tag of another command still running (whose wrapper, an exec of
// the Engine, runs) is left to that command; an untagged orphan of a
// command that started after this one is not told apart from this
// command's own and is killed too. The container's keep-alive, the init's
// own child, is never taken for an orphan: it stays in the init's
// session, which no command's process can join. At the deadline (deadline_ms, the
// input's timeout_ms or the profile's timeout) or on cancel, the provider
// execs the same kill until the output stream has closed and a kill finds
// nothing left (the stream closing alone proves nothing: the Engine
// closes it soon after the wrapper exits, even while an escaped process
// holds it; a container found stopped holds nothing, and one found
// gone, removed out of band, ends the kill at once), and answers
// timeout or cancelled; if that is not confirmed
// within 4 seconds the first cause is kept and the evidence is in
// details.cleanup_error. A deadline (the profile's timeout too) or a
// cancel that comes before the command started — while the execute waits
// for another write or edit of the binding, while the Engine brings the
// container to a changed profile, starts it again or creates the
// command's exec, or while the command's cwd is checked — answers
// timeout (cancelled) saying that the command never started, whatever
// Engine call it cut short, never as a refusal of the Engine's. The
// start of the command, from which untagged orphans are taken for its
// own, is the one the group file recorded for the wrapper, while the process with the wrapper's pid started then (a
// pid the kernel gave to another process once the wrapper ended says
// nothing of the command) or anything carrying the tag still runs, or,
// when there is no file (the stop came before the wrapper wrote it, or
// /tmp had no room for it), that of the oldest process carrying the tag;
// each kill hands it to the next, since the first kills the wrapper. The
// group is killed only while its id is not another process's pid, and a
// kill that finds nothing left removes the file, which the killed wrapper
// could not.
// A stop does not wait for the Engine to answer
// an exec's start (its client would wait however long that takes): the
// start may have reached the Engine, so the same kill runs, and a stream
// the Engine opens later is closed and its command killed. A result never
// needs cleanup in this design, so cleanup_failed is answered only by
// teardown when the Engine refuses a removal.
// Close stops the provider (Command closes it when its context ends, on
// SIGTERM): once it has begun every operation fails with unavailable, the
// commands that run are stopped as a cancel stops them (their executes
// answer cancelled), and it returns once the operations in flight and the
// allocations they started have ended, so that the end of the process
// cuts none of them short; the containers are left running for the next
// provider on the state directory.
// A provider killed before it could stop its commands (SIGKILL, a crash)
// leaves them running in the container with nobody to enforce their
// deadlines: a provider started again on the same state directory
// (Command, or KillLeftovers) kills, before it serves, what is left of
// them in the running container of every binding it finds ready (the
// group of each wrapper file, every tagged process, and every untagged
// orphan that started after the oldest wrapper still running, by the start
// its file recorded, or tagged process), so a
// command never outlives its provider's next start; those it could not
// confirm dead are logged. An append stopped this way is not cut back: its call was
// never answered. The gc command never does this, since the provider
// serving the directory may be alive. Command serves a state directory
// alone: it holds a lock of the directory's .serving.lock file (on Linux,
// macOS and the BSDs; see below) while it serves, and a second Command on the directory fails to start,
// naming it, before it kills or removes anything, since it would take the
// commands the first one runs for leftovers. A binding whose container is
// paused at the restart is skipped then (nothing can exec in a paused
// container): the first execute or cancel, which resumes it, kills them
// before anything else runs there (an execute whose deadline passes, or
// that is cancelled, before they are killed answers timeout, cancelled,
// saying that its command never started, and the next use kills them). A cancel that arrives after a
// provider restart finds the group by the target's sequence, and resumes
// a paused container to kill it.
// Before it starts the command the wrapper writes a mark on stdout, which
// the provider takes off; a stream without it is the Engine's refusal to
// start the exec (its container stopped after the exec was created: the
// Engine may still open the stream, write its error there and give exit
// code 126), never the command's output. Nothing of the command ran, so
// the container is started again once and the command run in it, as for
// a container found stopped; one that is gone is resource_lost.
// A command whose exit status never comes back (the Engine connection
// broke, or the Engine kept reporting it running after its output closed)
// answers unknown, since it ran and may have had effects; what is left of
// it is killed first, so it does not outlive its call either.
// A command that such a break or a signal ended (exit status 128 or more)
// in a container then found gone or being removed (docker rm -f kills
// what runs in it first) is resource_lost, as below, never a result: the
// exit status is the removal's, not the command's. A container stopped
// out of band (docker kill) is no loss: the command's execute answers
// the signal's exit status, and the next execute starts it again.
//
// # Lifecycle and state
//
// Each binding is one JSON file in the state directory, named by the
// base64url binding key (by "sha256." and the key's SHA-256 in hex when
// that name would be too long for the file system) and written atomically (temporary file, fsync,
// rename or exclusive link, directory fsync): key, session, environment,
// resource id, profile, pinned image ID, whether a chown is needed (and
// for which user; a file that does not say the chown was decided for the
// workspace's whole content has it decided again at allocation), and
// the phase new → allocating → ready (or failed). The phase
// allocating is committed before the Engine is asked for anything, so a
// restart that finds it answers allocation_unknown and never repeats it.
// A binding still new without an image ID is a setup cut short (the
// provider was killed while it pinned the image): nothing was allocated,
// so the first execute pins the profile's image then, and allocates; if
// the image is gone by then, it fails with allocation_failed, which stays.
// A file that does not decode, or whose resource id (16 hex digits), phase
// or key (the file's name) is not one the provider writes, is refused with
// an error and never acted on. detach stops the container and keeps the volume (the next execute starts
// the container again, as it does one stopped by an Engine restart, and
// resumes one paused out of band); teardown force-removes every container
// (with the anonymous volumes an image's VOLUME gave it) and volume
// labelled with the binding, whatever the recorded phase, then removes
// its state file, so the directory holds the files of live bindings only
// (a provider removes at start the "deleted" files earlier versions kept);
// it is repeatable and works for a provider restarted after a crash. detach and teardown fail with busy while executes run. A
// container or volume removed out of band is resource_lost — as a failure
// and, with a reporter, a resource observation — and is never re-created.
// Operations on unknown or torn-down bindings fail with unavailable.
//
// GC removes this instance's labelled containers and volumes whose binding
// is gone (no state file) and, when asked, those older than
// a bound; Command runs it at start, and "brain env docker gc" on demand.
// It never touches a binding where an execute, a lifecycle operation or an
// allocation runs, in its own process or (on Linux, macOS and the BSDs)
// in another one on the same state directory, as the provider that serves
// it is to the gc command: a binding in use holds a byte-range lock of the
// directory's .bindings.lock file (an open file description lock), which
// GC must take to remove its resources. macOS and the BSDs have no such
// locks of a byte range: there the whole file is locked (flock), so that
// while any binding is in use a gc command skips every binding, and an
// operation waits while a GC removes any binding's resources. Elsewhere
// nothing is locked: a gc command there must not run while a provider
// serves the directory, nor two providers serve one. Its
// report (the JSON the gc command prints) lists what it removed
// (containers, volumes) and each binding it left (skipped: the binding,
// why, and its containers and volumes), which a later GC removes once
// the binding is no longer in use. An
// execute, detach or teardown that arrives while a GC removes a binding's
// resources waits until it is done with them (the execute then answers
// resource_lost).
package docker
