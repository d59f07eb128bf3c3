// Package fsutil holds the file-system durability primitives every package
// of the module outside the standard-library-only ones uses (the journal,
// brain/api and envapi keep their own): WriteFileAtomic replaces a file so
// that a crash leaves its old or its new content (temporary file beside
// the target, fsync, rename, directory fsync), WriteFileExclusive creates
// one the same way but never replaces it, and ReplaceIn, which both use,
// does either inside an os.Root, with the new file's mode or owner set by
// the caller and, on request, the leftovers of earlier replaces of the
// file removed first. SyncDir makes a directory's entries durable and
// Fdatasync a file's data. IsTemp recognises the temporary files a crash
// may leave behind, IsTempOf those of one target. OpenRegular opens a
// file for reading without waiting on a named pipe and refuses what is
// not a regular file; ReadRegular reads one whole up to a bound.
package fsutil
