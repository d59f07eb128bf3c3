//go:build unix && !linux

package loophost

const mapNoReserve = 0
