package loophost

// sliceMemory is a linear memory in a Go slice, used when a mapping
// cannot be made. Growing may move it.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := make([]byte, size, max(size, min(2*uint64(cap(m.buf)), m.max)))
	copy(grown, m.buf)
	m.buf = grown
	return m.buf
}

func (m *sliceMemory) Free() {}
