//go:build linux && (amd64 || arm64)

package uring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// System call numbers (the same in every architecture's generic table).
const (
	sysSetup    = 425
	sysEnter    = 426
	sysRegister = 427
)

const (
	// recheck bounds how long a waiter may miss a posted completion.
	recheck = 500 * time.Microsecond

	entries = 8 // submission queue entries; a Ring has at most this many flushes in flight

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap  = 1 << 0
	registerEventFD = 4
	opFsync         = 3
	fsyncDatasync   = 1
	sqeSize         = 64
	cqeSize         = 16
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sq                                                                     sqOffsets
	cq                                                                     cqOffsets
}

// Ring is an io_uring instance with an eventfd for its completions. Its
// methods are safe for concurrent use.
type Ring struct {
	mu       sync.Mutex // guards submission, the completion queue and done
	fd       int
	rings    []byte // the submission and completion rings (one mapping, or the submission ring)
	cqRing   []byte // the completion ring when it is mapped on its own
	sqes     []byte
	sqHead   *uint32
	sqTail   *uint32
	sqMask   uint32
	sqArray  unsafe.Pointer
	cqHead   *uint32
	cqTail   *uint32
	cqMask   uint32
	cqes     unsafe.Pointer
	next     uint64           // the user_data of the next submission
	inflight int              // submitted, not yet waited for
	done     map[uint64]int32 // reaped completions, by user_data
	broken   error            // set when a submission failed: the ring is not used again
	refused  error            // set when the kernel refused the flush operation (see refusal)
	closed   bool

	wmu sync.Mutex // one waiter reads the eventfd at a time
	ev  *os.File   // the eventfd, read through the runtime's poller
}

// New sets up a ring. It answers an error wrapping errors.ErrUnsupported
// when the kernel lacks io_uring or refuses it.
func New() (*Ring, error) {
	var p params
	fd, _, errno := syscall.Syscall(sysSetup, entries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("uring: io_uring_setup: %w (%w)", errno, errors.ErrUnsupported)
	}
	syscall.CloseOnExec(int(fd))
	r := &Ring{fd: int(fd), done: make(map[uint64]int32)}
	if err := r.mapRings(&p); err != nil {
		r.release()
		return nil, err
	}
	efd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		r.release()
		return nil, fmt.Errorf("uring: eventfd: %w", errno)
	}
	fd32 := int32(efd)
	if _, _, errno := syscall.Syscall6(sysRegister, uintptr(r.fd), registerEventFD, uintptr(unsafe.Pointer(&fd32)), 1, 0, 0); errno != 0 {
		syscall.Close(int(efd))
		r.release()
		return nil, fmt.Errorf("uring: register eventfd: %w (%w)", errno, errors.ErrUnsupported)
	}
	// A non-blocking descriptor makes a File the runtime polls.
	r.ev = os.NewFile(efd, "io_uring eventfd")
	return r, nil
}

// mapRings maps the rings and the submission entries.
func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.sq.array) + int(p.sqEntries)*4
	cqSize := int(p.cq.cqes) + int(p.cqEntries)*cqeSize
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	prot, flags := syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE
	var err error
	if r.rings, err = syscall.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("uring: map rings: %w", err)
	}
	cq := r.rings
	if !single {
		if r.cqRing, err = syscall.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("uring: map completion ring: %w", err)
		}
		cq = r.cqRing
	}
	if r.sqes, err = syscall.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, prot, flags); err != nil {
		return fmt.Errorf("uring: map submission entries: %w", err)
	}
	sq := unsafe.Pointer(&r.rings[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sq.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sq.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sq.ringMask))
	r.sqArray = unsafe.Add(sq, p.sq.array)
	c := unsafe.Pointer(&cq[0])
	r.cqHead = (*uint32)(unsafe.Add(c, p.cq.head))
	r.cqTail = (*uint32)(unsafe.Add(c, p.cq.tail))
	r.cqMask = *(*uint32)(unsafe.Add(c, p.cq.ringMask))
	r.cqes = unsafe.Add(c, p.cq.cqes)
	return nil
}

// release unmaps the rings and closes the ring's descriptor.
func (r *Ring) release() {
	for _, m := range [][]byte{r.sqes, r.cqRing, r.rings} {
		if m != nil {
			_ = syscall.Munmap(m)
		}
	}
	r.sqes, r.cqRing, r.rings = nil, nil, nil
	syscall.Close(r.fd)
}

// Close releases the ring. No flush may be in flight.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if r.inflight > 0 {
		return errors.New("uring: close with a flush in flight")
	}
	r.closed = true
	err := r.ev.Close()
	r.release()
	return err
}

// Flush is a submitted fdatasync.
type Flush struct {
	r  *Ring
	id uint64
	f  *os.File

	mu   sync.Mutex // held by the goroutine waiting for the completion
	done bool       // the completion was reaped; err is its result
	err  error
}

// Fdatasync submits fdatasync(2) of f and answers it without waiting.
// f must stay open until Wait returns. An error means nothing was
// submitted: the caller flushes f itself.
func (r *Ring) Fdatasync(f *os.File) (*Flush, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fl *Flush
	var serr error
	if err := rc.Control(func(fd uintptr) { fl, serr = r.submit(f, int32(fd)) }); err != nil {
		return nil, err
	}
	return fl, serr
}

// submit queues one IORING_OP_FSYNC and enters the kernel to start it.
func (r *Ring) submit(f *os.File, fd int32) (*Flush, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, os.ErrClosed
	case r.broken != nil:
		return nil, r.broken
	case r.refused != nil:
		return nil, r.refused
	case r.inflight >= entries:
		return nil, errors.New("uring: too many flushes in flight")
	}
	tail := *r.sqTail // only this side writes it
	if tail-atomic.LoadUint32(r.sqHead) >= entries {
		return nil, errors.New("uring: submission queue full")
	}
	idx := tail & r.sqMask
	sqe := (*[sqeSize]byte)(unsafe.Pointer(&r.sqes[int(idx)*sqeSize]))
	*sqe = [sqeSize]byte{}
	r.next++
	id := r.next
	sqe[0] = opFsync
	*(*int32)(unsafe.Pointer(&sqe[4])) = fd
	*(*uint32)(unsafe.Pointer(&sqe[28])) = fsyncDatasync
	*(*uint64)(unsafe.Pointer(&sqe[32])) = id
	*(*uint32)(unsafe.Add(r.sqArray, uintptr(idx)*4)) = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	for {
		n, _, errno := syscall.Syscall6(sysEnter, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n != 1 {
			// The entry may still sit in the queue: the ring is not
			// entered again.
			r.broken = fmt.Errorf("uring: io_uring_enter submitted %d: %w", n, errno)
			return nil, r.broken
		}
		break
	}
	r.inflight++
	return &Flush{r: r, id: id, f: f}, nil
}

// reap moves every posted completion into r.done. r.mu is held.
func (r *Ring) reap() {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		cqe := unsafe.Add(r.cqes, uintptr(head&r.cqMask)*cqeSize)
		r.done[*(*uint64)(cqe)] = *(*int32)(unsafe.Add(cqe, 8))
	}
	atomic.StoreUint32(r.cqHead, head)
}

// Wait blocks until the flush completed and answers its result: nil, or
// the error fdatasync(2) would have answered. The waiting goroutine is
// parked in the runtime's poller, holding no P. Wait may be called again,
// and by several goroutines at once: every call answers the same result.
// It answers nothing else: where the eventfd cannot be read, it looks at
// the completion queue every recheck until the flush has completed.
func (fl *Flush) Wait() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if !fl.done {
		fl.done = true
		res := fl.wait()
		if completed != nil {
			res = completed(res)
		}
		switch {
		case refusal(res):
			fl.err = fl.fallback(syscall.Errno(-res))
		case res < 0:
			fl.err = syscall.Errno(-res)
		}
	}
	return fl.err
}

// completed, when set, substitutes the result of each reaped completion
// (0, or a negated errno) before Wait looks at it, so that results this
// kernel does not give can be tested.
var completed func(res int32) int32

// refusal reports whether a completion's result may be the kernel refusing
// the flush operation itself: EINVAL from a kernel that lacks it (before
// 5.6), EOPNOTSUPP from one that does not implement it (gVisor). EINVAL
// is also what fdatasync(2) answers for a descriptor that cannot be
// synced (a pipe), so Wait tells the two apart by fdatasync's own answer.
func refusal(res int32) bool {
	return res == -int32(syscall.EINVAL) || res == -int32(syscall.EOPNOTSUPP)
}

// fallback flushes fl.f with fdatasync(2) after the ring answered refused
// to a flush, and answers fdatasync's result: nothing was synced by the
// ring, so only fdatasync can say the data is durable. When fdatasync
// succeeds, the kernel refused the operation, not the file: the ring
// takes no flush again, and Fdatasync answers an error wrapping
// errors.ErrUnsupported, so that its callers flush with fdatasync(2)
// themselves. When fdatasync fails, its error is the flush's, and the
// ring stays as it was (a pipe refuses both alike).
func (fl *Flush) fallback(refused syscall.Errno) error {
	rc, err := fl.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("uring: flush refused (%w), fallback: %w", refused, err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = syscall.Fdatasync(int(fd)); serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("uring: flush refused (%w), fallback: %w", refused, err)
	}
	if serr != nil {
		return serr
	}
	r := fl.r
	r.mu.Lock()
	if r.refused == nil {
		r.refused = fmt.Errorf("uring: the kernel refused IORING_OP_FSYNC: %w (%w)", refused, errors.ErrUnsupported)
	}
	r.mu.Unlock()
	return nil
}

// wait blocks until the flush's completion is reaped, frees its place in
// the ring and answers its result (0, or a negated errno). fl.mu is held.
func (fl *Flush) wait() int32 {
	r := fl.r
	defer runtime.KeepAlive(fl.f)
	r.wmu.Lock()
	defer r.wmu.Unlock()
	var b [8]byte
	for {
		r.mu.Lock()
		r.reap()
		res, ok := r.done[fl.id]
		if ok {
			delete(r.done, fl.id)
			r.inflight--
		}
		r.mu.Unlock()
		if ok {
			return res
		}
		// The kernel signals the eventfd after posting a completion, so
		// one posted after the reap above makes this read return. The
		// runtime polls the eventfd when a P runs out of work, or every
		// 10 ms: on a process whose Ps are all busy, the deadline (a
		// timer, which every P checks as it schedules) makes the wait
		// look at the completion queue again at least every recheck.
		err := r.ev.SetReadDeadline(time.Now().Add(recheck))
		if err == nil {
			_, err = r.ev.Read(b[:])
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			// The eventfd is only the wake-up: a Wait that stopped here
			// would leave its flush holding a place in the ring for
			// good, and Close failing. Where the poller does not watch
			// the eventfd (os.ErrNoDeadline) or a read fails, the
			// completion queue is looked at again after recheck.
			time.Sleep(recheck)
		}
	}
}
