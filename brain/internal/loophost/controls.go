package loophost

// maxControlWeight bounds the sum, over a module's functions, of the
// square of the number of blocks, loops and ifs each function has. The
// compiler's time grows with the square of that number in one function:
// a function of 100,000 empty blocks (300 KB) compiles for a minute and a
// half, and the module's other functions add to it, while every other
// admission waits. The Go toolchain's modules weigh a few million (at
// most several hundred such instructions in a function); at the bound a
// module compiles in seconds (one function of 14,142).
const maxControlWeight = 200_000_000

// controls answers the number of blocks, loops and ifs in the
// instructions of body (a function body after its locals). Where an
// instruction is not one the compiler accepts, it answers the number
// counted so far: the compiler refuses the function there.
func controls(body []byte) uint64 {
	r := &reader{b: body}
	var count uint64
	leb := r.lebs(1)
	memarg := r.lebs(2)
	for r.at < len(r.b) {
		op := r.b[r.at]
		r.at++
		ok := true
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			count++
			ok = leb() // block type: a value type, 0x40 or a type index
		case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b, op == 0xd1:
		case op == 0x0c || op == 0x0d || op == 0x10 || op == 0xd2 || op >= 0x20 && op <= 0x26:
			ok = leb()
		case op == 0x11: // call_indirect
			ok = memarg() // two indices, as a memarg is two numbers
		case op == 0x0e || op == 0x1c: // br_table, typed select: a vector
			var n uint32
			if n, ok = r.u32(); ok {
				for i := uint32(0); ok && i < n; i++ {
					ok = leb()
				}
				if op == 0x0e {
					ok = ok && leb()
				}
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores
			ok = memarg()
		case op == 0x3f || op == 0x40 || op == 0xd0: // memory.size, memory.grow, ref.null
			r.at++
		case op == 0x41 || op == 0x42:
			ok = leb()
		case op == 0x43:
			r.at += 4
		case op == 0x44:
			r.at += 8
		case op >= 0x45 && op <= 0xc4: // numeric
		case op == 0xfc:
			ok = r.prefixedFC(leb)
		case op == 0xfd:
			ok = r.prefixedFD(leb, memarg)
		default:
			ok = false
		}
		if !ok || r.at > len(r.b) {
			break
		}
	}
	return count
}

// lebs answers a function that passes over n LEB128 numbers, reporting
// whether there were.
func (r *reader) lebs(n int) func() bool {
	return func() bool {
		for range n {
			k := lebLen(r.b[r.at:])
			if k == 0 {
				return false
			}
			r.at += k
		}
		return true
	}
}

// prefixedFC passes over the immediates of a 0xfc instruction
// (saturating conversions, bulk memory and tables).
func (r *reader) prefixedFC(leb func() bool) bool {
	sub, ok := r.u32()
	switch {
	case !ok:
		return false
	case sub <= 7:
	case sub == 8 || sub == 12 || sub == 14: // memory.init, table.init, table.copy
		return r.lebs(2)()
	case sub == 10: // memory.copy
		r.at += 2
	case sub == 11: // memory.fill
		r.at++
	case sub <= 17:
		return leb()
	default:
		return false
	}
	return true
}

// prefixedFD passes over the immediates of a 0xfd (SIMD) instruction.
func (r *reader) prefixedFD(leb, memarg func() bool) bool {
	sub, ok := r.u32()
	switch {
	case !ok:
		return false
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		return memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.at += 16
	case sub >= 21 && sub <= 34: // lane accesses
		r.at++
	case sub >= 84 && sub <= 91: // lane loads and stores
		ok = memarg()
		r.at++
		return ok
	}
	return true
}
