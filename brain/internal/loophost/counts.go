package loophost

import "fmt"

// checkCounts refuses a module whose top-level sections declare more
// entries than they have bytes. Every entry of a section's vector takes at
// least one byte, so such a module is malformed; it is refused before the
// compiler sees it because wazero sizes its allocations by the declared
// counts, and a few bytes declaring a hundred million exports would
// otherwise cost gigabytes.
func checkCounts(b []byte) error {
	if len(b) < 8 {
		return nil // the compiler says what is wrong
	}
	for i := 8; i < len(b); {
		id := b[i]
		size, n := uleb32(b[i+1:])
		body := i + 1 + n
		if n == 0 || body+int(size) > len(b) || body+int(size) < body {
			return nil
		}
		switch id {
		case 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13: // sections that are vectors
			if count, m := uleb32(b[body : body+int(size)]); m > 0 && uint64(count) > uint64(size) {
				return fmt.Errorf("section %d declares %d entries in %d bytes", id, count, size)
			}
		case 12: // the data count: the data section's entries
			if count, m := uleb32(b[body : body+int(size)]); m > 0 && uint64(count) > uint64(len(b)) {
				return fmt.Errorf("the data count section declares %d segments in a module of %d bytes", count, len(b))
			}
		}
		i = body + int(size)
	}
	return nil
}
