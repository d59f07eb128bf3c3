package journal

import "encoding/binary"

func leUint64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
