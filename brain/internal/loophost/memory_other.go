//go:build !unix

package loophost

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator answers nil: wazero's own allocator is used.
func memoryAllocator() (experimental.MemoryAllocator, func()) { return nil, func() {} }
