package loophost

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzBoundTables: whatever table section a module holds, boundTables
// either leaves the module as it is or answers one whose tables are the
// same but for their maxima, which sum to at most maxTableEntries, are
// never below the initial sizes and never above what was declared.
func FuzzBoundTables(f *testing.F) {
	f.Add([]byte{1, 0x70, 0x00, 0x00})
	f.Add([]byte{2, 0x70, 0x01, 0x10, 0x80, 0x80, 0x80, 0x80, 0x04, 0x6f, 0x00, 0x80, 0x80, 0x20})
	f.Add([]byte{1, 0x40, 0x00, 0x63, 0x70, 0x00, 0x05, 0xd2, 0x00, 0x0b})
	f.Add([]byte{1, 0x64, 0x00, 0x01, 0x00, 0x80, 0x80, 0x40})
	f.Fuzz(func(t *testing.T, body []byte) {
		m := []byte("\x00asm\x01\x00\x00\x00")
		m = append(m, sectionTable)
		m = binary.AppendUvarint(m, uint64(len(body)))
		m = append(m, body...)
		out, changed := boundTables(m)
		if !changed {
			if !bytes.Equal(out, m) {
				t.Fatal("answered other bytes without a change")
			}
			return
		}
		before, ok := parseTables(body)
		if !ok {
			t.Fatalf("changed a table section it cannot read: %x", body)
		}
		secs, ok := sections(out)
		if !ok || len(secs) != 1 || secs[0].id != sectionTable {
			t.Fatalf("answered a module of sections %+v", secs)
		}
		after, ok := parseTables(out[secs[0].body:secs[0].end])
		if !ok || len(after) != len(before) {
			t.Fatalf("answered tables it cannot read: %x", out)
		}
		var sum uint64
		for i, a := range after {
			b := before[i]
			if !bytes.Equal(a.head, b.head) || !bytes.Equal(a.tail, b.tail) || a.min != b.min || !a.hasMax ||
				a.max < a.min || (b.hasMax && a.max > b.max) {
				t.Fatalf("table %d %+v became %+v", i, b, a)
			}
			sum += uint64(a.max)
		}
		if sum > maxTableEntries {
			t.Fatalf("maxima sum to %d", sum)
		}
	})
}
