package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
)

// Frame and payload layout; doc.go is the specification.
const (
	frameHeaderSize = 8
	payloadVersion  = 1
	flagOrigin      = 1 << 0
	payloadFixed    = 24 // version, flags, sequence, recorded_at_ms, kind length, data length
	maxKindBytes    = 1<<16 - 1

	// DefaultMaxRecordBytes bounds one frame's payload.
	DefaultMaxRecordBytes = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadPayload says a payload passed its checksum but does not decode.
var errBadPayload = errors.New("journal: malformed record payload")

// payloadSize is the encoded payload size of r.
func payloadSize(r *Record) int {
	n := payloadFixed + len(r.Kind) + len(r.Data)
	if r.Origin != nil {
		n += 4 + len(r.Origin)
	}
	return n
}

// frameSize is the on-disk size of r's frame.
func frameSize(r *Record) int { return frameHeaderSize + payloadSize(r) }

// checkRecord validates the caller-supplied parts of r.
func checkRecord(r *Record, maxPayload int) error {
	if r.Kind == "" || len(r.Kind) > maxKindBytes {
		return fmt.Errorf("%w: record kind must be 1..%d bytes, got %d", ErrInvalid, maxKindBytes, len(r.Kind))
	}
	if n := payloadSize(r); n > maxPayload {
		return fmt.Errorf("%w: record %q encodes to %d bytes, the limit is %d", ErrTooLarge, r.Kind, n, maxPayload)
	}
	if len(r.Data) > 0 && !json.Valid(r.Data) {
		return fmt.Errorf("%w: record %q data is not valid JSON", ErrInvalid, r.Kind)
	}
	if r.Origin != nil && !json.Valid(r.Origin) {
		return fmt.Errorf("%w: record %q origin is not valid JSON", ErrInvalid, r.Kind)
	}
	return nil
}

// appendFrame appends r's frame to dst.
func appendFrame(dst []byte, r *Record) []byte {
	n := payloadSize(r)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, 0) // checksum, filled below
	flags := byte(0)
	if r.Origin != nil {
		flags |= flagOrigin
	}
	dst = append(dst, payloadVersion, flags)
	dst = binary.LittleEndian.AppendUint64(dst, r.Sequence)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.RecordedAtMs))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.Kind)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.Data)))
	dst = append(dst, r.Kind...)
	dst = append(dst, r.Data...)
	if r.Origin != nil {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.Origin)))
		dst = append(dst, r.Origin...)
	}
	payload := dst[start+frameHeaderSize:]
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

// payloadView is a decoded payload whose byte fields alias it.
type payloadView struct {
	seq       uint64
	ms        int64
	kind      []byte
	data      []byte // nil when empty
	origin    []byte
	hasOrigin bool
}

// parsePayload checks and splits a checksummed payload without allocating.
func parsePayload(p []byte) (payloadView, error) {
	var v payloadView
	if len(p) < payloadFixed {
		return v, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", errBadPayload, len(p), payloadFixed)
	}
	if p[0] != payloadVersion {
		return v, fmt.Errorf("%w: version %d", errBadPayload, p[0])
	}
	flags := p[1]
	if flags&^flagOrigin != 0 {
		return v, fmt.Errorf("%w: unknown flags %#x", errBadPayload, flags)
	}
	v.seq = binary.LittleEndian.Uint64(p[2:])
	v.ms = int64(binary.LittleEndian.Uint64(p[10:]))
	kindLen := int(binary.LittleEndian.Uint16(p[18:]))
	dataLen := int(binary.LittleEndian.Uint32(p[20:]))
	rest := p[payloadFixed:]
	if kindLen == 0 || kindLen > len(rest) || dataLen > len(rest)-kindLen {
		return v, fmt.Errorf("%w: kind/data lengths %d/%d exceed the payload", errBadPayload, kindLen, dataLen)
	}
	v.kind = rest[:kindLen:kindLen]
	rest = rest[kindLen:]
	if dataLen > 0 {
		v.data = rest[:dataLen:dataLen]
	}
	rest = rest[dataLen:]
	if flags&flagOrigin != 0 {
		if len(rest) < 4 {
			return v, fmt.Errorf("%w: origin length missing", errBadPayload)
		}
		n := int(binary.LittleEndian.Uint32(rest))
		rest = rest[4:]
		if n != len(rest) {
			return v, fmt.Errorf("%w: origin length %d, %d bytes left", errBadPayload, n, len(rest))
		}
		v.origin, v.hasOrigin = rest[:n:n], true
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return v, fmt.Errorf("%w: %d trailing bytes", errBadPayload, len(rest))
	}
	return v, nil
}

// payloadOK reports whether parsePayload accepts p, without building the
// view: the hot loops check with it and call parsePayload only to name
// what is wrong.
func payloadOK(p []byte) bool {
	// Version and flags: 1, then 0 or flagOrigin.
	if len(p) < payloadFixed || binary.LittleEndian.Uint16(p)&^(flagOrigin<<8) != payloadVersion {
		return false
	}
	kindLen := uint64(binary.LittleEndian.Uint16(p[18:]))
	end := payloadFixed + kindLen + uint64(binary.LittleEndian.Uint32(p[20:]))
	if kindLen == 0 || end > uint64(len(p)) {
		return false
	}
	rest := uint64(len(p)) - end
	if p[1] == 0 {
		return rest == 0
	}
	return rest >= 4 && uint64(binary.LittleEndian.Uint32(p[end:])) == rest-4
}

// decodePayload decodes a checksummed payload. The returned record's Data
// and Origin alias p unless copyBytes is set.
func decodePayload(p []byte, copyBytes bool) (Record, error) {
	v, err := parsePayload(p)
	if err != nil {
		return Record{}, err
	}
	r := Record{Sequence: v.seq, RecordedAtMs: v.ms, Kind: string(v.kind), Data: v.data}
	if v.hasOrigin {
		r.Origin = v.origin
	}
	if copyBytes {
		if r.Data != nil {
			r.Data = append(json.RawMessage(nil), r.Data...)
		}
		if r.Origin != nil {
			r.Origin = append(json.RawMessage{}, r.Origin...)
		}
	}
	return r, nil
}

// Frame decoding outcomes other than success.
var (
	errShortFrame = errors.New("journal: incomplete frame")
	errChecksum   = errors.New("journal: frame checksum mismatch")
	errFrameSize  = errors.New("journal: frame length exceeds the record limit")
)

// decodeFrame decodes the frame at the start of b and returns its record
// (aliasing b) and its total size. errShortFrame means b ends inside the
// frame.
func decodeFrame(b []byte, maxPayload int) (Record, int, error) {
	if len(b) < frameHeaderSize {
		return Record{}, 0, errShortFrame
	}
	n := binary.LittleEndian.Uint32(b)
	sum := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-frameHeaderSize) {
		if uint64(n) > uint64(maxPayload) {
			return Record{}, 0, fmt.Errorf("%w: %d bytes", errFrameSize, n)
		}
		return Record{}, 0, errShortFrame
	}
	p := b[frameHeaderSize : frameHeaderSize+int(n)]
	if crc32.Checksum(p, castagnoli) != sum {
		return Record{}, 0, errChecksum
	}
	r, err := decodePayload(p, false)
	if err != nil {
		return Record{}, 0, err
	}
	return r, frameHeaderSize + int(n), nil
}
