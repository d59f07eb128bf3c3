package loophost

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// Wasm binary format, as far as coalesceData reads it.
const (
	sectionMemory    = 5
	sectionData      = 11
	sectionDataCount = 12
	opI32Const       = 0x41
	opEnd            = 0x0b
	wasmPage         = 1 << 16
	// dataGapFill is the largest gap between two data segments that a
	// merged segment fills with zeros: less than a page, so that no page
	// that no segment writes is written.
	dataGapFill = 1024
	// maxDataFill bounds the zeros merging may add, beyond the size of
	// the data section itself.
	maxDataFill = 1 << 20
)

// coalesceData answers module b with its data section rewritten into
// fewer, larger active segments that leave linear memory exactly as the
// original ones do, and true; or b itself and false when it cannot tell
// that they would.
//
// A Go guest's linker writes its initial memory as tens of thousands of
// active segments of a few bytes each (34,971 in the default loop), and
// instantiation evaluates each one's offset expression and copies it on
// its own: most of the cost of a fresh instance. Merged across gaps
// smaller than dataGapFill, they become a handful.
//
// The rewrite is made only when every segment is active for memory 0
// with an i32.const offset, the module declares its one memory itself,
// every segment lies within that memory's initial size, no two segments
// overlap (so their order does not matter), there is no data count
// section (so no instruction names a segment by its index), and the zeros
// merging adds come to at most the data section's size plus 1 MiB. Anything
// else, malformed bytes included, leaves the module as it is for the
// compiler to judge; every other section is kept byte for byte.
func coalesceData(b []byte) ([]byte, bool) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return b, false
	}
	var (
		memPages         = -1
		dataAt, dataBody int // the data section's header and body
		dataEnd          int
	)
	secs, ok := sections(b)
	if !ok {
		return b, false
	}
	for _, sec := range secs {
		body := sec.body
		switch sec.id {
		case sectionMemory:
			count, m := uleb32(b[body:])
			if m == 0 || count != 1 || body+m >= len(b) {
				return b, false
			}
			flags := b[body+m]
			if flags > 1 { // shared or 64-bit memories are left alone
				return b, false
			}
			min, k := uleb32(b[body+m+1:])
			if k == 0 {
				return b, false
			}
			memPages = int(min)
		case sectionDataCount:
			return b, false
		case sectionData:
			dataAt, dataBody, dataEnd = sec.at, sec.body, sec.end
		}
	}
	if memPages < 0 || dataAt == 0 {
		return b, false
	}
	segs, ok := activeSegments(b[dataBody:dataEnd], uint64(memPages)*wasmPage)
	if !ok || len(segs) < 2 {
		return b, false
	}
	slices.SortStableFunc(segs, func(x, y segment) int { return cmp.Compare(x.off, y.off) })
	for k := 1; k < len(segs); k++ {
		if segs[k].off < segs[k-1].off+uint64(len(segs[k-1].init)) {
			return b, false
		}
	}
	// The zeros that merging writes are bounded, so that a small module
	// cannot make the host build an image far larger than itself.
	var filled uint64
	for k := 1; k < len(segs); k++ {
		if gap := segs[k].off - (segs[k-1].off + uint64(len(segs[k-1].init))); gap <= dataGapFill {
			filled += gap
		}
	}
	if filled > uint64(dataEnd-dataBody)+maxDataFill {
		return b, false
	}
	var merged []segment
	for _, s := range segs {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if end := last.off + uint64(len(last.init)); s.off-end <= dataGapFill {
				last.init = append(last.init, make([]byte, s.off-end)...)
				last.init = append(last.init, s.init...)
				continue
			}
		}
		merged = append(merged, segment{off: s.off, init: slices.Clone(s.init)})
	}
	if len(merged) == len(segs) {
		return b, false
	}
	var sec []byte
	sec = binary.AppendUvarint(sec, uint64(len(merged)))
	for _, s := range merged {
		sec = append(sec, 0, opI32Const)
		sec = appendSleb32(sec, int32(uint32(s.off)))
		sec = append(sec, opEnd)
		sec = binary.AppendUvarint(sec, uint64(len(s.init)))
		sec = append(sec, s.init...)
	}
	out := make([]byte, 0, len(b)-(dataEnd-dataAt)+len(sec)+8)
	out = append(out, b[:dataAt]...)
	out = append(out, sectionData)
	out = binary.AppendUvarint(out, uint64(len(sec)))
	out = append(out, sec...)
	out = append(out, b[dataEnd:]...)
	return out, true
}

// section is one top-level section of a module: its id, where its header
// starts, and its body b[body:end].
type section struct {
	id            byte
	at, body, end int
}

// sections answers the top-level sections of module b after its 8-byte
// header, up to the first whose header or size runs past the end, and
// whether there was none such.
func sections(b []byte) ([]section, bool) {
	var out []section
	for i := 8; i < len(b); {
		size, n := uleb32(b[i+1:])
		body := i + 1 + n
		end := body + int(size)
		if n == 0 || end > len(b) || end < body {
			return out, false
		}
		out = append(out, section{id: b[i], at: i, body: body, end: end})
		i = end
	}
	return out, true
}

// segment is an active data segment: init written at off.
type segment struct {
	off  uint64
	init []byte
}

// activeSegments reads a data section's body whose segments are all
// active for memory 0 with an i32.const offset and lie within memSize
// bytes; ok is false otherwise or if the body is malformed.
func activeSegments(body []byte, memSize uint64) (segs []segment, ok bool) {
	count, n := uleb32(body)
	if n == 0 || uint64(count) > uint64(len(body)) {
		return nil, false
	}
	segs = make([]segment, 0, count)
	at := n
	for range count {
		if at+2 > len(body) || body[at] != 0 || body[at+1] != opI32Const {
			return nil, false
		}
		v, k := sleb32(body[at+2:])
		at += 2 + k
		if k == 0 || at >= len(body) || body[at] != opEnd {
			return nil, false
		}
		size, m := uleb32(body[at+1:])
		at += 1 + m
		if m == 0 || uint64(size) > uint64(len(body)-at) {
			return nil, false
		}
		off := uint64(uint32(v))
		if off+uint64(size) > memSize {
			return nil, false
		}
		segs = append(segs, segment{off: off, init: body[at : at+int(size)]})
		at += int(size)
	}
	return segs, at == len(body)
}

// uleb32 decodes an unsigned LEB128 number of at most 32 bits and
// answers it with its length, or a length of 0 when b does not start
// with one.
func uleb32(b []byte) (uint32, int) {
	var v uint64
	for i := 0; i < 5 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			if v > 0xffffffff {
				return 0, 0
			}
			return uint32(v), i + 1
		}
	}
	return 0, 0
}

// sleb32 decodes a signed LEB128 number of at most 32 bits as uleb32
// does.
func sleb32(b []byte) (int32, int) {
	var v int64
	for i := 0; i < 5 && i < len(b); i++ {
		v |= int64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			if shift := 7 * (i + 1); shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, 0
			}
			return int32(v), i + 1
		}
	}
	return 0, 0
}

// appendSleb32 appends v as a signed LEB128 number.
func appendSleb32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
