package loophost_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// dataSegments counts the data segments of module b (-1 without a data
// section).
func dataSegments(t testing.TB, b []byte) int {
	t.Helper()
	for i := 8; i < len(b); {
		id := b[i]
		size, n := binary.Uvarint(b[i+1:])
		body := i + 1 + n
		if id == 11 {
			count, _ := binary.Uvarint(b[body:])
			return int(count)
		}
		i = body + int(size)
	}
	return -1
}

// TestCoalescedDefaultLoopKeepsItsMemory: the default loop's tens of
// thousands of data segments become a handful, and an instance of the
// rewritten module starts with the same linear memory, byte for byte, as
// one of the module as built.
func TestCoalescedDefaultLoopKeepsItsMemory(t *testing.T) {
	orig := builtin.DefaultWasm()
	before := bytes.Clone(orig)
	out, ok := loophost.CoalesceData(orig)
	if !ok {
		t.Fatal("the default loop's data section was not rewritten")
	}
	if !bytes.Equal(orig, before) {
		t.Fatal("coalescing modified its input")
	}
	if n, m := dataSegments(t, orig), dataSegments(t, out); n < 10000 || m > 16 {
		t.Fatalf("segments: %d before, %d after", n, m)
	}
	h := openHost(t, loophost.Options{})
	ctx := context.Background()
	want, err := h.InitialMemory(ctx, orig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.InitialMemory(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("initial memory differs: %d bytes against %d", len(got), len(want))
	}
}

// wasmModule assembles a module with one memory of the given pages
// (exported as "memory") and the given raw data section body; extra
// sections are appended as they are.
func wasmModule(pages int, dataBody []byte, extra ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	section := func(id byte, body []byte) {
		b = append(b, id)
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
	}
	section(5, binary.AppendUvarint([]byte{1, 0}, uint64(pages)))
	section(7, []byte{1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0})
	for _, e := range extra {
		b = append(b, e...)
	}
	if dataBody != nil {
		section(11, dataBody)
	}
	return b
}

// active is the encoding of an active segment at an i32.const offset.
func active(off int32, init string) []byte {
	b := []byte{0, 0x41}
	for {
		c := byte(off & 0x7f)
		off >>= 7
		if (off == 0 && c&0x40 == 0) || (off == -1 && c&0x40 != 0) {
			b = append(b, c)
			break
		}
		b = append(b, c|0x80)
	}
	b = append(b, 0x0b)
	b = binary.AppendUvarint(b, uint64(len(init)))
	return append(b, init...)
}

// sparse answers n one-byte segments every step bytes.
func sparse(n, step int) [][]byte {
	var segs [][]byte
	for i := range n {
		segs = append(segs, active(int32(i*step), "x"))
	}
	return segs
}

func dataBody(segs ...[]byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, s...)
	}
	return b
}

func TestCoalesceData(t *testing.T) {
	h := openHost(t, loophost.Options{})
	ctx := context.Background()
	far := 3 * 65536
	cases := []struct {
		name    string
		module  []byte
		rewrite bool
	}{
		{"small gaps, out of order", wasmModule(4, dataBody(active(100, "late"), active(0, "ab"), active(10, "cd"), active(1024+12, "ef"), active(int32(far), "far"))), true},
		{"a gap of a page is kept", wasmModule(4, dataBody(active(0, "a"), active(8192, "b"))), false},
		{"overlapping segments", wasmModule(1, dataBody(active(0, "abcd"), active(2, "XY"))), false},
		{"out of bounds", wasmModule(1, dataBody(active(0, "a"), active(65535, "bc"))), false},
		{"negative offset", wasmModule(1, dataBody(active(0, "a"), active(-1, "b"))), false},
		{"passive segment", wasmModule(1, dataBody(active(0, "a"), append([]byte{1, 1}, 'p'))), false},
		{"global offset", wasmModule(1, dataBody(active(0, "a"), []byte{0, 0x23, 0, 0x0b, 1, 'g'})), false},
		{"data count section", wasmModule(1, dataBody(active(0, "a"), active(4, "b")), []byte{12, 1, 2}), false},
		{"trailing bytes", wasmModule(1, append(dataBody(active(0, "a"), active(4, "b")), 0)), false},
		{"one segment", wasmModule(1, dataBody(active(0, "a"))), false},
		{"zeros far beyond the section", wasmModule(64, dataBody(sparse(2500, 1000)...)), false},
		{"no data", wasmModule(1, nil), false},
		{"truncated", wasmModule(1, dataBody(active(0, "a"), active(4, "b")))[:30], false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := loophost.CoalesceData(c.module)
			if ok != c.rewrite {
				t.Fatalf("rewritten = %v, want %v", ok, c.rewrite)
			}
			if !ok {
				if !bytes.Equal(out, c.module) {
					t.Fatal("a module left alone came back changed")
				}
				return
			}
			if dataSegments(t, out) >= dataSegments(t, c.module) {
				t.Fatalf("segments: %d before, %d after", dataSegments(t, c.module), dataSegments(t, out))
			}
			want, err := h.InitialMemory(ctx, c.module)
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.InitialMemory(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("initial memory differs")
			}
		})
	}
}

// FuzzCoalesceData: whatever the bytes, coalesceData never fails and
// answers a module it leaves alone unchanged. Modules built from fuzzed
// segments (offsets, sizes, order, memory size) are also compiled and
// instantiated as given and rewritten: both do, or both do not, and the
// linear memory they start with is the same. (Arbitrary bytes are not
// compiled: wazero sizes its allocations by the counts a module declares.)
func FuzzCoalesceData(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00"), uint8(1), []byte{0, 1, 'a', 8, 2, 'b', 3})
	f.Add([]byte{}, uint8(2), []byte{200, 2, 'x', 4, 1, 'y', 9, 30, 'z'})
	f.Add([]byte{}, uint8(1), []byte{255, 255, 'a', 0, 0, 'b'})
	h := openHost(f, loophost.Options{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte, pages uint8, spec []byte) {
		if out, ok := loophost.CoalesceData(raw); !ok && !bytes.Equal(out, raw) {
			t.Fatal("a module left alone came back changed")
		}
		// spec: groups of four bytes, each a segment: its offset (two
		// bytes), its size and the byte it repeats.
		var segs [][]byte
		for i := 0; i+3 < len(spec) && len(segs) < 64; i += 4 {
			off := int32(spec[i])<<10 | int32(spec[i+1])<<2
			segs = append(segs, active(off, strings.Repeat(string(spec[i+3]), int(spec[i+2]%40))))
		}
		b := wasmModule(int(pages%4), dataBody(segs...))
		out, ok := loophost.CoalesceData(b)
		if !ok {
			if !bytes.Equal(out, b) {
				t.Fatal("a module left alone came back changed")
			}
			return
		}
		want, werr := h.InitialMemory(ctx, b)
		got, gerr := h.InitialMemory(ctx, out)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("as given: %v; rewritten: %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatal("initial memory differs")
		}
	})
}

// TestAdmissionRefusesDeclaredSizes: a module of a few bytes that declares
// a hundred million exports, or a size inside a section's entries far
// beyond its bytes, is refused as invalid without the compiler allocating
// for it.
func TestAdmissionRefusesDeclaredSizes(t *testing.T) {
	section := func(id byte, body ...byte) []byte {
		return append([]byte{id, byte(len(body))}, body...)
	}
	big := []byte{0xff, 0xff, 0xff, 0xff, 0x0f} // 2^32-1
	header := []byte("\x00asm\x01\x00\x00\x00")
	cases := map[string][]byte{
		"exports":                      []byte("\x05\x03\x01\x000\a\n\xff\xff\x800\xe800000"),
		"a function type's parameters": section(1, append(append([]byte{1, 0x60}, big...), 0)...),
		"an export's name":             section(7, append([]byte{1}, big...)...),
		"an import's name":             section(2, append([]byte{1, 1, 'm'}, big...)...),
		"a data segment":               section(11, append([]byte{1, 1}, big...)...),
		"an element segment":           section(9, append([]byte{1, 0, 0x41, 0, 0x0b}, big...)...),
		"a function's locals":          section(10, 1, 7, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f),
		"a table's initial size":       section(4, 1, 0x70, 0, 0x80, 0x80, 0x80, 0x08),
		"an imported table's size":     section(2, 1, 1, 'm', 1, 't', 1, 0x70, 0, 0x80, 0x80, 0x80, 0x08),
		"function names":               section(0, append([]byte{4, 'n', 'a', 'm', 'e', 1, 5}, big...)...),
		"local names":                  section(0, append([]byte{4, 'n', 'a', 'm', 'e', 2, 7, 1, 0}, big...)...),
	}
	h := openHost(t, loophost.Options{})
	for name, sec := range cases {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			a, err := h.Admit(context.Background(), append(bytes.Clone(header), sec...))
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status == loophost.StatusAdmitted || a.Error == nil || !strings.Contains(a.Error.Message, "declares") {
				t.Fatalf("admission: %+v %+v", a, a.Error)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Fatalf("refusing it allocated %d MiB", grew>>20)
			}
		})
	}
}

// FuzzCheckCounts: whatever the bytes, the check answers without failing;
// it never refuses the default loop, and it never refuses a module built
// from fuzzed segments.
func FuzzCheckCounts(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x000\a\n\xff\xff\x800\xe800000"), []byte{0, 1, 'a', 8})
	f.Add(builtin.DefaultWasm()[:4096], []byte{})
	if err := loophost.CheckCounts(builtin.DefaultWasm()); err != nil {
		f.Fatalf("the default loop: %v", err)
	}
	f.Fuzz(func(t *testing.T, raw []byte, spec []byte) {
		_ = loophost.CheckCounts(raw)
		var segs [][]byte
		for i := 0; i+3 < len(spec) && len(segs) < 64; i += 4 {
			segs = append(segs, active(int32(spec[i])<<8|int32(spec[i+1]), strings.Repeat(string(spec[i+3]), int(spec[i+2]))))
		}
		if err := loophost.CheckCounts(wasmModule(4, dataBody(segs...))); err != nil {
			t.Fatalf("a well-formed module was refused: %v", err)
		}
	})
}

// FuzzDataWithinMemory: for a module built from fuzzed segments (offsets,
// negative ones included, sizes and memory size), the admission check
// refuses it exactly when no instance of it can be created.
func FuzzDataWithinMemory(f *testing.F) {
	f.Add(uint8(1), []byte{0, 0, 2, 'a', 0x1f, 0xff, 8, 'b'})
	f.Add(uint8(0), []byte{0, 0, 0, 'a'})
	f.Add(uint8(1), []byte{0x20, 0, 0, 'a', 0xff, 0xff, 1, 'b'})
	h := openHost(f, loophost.Options{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, pages uint8, spec []byte) {
		// spec: groups of four bytes, each a segment: its offset (two
		// bytes, signed, in units of 8 bytes: within four pages on
		// either side of 0), its size and the byte it repeats.
		var segs [][]byte
		for i := 0; i+3 < len(spec) && len(segs) < 64; i += 4 {
			off := int32(int16(uint16(spec[i])<<8|uint16(spec[i+1]))) * 8
			segs = append(segs, active(off, strings.Repeat(string(spec[i+3]), int(spec[i+2]))))
		}
		b := wasmModule(int(pages%4), dataBody(segs...))
		_, ierr := h.InitialMemory(ctx, b)
		if cerr := loophost.DataWithinMemory(b); (cerr == nil) != (ierr == nil) {
			t.Fatalf("the check answered %v; instantiating answered %v", cerr, ierr)
		}
	})
}
