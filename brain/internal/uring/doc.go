// Package uring flushes files through the kernel's io_uring so that the
// goroutine waiting for a flush parks in the runtime's network poller
// instead of sitting in a blocking system call.
//
// A goroutine in fdatasync(2) keeps its P (one of GOMAXPROCS) until the
// runtime's monitor notices the call has lasted more than one of its ticks
// and hands the P to another thread. A flush to a device with a write cache
// takes a few hundred microseconds, about as long as the monitor takes to
// notice, so a process that flushes back to back (a group commit) runs
// with one P fewer than it was given for most of the time: with two, its
// other goroutines share one core.
//
// A Ring submits IORING_OP_FSYNC with IORING_FSYNC_DATASYNC (the kernel
// runs it on a worker thread of its own) and learns of the completion
// through an eventfd registered with the ring, which the runtime polls
// like a socket. The flush itself is the same call with the same result:
// a failed writeback is reported by the completion exactly as fdatasync(2)
// reports it. The eventfd only wakes the waiter: where it cannot be read
// (or the runtime's poller does not watch it), Wait looks at the
// completion queue every 500 µs instead, and still answers nothing but
// the flush's result. A Ring holds at most 8 flushes; a flush keeps its
// place until Wait answers it, and Close fails while one does.
//
// A kernel that has io_uring may still refuse the flush operation itself
// (a completion answering EINVAL, before Linux 5.6, or EOPNOTSUPP, under
// gVisor). Wait then flushes the file with fdatasync(2) and answers that
// call's result, never the ring's; when fdatasync succeeds, the ring
// takes no flush again and Fdatasync answers an error wrapping
// errors.ErrUnsupported, so that its callers flush with fdatasync(2). A
// descriptor that cannot be synced (a pipe) is refused by both alike: its
// error is answered and the ring stays in use. Any other error of the
// completion (EIO) is the flush's failure, as it would be fdatasync's.
//
// New answers an error wrapping errors.ErrUnsupported where io_uring is
// missing or forbidden (kernels before 5.6, seccomp profiles that refuse
// it, kernel.io_uring_disabled, other systems than Linux); callers then
// flush with fdatasync(2) as before.
package uring
