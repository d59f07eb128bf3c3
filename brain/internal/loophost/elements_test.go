package loophost_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// withSection answers module m with a section of the given id and body
// inserted where the binary format places it.
func withSection(m []byte, id byte, body []byte) []byte {
	order := func(id byte) int {
		if id == 12 { // data count: after the elements, before the code
			return 95
		}
		return int(id) * 10
	}
	at := 8
	for at < len(m) && (m[at] == 0 || order(m[at]) < order(id)) {
		n, k := binary.Uvarint(m[at+1:])
		at += 1 + k + int(n)
	}
	sec := append([]byte{id}, binary.AppendUvarint(nil, uint64(len(body)))...)
	sec = append(sec, body...)
	return append(append(append([]byte{}, m[:at]...), sec...), m[at:]...)
}

// elementSection is the body of an element section holding segs.
func elementSection(segs ...[]byte) []byte {
	body := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		body = append(body, s...)
	}
	return body
}

// passiveElements is a passive segment of n references to function 0.
func passiveElements(n int) []byte {
	b := binary.AppendUvarint([]byte{0x01, 0x00}, uint64(n))
	return append(b, make([]byte, n)...)
}

// activeElements is an active segment of n references to function 0,
// written into table 0 at offset 0.
func activeElements(n int) []byte {
	b := binary.AppendUvarint(cat([]byte{0x00}, i32c(0), []byte{0x0b}), uint64(n))
	return append(b, make([]byte, n)...)
}

// passiveExprElements is a passive funcref segment of n elements given
// as constant expressions (ref.null func).
func passiveExprElements(n int) []byte {
	b := binary.AppendUvarint([]byte{0x05, 0x70}, uint64(n))
	for range n {
		b = append(b, 0xd0, 0x70, 0x0b)
	}
	return b
}

// The compiler keeps about 40 bytes of the host's memory per element of
// a module, and every instance evaluates each element of a passive
// segment and keeps eight bytes for it, outside its linear memory: a
// module of 4 MiB with one passive segment of an element per byte took
// 160 MiB for as long as it was loaded and 357 MiB and a second per
// activation. The elements of all segments together are bounded at
// admission, as the entries of tables are.
func TestAdmissionBoundsTheElementsOfAllSegments(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	table := funcrefTable(1<<20, -1)
	for _, c := range []struct {
		name  string
		table bool
		segs  [][]byte
		want  string // "" for admitted
	}{
		{"a passive segment at the bound", false, [][]byte{passiveElements(1 << 20)}, ""},
		{"an active segment filling a table", true, [][]byte{activeElements(1 << 20)}, ""},
		{"a passive segment past the bound", false, [][]byte{passiveElements(1<<20 + 1)}, "element"},
		{"expressions past the bound", false, [][]byte{passiveExprElements(1<<20 + 1)}, "element"},
		{"segments past the bound in all", true, [][]byte{activeElements(1 << 19), passiveElements(1 << 19), passiveElements(1)}, "element"},
		{"many passive segments", false, [][]byte{passiveElements(1 << 20), passiveElements(1 << 20), passiveElements(1 << 20), passiveElements(1 << 20)}, "element"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(0), export: export}
				b := m.bytes()
				if c.table {
					b = withTables(b, table)
				}
				b = withSection(b, 9, elementSection(c.segs...))
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				a, err := admit(context.Background(), b)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case c.want == "" && a.Status != loophost.StatusAdmitted:
					t.Errorf("%s module: admission %s %+v, want admitted", export, a.Status, a.Error)
				case c.want != "" && (a.Status != loophost.StatusRejected || a.Error == nil ||
					a.Error.Code != api.CodeInvalidRequest || !strings.Contains(a.Error.Message, c.want)):
					t.Errorf("%s module: admission %s %+v, want rejected as invalid_request naming %q", export, a.Status, a.Error, c.want)
				}
			}
		})
	}
}

// elementsAt is an active segment of n references to function 0 written
// into table at offset off: in the form of flags 0 (table 0, function
// indices), 2 (a table index and an element kind) or 4 (table 0,
// constant expressions).
func elementsAt(flags byte, table uint32, off int32, n int) []byte {
	b := []byte{flags}
	if flags == 2 {
		b = binary.AppendUvarint(b, uint64(table))
	}
	b = append(cat(b, i32c(off)), 0x0b)
	if flags == 2 {
		b = append(b, 0x00) // funcref
	}
	b = binary.AppendUvarint(b, uint64(n))
	for range n {
		if flags == 4 {
			b = append(b, 0xd2, 0x00, 0x0b) // ref.func 0
		} else {
			b = append(b, 0x00)
		}
	}
	return b
}

// An active element segment that does not lie within its table traps the
// instantiation of the module (the spec's "out of bounds table access"),
// with zero elements too when its offset is past the table's size; the
// runtime instead skips that segment and every one after it, so that the
// guest would run with a table partly filled. Such a module is refused at
// admission, as an agentloop and as a Tool, naming the segment; a
// segment that ends at its table's end is admitted.
func TestAdmissionRefusesElementsOutsideTheirTable(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	for _, c := range []struct {
		name   string
		tables [][]byte
		segs   [][]byte
		want   string // "" for admitted
	}{
		{"ending at the table's end", [][]byte{funcrefTable(4, -1)}, [][]byte{elementsAt(0, 0, 2, 2)}, ""},
		{"empty at the table's end", [][]byte{funcrefTable(4, -1)}, [][]byte{elementsAt(0, 0, 4, 0)}, ""},
		{"expressions ending at the table's end", [][]byte{funcrefTable(4, 8)}, [][]byte{elementsAt(4, 0, 0, 4)}, ""},
		{"in the second table", [][]byte{funcrefTable(1, -1), funcrefTable(4, -1)}, [][]byte{elementsAt(2, 1, 1, 3)}, ""},
		{"past the table's end", [][]byte{funcrefTable(4, -1)}, [][]byte{elementsAt(0, 0, 3, 2)}, "element segment 0"},
		{"past a maximum it could grow to", [][]byte{funcrefTable(1, 8)}, [][]byte{elementsAt(0, 0, 0, 2)}, "element segment 0"},
		{"empty past the table's end", [][]byte{funcrefTable(4, -1)}, [][]byte{elementsAt(0, 0, 5, 0)}, "element segment 0"},
		{"at a negative offset", [][]byte{funcrefTable(4, -1)}, [][]byte{elementsAt(0, 0, -1, 1)}, "element segment 0"},
		{"expressions past the table's end", [][]byte{funcrefTable(4, -1)}, [][]byte{elementsAt(4, 0, 2, 3)}, "element segment 0"},
		{"past the second table's end", [][]byte{funcrefTable(8, -1), funcrefTable(2, -1)}, [][]byte{elementsAt(2, 1, 1, 2)}, "element segment 0"},
		{"after segments within", [][]byte{funcrefTable(4, -1)},
			[][]byte{passiveElements(8), elementsAt(0, 0, 0, 4), elementsAt(0, 0, 4, 1)}, "element segment 2"},
		{"before a segment within", [][]byte{funcrefTable(4, -1)},
			[][]byte{elementsAt(0, 0, 3, 2), elementsAt(0, 0, 0, 1)}, "element segment 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(0), export: export}
				b := withSection(withTables(m.bytes(), c.tables...), 9, elementSection(c.segs...))
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				a, err := admit(context.Background(), b)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case c.want == "" && a.Status != loophost.StatusAdmitted:
					t.Errorf("%s module: admission %s %+v, want admitted", export, a.Status, a.Error)
				case c.want != "" && (a.Status != loophost.StatusRejected || a.Error == nil ||
					a.Error.Code != api.CodeInvalidRequest || !strings.Contains(a.Error.Message, c.want)):
					t.Errorf("%s module: admission %s %+v, want rejected as invalid_request naming %q", export, a.Status, a.Error, c.want)
				}
			}
		})
	}
}

// FuzzElementsWithinTables: for a module of two tables and fuzzed element
// segments (their forms, tables, offsets, negative ones included, and
// sizes), the admission check refuses it exactly when an active segment
// does not lie within its table, and names the first such segment.
func FuzzElementsWithinTables(f *testing.F) {
	f.Add(uint8(4), uint8(2), []byte{0, 0, 2, 2, 4, 1, 1, 1})
	f.Add(uint8(0), uint8(0), []byte{0, 0, 0, 0})
	f.Add(uint8(1), uint8(3), []byte{1, 0, 9, 9, 0xff, 0xff, 1, 1})
	f.Fuzz(func(t *testing.T, size0, size1 uint8, spec []byte) {
		// spec: groups of four bytes, each a segment: its form (0, 2 or
		// 4 active, 5 passive; 2 names table 1, the others table 0), its
		// offset (signed), its size.
		sizes := []int{int(size0 % 16), int(size1 % 16)}
		m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(0)}
		var segs [][]byte
		want := ""
		for i := 0; i+3 < len(spec) && len(segs) < 32; i += 4 {
			form := []byte{0, 2, 4, 5}[spec[i]%4]
			off, n := int32(int8(spec[i+1]))*int32(spec[i+2]%4+1), int(spec[i+3]%24)
			if form == 5 {
				segs = append(segs, passiveExprElements(n))
				continue
			}
			table := 0
			if form == 2 {
				table = 1
			}
			if want == "" && (off < 0 || int(off)+n > sizes[table]) {
				want = fmt.Sprintf("element segment %d ", len(segs))
			}
			segs = append(segs, elementsAt(form, uint32(table), off, n))
		}
		b := m.bytes()
		b = withTables(b, funcrefTable(sizes[0], -1), funcrefTable(sizes[1], -1))
		b = withSection(b, 9, elementSection(segs...))
		err := loophost.ElementsWithinTables(b)
		switch {
		case want == "" && err != nil:
			t.Fatalf("refused: %v", err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("answered %v, want a refusal naming %q", err, want)
		}
	})
}
