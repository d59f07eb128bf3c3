// Package datadir opens Brain's data directory and owns its top-level
// layout.
//
// # Layout
//
//	<data dir>/
//	  .lock            exclusive flock(2) held for the lifetime of the process,
//	                   as is one on the directory itself
//	  format           the marker "brain-data/1\n"
//	  sessions/        one directory per session, owned by package journal:
//	    {id}/journal/{first sequence as 20 digits}.segment
//	    {id}/checkpoint
//	  environments/    {environment_id}.json
//	  agentloops/      admitted Agentloop and Tool components
//	  native-workspaces/
//	  run/             worker sockets
//	  server-metadata/ sealed credentials
//	  requests/requests.log
//	  resident-hosts/hosts.log
//
// # Opening rules
//
// Open creates the directory (and its missing parents) when it is missing,
// fsyncing the parent of each directory it creates, then takes an exclusive,
// non-blocking flock on the directory itself and on .lock; when another
// process (or another Open in this process) holds either, Open refuses with
// an error saying the directory is already in use. The lock on the
// directory is what keeps a second server out when .lock is deleted or
// replaced under a running one; the lock on .lock keeps out the versions
// that take only that one. Where the file system cannot lock a directory
// (NFS), .lock alone is taken. With the locks held:
//
//   - a directory holding nothing but .lock is initialised: format is
//     written atomically (temporary file, fsync, rename, directory fsync)
//     and sessions/ is created; temporary files of format that an Open
//     cut short (killed before the rename) left beside .lock are removed
//     first, and the directory is initialised as if they were not there;
//   - a directory without format that holds anything else is refused,
//     naming what was found, and nothing is touched;
//   - a format file holding any value other than "brain-data/1\n" is
//     refused, naming the value found (its first 64 bytes when it is
//     longer), and so is a format that is not a regular file (a named
//     pipe or a device is never read); with the marker in place, a
//     missing sessions/ is created again and the directory fsynced.
//
// WriteFileAtomic is the one way files in the data directory are replaced:
// it writes a temporary file beside the target, fsyncs it, renames it over
// the target and fsyncs the parent directory, so a crash leaves either the
// old or the new content. It and SyncDir forward to package
// internal/fsutil, which holds the one implementation of the module's
// durability primitives.
package datadir
