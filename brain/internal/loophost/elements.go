package loophost

import "fmt"

// sectionElement is the id of the element section.
const sectionElement = 9

// elementsWithinTables refuses a module with an active element segment
// that does not lie within the initial size of its table (with no
// elements, an offset past it): creating an instance of such a module
// traps ("out of bounds table access"), but the runtime skips that
// segment and every one after it instead, so that the instance would
// run with its tables partly filled. b has compiled and imports no table
// (importsFunctionsOnly), so its table and element sections are well
// formed and the tables are all of an instance's. An offset is a lone
// i32.const or a global.get: the runtime takes no arithmetic there, and a
// global an offset may read is imported, which is refused.
func elementsWithinTables(b []byte) error {
	secs, _ := sections(b)
	var sizes []uint32
	for _, sec := range secs {
		body := b[sec.body:sec.end]
		switch sec.id {
		case sectionTable:
			tables, ok := parseTables(body)
			if !ok {
				return nil
			}
			for _, t := range tables {
				sizes = append(sizes, t.min)
			}
		case sectionElement:
			r := &reader{b: body}
			n, ok := r.u32()
			for i := uint32(0); ok && i < n; i++ {
				var flags uint32
				if flags, ok = r.u32(); !ok || flags > 7 {
					return nil
				}
				active := flags&1 == 0
				table := uint32(0)
				if flags&2 != 0 && active {
					if table, ok = r.u32(); !ok {
						return nil
					}
				}
				off, constant := uint32(0), false
				if active {
					start := r.at
					if !r.constExpr() {
						return nil
					}
					off, constant = i32Const(r.b[start:r.at])
				}
				if flags&3 != 0 && !r.elementType(flags&4 != 0) {
					return nil
				}
				var count uint32
				if count, ok = r.u32(); !ok {
					return nil
				}
				for j := uint32(0); ok && j < count; j++ {
					if flags&4 != 0 {
						ok = r.constExpr()
					} else {
						ok = r.skipU32()
					}
				}
				if !ok {
					return nil
				}
				if active && constant && int(table) < len(sizes) && uint64(off)+uint64(count) > uint64(sizes[table]) {
					return fmt.Errorf("element segment %d writes %d elements at offset %d of table %d, outside its %d entries: no instance of the module can be created", i, count, off, table, sizes[table])
				}
			}
			return nil
		}
	}
	return nil
}

// elementType passes over an element segment's element kind (a byte) or,
// for a segment of constant expressions, its reference type.
func (r *reader) elementType(expressions bool) bool {
	if expressions {
		return r.valType()
	}
	_, ok := r.byte()
	return ok
}
