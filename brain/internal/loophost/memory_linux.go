package loophost

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE
