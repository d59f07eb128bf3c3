package journal

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Sessions lists a session directory only when it opens as a session:
// its journal holds a record, or is damaged. Telling them apart reads the
// header of the first frame of the session's first segment; only a
// directory where that frame is not found whole (what a create cut short
// leaves, see unborn.go, or damage) is opened, which removes what the
// create left. A session found holding a record is remembered (a hash of
// its id, until it is deleted), so that the listings after the first read
// nothing but the sessions directory.

// born is the set of sessions known to hold a record.
type born struct {
	mu   sync.Mutex
	seed maphash.Seed
	ids  map[uint64]struct{}
	gen  uint64 // bumped by forget
}

// has reports whether id is known to hold a record, and the generation to
// pass to add after looking at the disk.
func (b *born) has(id string) (bool, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.seed = maphash.MakeSeed()
		b.ids = make(map[uint64]struct{})
	}
	_, ok := b.ids[maphash.String(b.seed, id)]
	return ok, b.gen
}

// add remembers id, unless a session was forgotten since has answered gen
// (a Delete may have removed it meanwhile).
func (b *born) add(id string, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gen == gen {
		b.ids[maphash.String(b.seed, id)] = struct{}{}
	}
}

// forget drops id, whose directory is being removed.
func (b *born) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	if b.ids != nil {
		delete(b.ids, maphash.String(b.seed, id))
	}
}

// listed reports whether Sessions lists the session directory id. A
// directory whose first frame is not found whole is opened, as its first
// use would open it: what a create cut short left is then removed (see
// forgetUnborn), and the open tells a session with no record from a
// damaged one. Only ErrClosed is answered as an error; a session that
// cannot be read is listed.
func (fs *FileStore) listed(id string) (bool, error) {
	ok, gen := fs.born.has(id)
	if ok {
		return true, nil
	}
	if !fs.holdsRecord(filepath.Join(fs.dir, id)) {
		s, err := fs.readySession(id)
		switch {
		case errors.Is(err, ErrClosed):
			return false, err
		case errors.Is(err, ErrDamaged):
		case err != nil:
			return true, nil
		default:
			next := s.committedNext
			s.mu.Unlock()
			fs.release(s)
			if next == 1 {
				return false, nil
			}
		}
	}
	fs.born.add(id, gen)
	return true, nil
}

// holdsRecord reports whether the session directory dir opens as a
// session: its first segment holds a complete first frame, or the journal
// is damaged. It answers false only for what a create cut short leaves:
// no segment, or a first segment, alone, that is empty, ends inside its
// first frame or starts with a zero length (which an open cuts as an
// incomplete write when nothing but zeros follow). What cannot be read is
// listed.
func (fs *FileStore) holdsRecord(dir string) bool {
	jdir := filepath.Join(dir, "journal")
	first := filepath.Join(jdir, segmentName(1))
	f, err := openRegular(first)
	if errors.Is(err, os.ErrNotExist) {
		return holdsSegment(jdir, false)
	}
	if err != nil {
		return true
	}
	defer f.Close()
	var h [frameHeaderSize]byte
	n, err := f.ReadAt(h[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return true
	}
	if n == frameHeaderSize {
		fi, err := f.Stat()
		if err != nil {
			return true
		}
		l := int64(binary.LittleEndian.Uint32(h[:4]))
		if l > int64(fs.opts.MaxRecordBytes) {
			return true // damage
		}
		if fi.Size()-frameHeaderSize >= l && l != 0 {
			// A complete first frame, unless the file ends in zeros
			// that it runs into: the first sectors of a first write a
			// crash cut short (see tornIntoZeros), which an open cuts.
			// A length of zero may start the zeros a crash left of the
			// first write, which an open cuts too.
			if torn, err := endsTornFirst(f, fi.Size(), fs.opts.MaxRecordBytes); err != nil || !torn {
				return true
			}
		}
		if l != 0 {
			if _, damaged, err := lengthDamaged(first, 0); err != nil || damaged {
				return true
			}
		}
	}
	// The first segment is empty or ends inside its first frame: the
	// journal is damaged when another segment that holds anything follows
	// it (one that holds nothing a roll of the crashed round created).
	return holdsSegment(jdir, true)
}

// endsTornFirst reports whether the first frame of f (size bytes), whose
// length says it is complete, runs into the zeros a crash left of the
// first write (tornIntoZeros). A file whose last byte is not zero ends in
// no such zeros, and is answered after a read of that byte.
func endsTornFirst(f *os.File, size int64, maxRecord int) (bool, error) {
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil || last[0] != 0 {
		return false, err
	}
	return tornIntoZeros(f, 0, size, maxRecord)
}

// holdsSegment reports whether jdir holds a segment file, or cannot be
// read. With butFirst, the first segment and segments that hold nothing
// (see holdsNothing) are not counted.
func holdsSegment(jdir string, butFirst bool) bool {
	entries, err := os.ReadDir(jdir)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, e := range entries {
		first, ok := parseSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if !butFirst || first != 1 && !holdsNothing(filepath.Join(jdir, e.Name())) {
			return true
		}
	}
	return false
}
