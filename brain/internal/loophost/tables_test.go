package loophost_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// withTables answers module m with a table section holding tables (each
// an entry: reference type, limits and, optionally, more), placed before
// its memory section.
func withTables(m []byte, tables ...[]byte) []byte {
	body := binary.AppendUvarint(nil, uint64(len(tables)))
	for _, t := range tables {
		body = append(body, t...)
	}
	sec := append([]byte{4}, binary.AppendUvarint(nil, uint64(len(body)))...)
	sec = append(sec, body...)
	// The sections of rawModule: type, import?, function, memory, ...
	at := 8
	for at < len(m) && m[at] != 5 {
		n, k := binary.Uvarint(m[at+1:])
		at += 1 + k + int(n)
	}
	return append(append(append([]byte{}, m[:at]...), sec...), m[at:]...)
}

// funcrefTable is a funcref table of min entries (and at most max when
// max >= 0).
func funcrefTable(min, max int) []byte {
	if max < 0 {
		return binary.AppendUvarint([]byte{0x70, 0x00}, uint64(min))
	}
	b := binary.AppendUvarint([]byte{0x70, 0x01}, uint64(min))
	return binary.AppendUvarint(b, uint64(max))
}

// Every instance allocates eight bytes of the host's memory per table
// entry, outside its linear memory: a module of a few hundred bytes that
// declares many tables of a million entries each would cost gigabytes per
// activation. The entries of all tables together are bounded at
// admission, as an agentloop and as a Tool.
func TestAdmissionBoundsTheEntriesOfAllTables(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	var many [][]byte
	for range 64 { // 64 Mi entries, 512 MiB per instance
		many = append(many, funcrefTable(1<<20, -1))
	}
	typed := []byte{0x63, 0x70, 0x00, 0x80, 0x80, 0x40} // (ref null func), 2^20 entries
	for _, c := range []struct {
		name   string
		tables [][]byte
		want   string // "" for admitted
	}{
		{"one table at the bound", [][]byte{funcrefTable(1<<20, -1)}, ""},
		{"two tables past the bound", [][]byte{funcrefTable(1<<19, -1), funcrefTable(1<<19+1, -1)}, "table"},
		{"many tables", many, "table"},
		{"after a typed reference table", [][]byte{typed, funcrefTable(1<<20, -1)}, "table"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(0), export: export}
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				a, err := admit(context.Background(), withTables(m.bytes(), c.tables...))
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

// table.grow is bounded as memory.grow is: a guest cannot grow its tables
// past the entries admission allows them in all (each entry eight bytes
// of the host's memory, up to 32 GiB for one table grown to its 2^32
// entries), whatever maximum they declare. The grow fails (-1) and the
// guest goes on; a grow within the bound succeeds.
func TestTableGrowthIsBounded(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	refused, grown := `{"result":"refused"}`, `{"result":"grown"}`
	tableGrow := []byte{0xfc, 0x0f, 0x00}
	// turn: table.grow(ref.null func, n) == -1 ? refused : grown.
	entry := func(n int32) []byte {
		return cat([]byte{0xd0, 0x70}, i32c(n), tableGrow, i32c(-1), []byte{0x46, 0x04, 0x7e},
			i64c(int64(len(refused))), []byte{0x05}, i64c(32<<32|int64(len(grown))), []byte{0x0b})
	}
	for _, c := range []struct {
		name  string
		table []byte
		grow  int32
		want  string
	}{
		{"no maximum, past the bound", funcrefTable(0, -1), 4 << 20, "refused"},
		{"a maximum past the bound", funcrefTable(16, 1<<30), 1 << 20, "refused"},
		{"half the bound, grown past it", funcrefTable(1<<19, -1), 1<<19 + 1, "refused"},
		{"within the bound", funcrefTable(0, -1), 1 << 19, "grown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := rawModule{pages: 1, alloc: i32c(1024), entry: entry(c.grow),
				data: [][]byte{active(0, refused), active(32, grown)}}
			b := withTables(m.bytes(), c.table)
			f, err := h.Func(context.Background(), admit(t, h, b))
			if err != nil {
				t.Fatal(err)
			}
			out, err := f(context.Background(), newFake(), input("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Trim(string(out.Result), `"`); got != c.want {
				t.Errorf("table.grow by %d: %s, want %s", c.grow, got, c.want)
			}
		})
	}
}
