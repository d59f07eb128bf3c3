package loophost

import "encoding/binary"

// sectionTable is the id of the table section.
const sectionTable = 4

// An instance allocates eight bytes of the host's memory per table entry,
// outside its linear memory, and table.grow may grow a table without a
// maximum to 2^32 entries (32 GiB). Admission refuses a module whose
// tables declare more than maxTableEntries entries in all (checkTables),
// and a module is compiled with the maxima of its tables lowered so that
// they sum to at most maxTableEntries (boundTables): a grow past them
// fails (-1), as a memory.grow past the linear memory limit does. Tables
// cannot be imported (compile.go), so these are all of an instance's.

// table is one entry of a table section: the bytes before its limits
// (the reference type, after the prefix of a table with an initializer),
// its limits, and the bytes after them (the initializer, if any).
type table struct {
	head   []byte
	min    uint32
	max    uint32
	hasMax bool
	tail   []byte
}

// parseTables reads the body of a table section as the compiler does; ok
// is false where the bytes stop making sense (the compiler refuses them),
// and for shared tables, which it refuses too.
func parseTables(body []byte) (tables []table, ok bool) {
	r := &reader{b: body}
	n, ok := r.u32()
	if !ok || uint64(n)*3 > uint64(r.left()) {
		return nil, false
	}
	tables = make([]table, 0, n)
	for range n {
		start := r.at
		b, ok := r.byte()
		withInit := ok && b == 0x40
		if withInit {
			if reserved, ok := r.byte(); !ok || reserved != 0 {
				return nil, false
			}
			b, ok = r.byte()
		}
		if !ok {
			return nil, false
		}
		if b == 0x63 || b == 0x64 { // (ref null? <heap type>), the heap type an s33
			k := lebLen(r.b[r.at:])
			if k == 0 {
				return nil, false
			}
			r.at += k
		}
		t := table{head: body[start:r.at]}
		flags, ok := r.byte()
		if !ok || flags > 1 {
			return nil, false
		}
		if t.min, ok = r.u32(); !ok {
			return nil, false
		}
		if flags == 1 {
			if t.max, ok = r.u32(); !ok {
				return nil, false
			}
			t.hasMax = true
		}
		at := r.at
		if withInit && !r.constExpr() {
			return nil, false
		}
		if r.at > len(body) {
			return nil, false
		}
		t.tail = body[at:r.at]
		tables = append(tables, t)
	}
	return tables, r.at == len(body)
}

// boundTables answers b with the maxima of its tables lowered so that
// they sum to at most maxTableEntries, and whether it changed anything.
// Tables whose maxima already sum to no more are left as they are;
// otherwise what the declared entries leave of the bound is shared out
// evenly, each table's maximum becoming at most its initial size plus its
// share. A module whose table section the compiler would refuse (a
// maximum below its table's initial size included), or whose tables
// declare more than the bound (refused at admission), is answered as it
// is.
func boundTables(b []byte) ([]byte, bool) {
	secs, ok := sections(b)
	if !ok {
		return b, false
	}
	for _, sec := range secs {
		if sec.id != sectionTable {
			continue
		}
		tables, ok := parseTables(b[sec.body:sec.end])
		if !ok || len(tables) == 0 {
			return b, false
		}
		var mins, maxima uint64
		for _, t := range tables {
			if t.hasMax && t.max < t.min {
				return b, false // refused by the compiler
			}
			mins += uint64(t.min)
			if t.hasMax {
				maxima += uint64(t.max)
			} else {
				maxima += 1 << 32
			}
		}
		if mins > maxTableEntries || maxima <= maxTableEntries {
			return b, false
		}
		share := uint32((maxTableEntries - mins) / uint64(len(tables)))
		body := binary.AppendUvarint(nil, uint64(len(tables)))
		for _, t := range tables {
			if !t.hasMax || t.max > t.min+share {
				t.max = t.min + share
			}
			body = append(body, t.head...)
			body = append(body, 1)
			body = binary.AppendUvarint(body, uint64(t.min))
			body = binary.AppendUvarint(body, uint64(t.max))
			body = append(body, t.tail...)
		}
		out := make([]byte, 0, len(b)-(sec.end-sec.at)+len(body)+6)
		out = append(out, b[:sec.at]...)
		out = append(out, sectionTable)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
		out = append(out, b[sec.end:]...)
		return out, true
	}
	return b, false
}
