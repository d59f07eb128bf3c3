package idem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Record types; doc.go is the specification.
const (
	typeClaim   = 1
	typeAnswer  = 2
	typeRelease = 3
	typeHinted  = 4 // a claim with a hint: see doc.go

	frameHeader = 8
	version     = 1
	fixedBytes  = 13 // version, type, at_ms, scope length, key length
	digestBytes = 32

	// MaxKeyBytes is the longest Idempotency-Key.
	MaxKeyBytes = 256
	// MaxScopeBytes is the longest scope.
	MaxScopeBytes = 255
	// MaxPayloadBytes bounds one record's payload (and so an answer body).
	MaxPayloadBytes = 64 << 20
	// MaxHintBytes is the longest claim hint.
	MaxHintBytes = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errPayload = errors.New("idem: malformed record payload")

// record is one decoded requests.log record.
type record struct {
	Type   byte
	AtMs   int64
	Scope  string
	Key    string
	Digest [digestBytes]byte // claim, hinted claim
	Hint   []byte            // hinted claim
	Status int               // answer
	Body   []byte            // answer
}

// appendFrame appends r's frame to dst.
func appendFrame(dst []byte, r *record) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, frameHeader)...)
	dst = append(dst, version, r.Type)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.AtMs))
	dst = append(dst, byte(len(r.Scope)))
	dst = append(dst, r.Scope...)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.Key)))
	dst = append(dst, r.Key...)
	switch r.Type {
	case typeClaim:
		dst = append(dst, r.Digest[:]...)
	case typeHinted:
		dst = append(dst, r.Digest[:]...)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.Hint)))
		dst = append(dst, r.Hint...)
	case typeAnswer:
		dst = binary.LittleEndian.AppendUint16(dst, uint16(r.Status))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.Body)))
		dst = append(dst, r.Body...)
	}
	payload := dst[start+frameHeader:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

// checkRecord validates what a caller may put in a record.
func checkRecord(r *record) error {
	if len(r.Scope) == 0 || len(r.Scope) > MaxScopeBytes {
		return fmt.Errorf("idem: scope must be 1..%d bytes", MaxScopeBytes)
	}
	if len(r.Key) == 0 || len(r.Key) > MaxKeyBytes {
		return fmt.Errorf("%w: key must be 1..%d bytes", ErrInvalidKey, MaxKeyBytes)
	}
	if r.Type == typeHinted && (len(r.Hint) == 0 || len(r.Hint) > MaxHintBytes) {
		return fmt.Errorf("idem: hint must be 1..%d bytes", MaxHintBytes)
	}
	if r.Type == typeAnswer && (r.Status < 100 || r.Status > 999 || fixedBytes+len(r.Scope)+len(r.Key)+6+len(r.Body) > MaxPayloadBytes) {
		return fmt.Errorf("idem: answer status %d or body of %d bytes out of range", r.Status, len(r.Body))
	}
	return nil
}

// frameStatus says how a frame at the start of a buffer decodes.
type frameStatus int

const (
	frameOK         frameStatus = iota
	frameIncomplete             // the buffer ends inside the frame
	frameDamaged                // a complete frame that does not check or decode
)

// nextFrame decodes the frame at the start of b, answering the record and
// the frame's size.
func nextFrame(b []byte) (record, int, frameStatus) {
	if len(b) < frameHeader {
		return record{}, 0, frameIncomplete
	}
	n := binary.LittleEndian.Uint32(b)
	if n > MaxPayloadBytes {
		return record{}, 0, frameDamaged
	}
	if uint64(len(b)-frameHeader) < uint64(n) {
		if lengthDamaged(b) {
			return record{}, 0, frameDamaged
		}
		return record{}, 0, frameIncomplete
	}
	payload := b[frameHeader : frameHeader+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return record{}, 0, frameDamaged
	}
	r, err := decodePayload(payload)
	if err != nil {
		return record{}, 0, frameDamaged
	}
	return r, frameHeader + int(n), frameOK
}

// lengthDamaged reports whether b, whose frame says it ends past the end
// of b, holds a complete frame all the same: a payload whose own fields
// end within b, pass the frame's checksum and decode. Its length field was
// damaged; an incomplete write cannot look like that, because a payload
// ends exactly where its frame's length says, so a prefix of one ends past
// b by its own fields too.
func lengthDamaged(b []byte) bool {
	p := b[frameHeader:]
	end, ok := payloadEnd(p)
	if !ok || end > len(p) {
		return false
	}
	if crc32.Checksum(p[:end], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return false
	}
	_, err := decodePayload(p[:end])
	return err == nil
}

// payloadEnd answers the length of the payload at the start of p as its
// own fields give it, when p holds those fields.
func payloadEnd(p []byte) (int, bool) {
	if len(p) < fixedBytes-2 {
		return 0, false
	}
	at := fixedBytes - 2 + int(p[10])
	if len(p) < at+2 {
		return 0, false
	}
	at += 2 + int(binary.LittleEndian.Uint16(p[at:]))
	switch p[1] {
	case typeClaim:
		return at + digestBytes, true
	case typeHinted:
		at += digestBytes
		if len(p) < at+2 {
			return 0, false
		}
		return at + 2 + int(binary.LittleEndian.Uint16(p[at:])), true
	case typeAnswer:
		if len(p) < at+6 {
			return 0, false
		}
		end := uint64(at) + 6 + uint64(binary.LittleEndian.Uint32(p[at+2:]))
		if end > uint64(len(p)) {
			return 0, false
		}
		return int(end), true
	case typeRelease:
		return at, true
	}
	return 0, false
}

// decodePayload decodes one record payload exactly.
func decodePayload(p []byte) (record, error) {
	var r record
	if len(p) < fixedBytes-2 || p[0] != version {
		return r, errPayload
	}
	r.Type = p[1]
	r.AtMs = int64(binary.LittleEndian.Uint64(p[2:]))
	s := int(p[10])
	p = p[11:]
	if s == 0 || len(p) < s+2 {
		return r, errPayload
	}
	r.Scope, p = string(p[:s]), p[s:]
	k := int(binary.LittleEndian.Uint16(p))
	p = p[2:]
	if k == 0 || k > MaxKeyBytes || len(p) < k {
		return r, errPayload
	}
	r.Key, p = string(p[:k]), p[k:]
	switch r.Type {
	case typeClaim:
		if len(p) != digestBytes {
			return r, errPayload
		}
		copy(r.Digest[:], p)
	case typeHinted:
		if len(p) < digestBytes+2 {
			return r, errPayload
		}
		copy(r.Digest[:], p)
		h := int(binary.LittleEndian.Uint16(p[digestBytes:]))
		p = p[digestBytes+2:]
		if h == 0 || h > MaxHintBytes || len(p) != h {
			return r, errPayload
		}
		r.Hint = append([]byte(nil), p...)
	case typeAnswer:
		if len(p) < 6 {
			return r, errPayload
		}
		r.Status = int(binary.LittleEndian.Uint16(p))
		bl := binary.LittleEndian.Uint32(p[2:])
		p = p[6:]
		if uint64(len(p)) != uint64(bl) || r.Status < 100 || r.Status > 999 {
			return r, errPayload
		}
		r.Body = append([]byte(nil), p...)
	case typeRelease:
		if len(p) != 0 {
			return r, errPayload
		}
	default:
		return r, errPayload
	}
	return r, nil
}

// allZero reports whether b holds nothing but zero bytes.
func allZero(b []byte) bool {
	for len(b) > 0 {
		k := min(len(b), len(zeroPage))
		if !bytes.Equal(b[:k], zeroPage[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}

var zeroPage [4096]byte

// zeroLength reports whether b starts with a length field of zero, which
// starts no frame (a payload is never empty), so neither a frame nor an
// incomplete write of one.
func zeroLength(b []byte) bool {
	return len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0
}

// tornSector is the unit a crash leaves unwritten: a block of the file
// whose data never reached the disk reads as zero, from a boundary of
// this alignment in the file.
const tornSector = 512

// tornIntoZeros reports whether the frame at off in data, which does not
// check out, is a write cut short by a crash whose file size became
// durable without all of its data: nothing but zero bytes follows its
// last byte that is not zero, and its length says it runs past the end
// of the sector holding that byte, so at least its last sector never
// reached the disk. A frame with none of these signs is damage: the bytes
// of a write up to a sector boundary reach the disk whole, so a frame
// that ends within sectors holding data was written whole. So is a frame
// whose length field was damaged (lengthDamaged), and one announcing a
// length no frame has.
func tornIntoZeros(data []byte, off int) bool {
	b := data[off:]
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	if len(b) < frameHeader || end == 0 {
		return end == 0
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n == 0 || n > MaxPayloadBytes || lengthDamaged(b) {
		return false
	}
	written := (uint64(off+end) + tornSector - 1) / tornSector * tornSector
	return uint64(off)+frameHeader+n > written
}
