package loophost_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// replaceSection answers module b with the body of its section id
// replaced.
func replaceSection(b []byte, id byte, body []byte) []byte {
	for at := 8; at < len(b); {
		n, k := binary.Uvarint(b[at+1:])
		end := at + 1 + k + int(n)
		if b[at] == id {
			sec := append([]byte{id}, binary.AppendUvarint(nil, uint64(len(body)))...)
			sec = append(sec, body...)
			return append(append(append([]byte{}, b[:at]...), sec...), b[end:]...)
		}
		at = end
	}
	panic("no such section")
}

// A typed reference, (ref null func) or (ref func), takes two bytes where
// funcref takes one. The runtime takes it in a function type, a local, a
// global and an element segment; admission reads it as the runtime does,
// and does not refuse a module that uses one as declaring more than it
// holds.
func TestAdmissionReadsTypedReferences(t *testing.T) {
	h := openHost(t, loophost.Options{})
	m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(0)}
	plain := m.bytes()
	_, bodies := sectionsOf(plain)
	// The types of rawModule and a fourth: (param (ref null func)) -> ((ref func)).
	types := append([]byte{4}, bodies[0][1:]...)
	types = append(types, 0x60, 1, 0x63, 0x70, 1, 0x64, 0x70)
	// The bodies of brain_alloc and of turn, turn with a local
	// (ref null func) and a block around its answer.
	code := []byte{2, 4, 0, 0x41, 0, 0x0b, 10, 1, 1, 0x63, 0x70, 0x02, 0x40, 0x0b, 0x42, 0, 0x0b}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"a function type", replaceSection(plain, 1, types)},
		{"a local", replaceSection(plain, 10, code)},
		{"a global", withSection(plain, 6, []byte{1, 0x63, 0x70, 0, 0xd0, 0x70, 0x0b})},
		{"a passive element segment", withSection(plain, 9, elementSection([]byte{0x05, 0x63, 0x70, 1, 0xd0, 0x70, 0x0b}))},
		{"an active element segment", withSection(withTables(plain, funcrefTable(2, -1)), 9,
			elementSection(cat([]byte{0x06, 0}, i32c(1), []byte{0x0b, 0x64, 0x70, 1, 0xd2, 0, 0x0b})))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := h.InitialMemory(context.Background(), c.b); err != nil {
				t.Fatalf("the runtime refuses the module: %v", err)
			}
			a, err := h.Admit(context.Background(), c.b)
			if err != nil || a.Status != loophost.StatusAdmitted {
				t.Errorf("admission %+v %+v %v, want admitted", a, a.Error, err)
			}
		})
	}
}
