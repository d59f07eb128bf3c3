//go:build unix && !linux

package loophost

const mapNoReserve = 0

// zeroUsed makes mem, the part of a kept mapping a guest was given, all
// zero again.
func zeroUsed(mem []byte) { clear(mem) }
