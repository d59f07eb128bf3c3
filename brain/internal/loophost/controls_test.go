package loophost_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// emptyBlocks is n empty blocks in a row.
func emptyBlocks(n int) []byte { return bytes.Repeat([]byte{0x02, 0x40, 0x0b}, n) }

// The compiler's time grows with the square of the number of blocks,
// loops and ifs in a function: a module of a few hundred KiB of empty
// blocks would hold its admission (and every other admission, which
// waits for it) for minutes. Such a module is refused as invalid at
// once, as an agentloop and as a Tool, whether the blocks are in one
// function or spread over several; one with fewer is admitted.
func TestAdmissionRefusesFunctionsTooCostlyToCompile(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), CacheDir: t.TempDir()})
	for _, c := range []struct {
		name         string
		alloc, entry []byte
	}{
		{"one function", i32c(0), cat(emptyBlocks(40000), i64c(0))},
		{"two functions", cat(emptyBlocks(11000), i32c(0)), cat(emptyBlocks(11000), i64c(0))},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: c.alloc, entry: c.entry, export: export}
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				start := time.Now()
				a, err := admit(context.Background(), m.bytes())
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != api.CodeInvalidRequest ||
					!strings.Contains(a.Error.Message, "blocks, loops and ifs") {
					t.Errorf("%s module of %d bytes: admission %s %+v after %v, want rejected as invalid_request naming its blocks",
						export, len(m.bytes()), a.Status, a.Error, time.Since(start).Round(time.Millisecond))
				}
			}
		})
	}

	// Only instructions count: the immediates of others are not taken
	// for blocks (0x02), loops (0x03) or ifs (0x04).
	immediates := bytes.Repeat(cat(i32c(2), []byte{0x28, 0x02, 0x04, 0x1a}, i64c(3), []byte{0x1a}), 30000)
	for _, entry := range [][]byte{cat(emptyBlocks(5000), i64c(0)), cat(immediates, i64c(0))} {
		m := rawModule{pages: 1, alloc: i32c(0), entry: entry}
		if a, err := h.Admit(context.Background(), m.bytes()); err != nil || a.Status != loophost.StatusAdmitted {
			t.Errorf("module of %d bytes: admission %+v %v, want admitted", len(m.bytes()), a, err)
		}
	}
}

// sectionsOf splits module b into its sections (id, then body).
func sectionsOf(b []byte) (ids []byte, bodies [][]byte) {
	for i := 8; i < len(b); {
		n, k := binary.Uvarint(b[i+1:])
		start := i + 1 + k
		ids, bodies = append(ids, b[i]), append(bodies, b[start:start+int(n)])
		i = start + int(n)
	}
	return ids, bodies
}

// withEntries answers module b with n entries appended to the vector of
// section id (adding the section, before the export section, if b has
// none).
func withEntries(b []byte, id byte, n int, entry []byte) []byte {
	out := bytes.Clone(b[:8])
	add := func(count uint64, entries []byte) {
		body := binary.AppendUvarint(nil, count+uint64(n))
		body = append(append(body, entries...), bytes.Repeat(entry, n)...)
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	ids, bodies := sectionsOf(b)
	added := false
	for i, sid := range ids {
		switch {
		case sid == id:
			count, k := binary.Uvarint(bodies[i])
			add(count, bodies[i][k:])
			added = true
			continue
		case sid == 7 && !added && id < 7:
			add(0, nil)
			added = true
		}
		out = append(out, sid)
		out = binary.AppendUvarint(out, uint64(len(bodies[i])))
		out = append(out, bodies[i]...)
	}
	return out
}

// Every instance allocates host memory, outside its linear memory, for
// each global and each data segment a module defines (a module of
// 4,000,000 globals, 20 MB, cost 366 MiB per activation), and compiling
// takes seconds per million functions or function types: a module with
// more than 100,000 globals or data segments that cannot be merged, or
// 1,000,000 functions or types, is refused as invalid at once, as an
// agentloop and as a Tool. Active segments merged count as one.
func TestAdmissionRefusesCostlyDeclarations(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), CacheDir: t.TempDir()})
	global := []byte{0x7f, 0x01, 0x41, 0x00, 0x0b} // mutable i32 = 0
	for _, c := range []struct {
		name, want string
		build      func(b []byte) []byte
	}{
		{"globals", "200000 globals", func(b []byte) []byte { return withEntries(b, 6, 200_000, global) }},
		{"passive data segments", "200001 data segments", func(b []byte) []byte { return withEntries(b, 11, 200_000, []byte{1, 0}) }},
		{"types", "1000003 function types", func(b []byte) []byte { return withEntries(b, 1, 1_000_000, []byte{0x60, 1, 0x7f, 0}) }},
		{"functions", "1000002 functions", func(b []byte) []byte {
			// (i32) -> i32 functions answering their argument.
			return withEntries(withEntries(b, 3, 1_000_000, []byte{1}), 10, 1_000_000, []byte{4, 0, 0x20, 0, 0x0b})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(0), export: export, data: [][]byte{active(0, "x")}}
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				b := c.build(m.bytes())
				start := time.Now()
				a, err := admit(context.Background(), b)
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != api.CodeInvalidRequest || !strings.Contains(a.Error.Message, c.want) {
					t.Errorf("%s module of %d bytes: admission %s %+v after %v, want rejected as invalid_request naming %q",
						export, len(b), a.Status, a.Error, time.Since(start).Round(time.Millisecond), c.want)
				}
			}
		})
	}

	doc := `{"result":1}`
	m := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}
	f, err := h.Func(context.Background(), admit(t, h, withEntries(m.bytes(), 6, 100_000, global)))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := f(context.Background(), newFake(), input("hi")); err != nil || string(out.Result) != "1" {
		t.Errorf("a module of 100,000 globals: turn answered %s, %v", out.Result, err)
	}

	// 200,000 active segments of a byte each, as a Go linker writes
	// them, are merged and admitted.
	segs := [][]byte{active(0, doc)}
	for i := range 200_000 {
		segs = append(segs, active(int32(64+2*i), "x"))
	}
	m = rawModule{pages: 8, alloc: i32c(1024), entry: i64c(int64(len(doc))), data: segs}
	if f, err = h.Func(context.Background(), admit(t, h, m.bytes())); err != nil {
		t.Fatal(err)
	}
	if out, err := f(context.Background(), newFake(), input("hi")); err != nil || string(out.Result) != "1" {
		t.Errorf("a module of 200,000 active segments: turn answered %s, %v", out.Result, err)
	}
}
