package loophost_test

import (
	"context"
	"encoding/binary"
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
