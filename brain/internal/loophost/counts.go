package loophost

import (
	"errors"
	"fmt"
)

const (
	// maxLocals bounds the locals one function declares (as browsers do).
	maxLocals = 50000
	// maxTableEntries bounds the entries of all tables of an instance
	// together, as declared and as grown (tables.go): every instance
	// allocates eight bytes of the host's memory per entry.
	maxTableEntries = 1 << 20
	// maxGlobals bounds the globals a module defines: every instance
	// allocates about a hundred bytes of the host's memory per global,
	// outside its linear memory, so that four million globals (a module
	// of 20 MB) would cost 366 MiB per activation.
	maxGlobals = 100_000
	// maxFunctions and maxTypes bound the functions and the function
	// types a module defines (as browsers do): the compiler takes seconds
	// per million of either.
	maxFunctions = 1_000_000
	maxTypes     = 1_000_000
	// maxDataSegments bounds the data segments of a module as compiled,
	// after its active segments were merged (dataseg.go): every instance
	// allocates about two dozen bytes of the host's memory per segment,
	// so that four million empty passive ones (a module of 8 MB) would
	// cost 91 MiB per activation.
	maxDataSegments = 100_000
	// maxImports and maxExports bound the imports and the exports of a
	// module (as browsers do): the compiler keeps about 300 bytes of the
	// host's memory per import and 100 per export for as long as the
	// module is loaded, and every instance resolves each import (40 bytes
	// each) and walks the exports, so that a module of 15 MB importing
	// one function a million times kept 297 MiB.
	maxImports = 100_000
	maxExports = 100_000
	// maxElements bounds the elements of all element segments of a
	// module together: the compiler keeps about 40 bytes of the host's
	// memory per element for as long as the module is loaded, and every
	// instance evaluates each element of a passive segment and keeps
	// eight bytes per element, outside its linear memory, so that a
	// module of 64 MiB holding one passive segment of an element per byte
	// would cost gigabytes at admission and at every activation. An
	// active segment writes its elements into a table, whose entries are
	// bounded by maxTableEntries, so no useful module holds more.
	maxElements = maxTableEntries
)

// checkCounts refuses a module that declares more of something than it
// has bytes for: more entries in a section's vector, a longer name or
// data segment, more elements; or more than maxLocals locals in one
// function, more than maxImports imports or maxExports exports, or more
// than maxElements elements in all its element segments. Such a module
// is malformed (or past a limit no compiler reaches); it is refused
// before the compiler sees it because wazero sizes its allocations by
// the declared counts, and a few bytes declaring a hundred million
// exports would otherwise cost gigabytes. A module whose functions hold more blocks, loops and ifs than
// maxControlWeight allows is refused too: it would hold the compiler for
// minutes.
// Where the bytes stop making sense to this check it stops and leaves the
// module to the compiler, which fails at that point before it allocates.
func checkCounts(b []byte) error {
	if len(b) < 8 {
		return nil // the compiler says what is wrong
	}
	secs, _ := sections(b) // past a malformed one, the compiler says what is wrong
	for _, sec := range secs {
		id := sec.id
		r := &reader{b: b[sec.body:sec.end]}
		var err error
		switch id {
		case 0:
			err = checkCustom(r)
		case 3, 5, 6, 13: // vectors of entries of at least one byte
			err = r.count("section", 1)
			if err == nil && id == 3 && r.n > maxFunctions {
				err = fmt.Errorf("the module declares %d functions (at most %d)", r.n, maxFunctions)
			}
			if err == nil && id == 6 && r.n > maxGlobals {
				err = fmt.Errorf("the module declares %d globals (at most %d)", r.n, maxGlobals)
			}
		case 4:
			err = checkTables(r)
		case 1:
			err = checkTypes(r)
		case 2:
			err = checkImports(r)
		case 7:
			err = checkExports(r)
		case 9:
			err = checkElements(r)
		case 10:
			err = checkCode(r)
		case 11:
			err = checkData(r)
		case 12:
			if count, ok := r.u32(); ok && uint64(count) > uint64(len(b)) {
				err = fmt.Errorf("the data count section declares %d segments in a module of %d bytes", count, len(b))
			}
		}
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("section %d: %w", id, err)
		}
	}
	return nil
}

// errStop ends a check where the bytes stop making sense to it.
var errStop = errors.New("stop")

// reader reads a section's body; ok is false past its end.
type reader struct {
	b  []byte
	at int
	n  uint32 // the count read last
}

func (r *reader) left() int { return max(len(r.b)-r.at, 0) }

func (r *reader) u32() (uint32, bool) {
	if r.at >= len(r.b) {
		return 0, false
	}
	v, n := uleb32(r.b[r.at:])
	r.at += n
	return v, n > 0
}

func (r *reader) byte() (byte, bool) {
	if r.at >= len(r.b) {
		return 0, false
	}
	r.at++
	return r.b[r.at-1], true
}

// count reads a vector's length and refuses it if its entries, each at
// least min bytes, cannot fit in what is left.
func (r *reader) count(what string, min int) error {
	n, ok := r.u32()
	if !ok {
		return errStop
	}
	if uint64(n)*uint64(min) > uint64(r.left()) {
		return fmt.Errorf("%s declares %d entries in %d bytes", what, n, r.left())
	}
	r.n = n
	return nil
}

// name reads a name (a length and its bytes).
func (r *reader) name() (string, bool) {
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(r.left()) {
		return "", false
	}
	s := string(r.b[r.at : r.at+int(n)])
	r.at += int(n)
	return s, true
}

// skip reads a declared length and passes over that many bytes.
func (r *reader) skip(what string) error {
	n, ok := r.u32()
	if !ok {
		return errStop
	}
	if uint64(n) > uint64(r.left()) {
		return fmt.Errorf("%s declares %d bytes with %d left", what, n, r.left())
	}
	r.at += int(n)
	return nil
}

// limits passes over a table's or memory's limits.
func (r *reader) limits() bool {
	flags, ok := r.byte()
	if !ok || flags > 7 {
		return false
	}
	if _, ok := r.u32(); !ok {
		return false
	}
	if flags&1 != 0 {
		_, ok = r.u32()
	}
	return ok
}

// constExpr passes over a constant expression of the operators the
// compiler accepts there; false at anything else.
func (r *reader) constExpr() bool {
	for {
		op, ok := r.byte()
		if !ok {
			return false
		}
		switch op {
		case 0x0b: // end
			return true
		case 0x41, 0x42, 0x23, 0xd2: // i32.const, i64.const, global.get, ref.func
			n := lebLen(r.b[r.at:])
			if n == 0 {
				return false
			}
			r.at += n
		case 0x43: // f32.const
			r.at += 4
		case 0x44: // f64.const
			r.at += 8
		case 0xd0: // ref.null
			r.at++
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			if _, ok := r.u32(); !ok {
				return false
			}
			r.at += 16
		default:
			return false
		}
		if r.at > len(r.b) {
			return false
		}
	}
}

// tableLimits reads a table's limits and refuses an initial size past
// maxTableEntries.
func (r *reader) tableLimits() error {
	flags, ok := r.byte()
	if !ok || flags > 7 {
		return errStop
	}
	min, ok := r.u32()
	if !ok {
		return errStop
	}
	if min > maxTableEntries {
		return fmt.Errorf("a table declares %d entries (limit %d)", min, maxTableEntries)
	}
	if flags&1 != 0 && !r.skipU32() {
		return errStop
	}
	return nil
}

func checkTables(r *reader) error {
	if err := r.count("tables", 3); err != nil {
		return err
	}
	tables, ok := parseTables(r.b)
	if !ok {
		return errStop
	}
	var sum uint64
	for _, t := range tables {
		if t.min > maxTableEntries {
			return fmt.Errorf("a table declares %d entries (limit %d)", t.min, maxTableEntries)
		}
		sum += uint64(t.min)
	}
	if sum > maxTableEntries {
		return fmt.Errorf("the module's %d tables declare %d entries in all (limit %d)", len(tables), sum, maxTableEntries)
	}
	return nil
}

// checkCustom checks the "name" section, which the compiler decodes:
// its module name, and the counts and names of its function and local
// names.
func checkCustom(r *reader) error {
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(r.left()) {
		return errStop
	}
	name := string(r.b[r.at : r.at+int(n)])
	r.at += int(n)
	if name != "name" {
		return nil
	}
	for r.left() > 0 {
		id, ok := r.byte()
		if !ok {
			return nil
		}
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(r.left()) {
			return errStop
		}
		sub := &reader{b: r.b[r.at : r.at+int(size)]}
		r.at += int(size)
		var err error
		switch id {
		case 0:
			err = sub.skip("the module name")
		case 1:
			err = sub.nameMap()
		case 2:
			if err = sub.count("local names", 2); err != nil {
				break
			}
			for range sub.n {
				if !sub.skipU32() {
					break
				}
				if err = sub.nameMap(); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nameMap checks a vector of (index, name).
func (r *reader) nameMap() error {
	if err := r.count("names", 2); err != nil {
		return err
	}
	for range r.n {
		if !r.skipU32() {
			return errStop
		}
		if err := r.skip("a name"); err != nil {
			return err
		}
	}
	return nil
}

func checkTypes(r *reader) error {
	if err := r.count("types", 3); err != nil {
		return err
	}
	if r.n > maxTypes {
		return fmt.Errorf("the module declares %d function types (at most %d)", r.n, maxTypes)
	}
	for range r.n {
		if form, ok := r.byte(); !ok || form != 0x60 {
			return nil
		}
		for range 2 { // parameters, then results
			n, ok := r.u32()
			if !ok {
				return errStop
			}
			if uint64(n) > uint64(r.left()) {
				return fmt.Errorf("a function type declares %d parameters or results in %d bytes", n, r.left())
			}
			for range n {
				if !r.valType() {
					return errStop
				}
			}
		}
	}
	return nil
}

// valType passes over a value type: one byte, or for a typed reference
// ((ref null? <heap type>)) its prefix and the heap type, an s33.
func (r *reader) valType() bool {
	b, ok := r.byte()
	if !ok || (b != 0x63 && b != 0x64) {
		return ok
	}
	k := lebLen(r.b[r.at:])
	r.at += k
	return k > 0
}

func checkImports(r *reader) error {
	if err := r.count("imports", 4); err != nil {
		return err
	}
	if r.n > maxImports {
		return fmt.Errorf("the module declares %d imports (at most %d)", r.n, maxImports)
	}
	for range r.n {
		if err := r.skip("an import's module name"); err != nil {
			return err
		}
		if err := r.skip("an import's name"); err != nil {
			return err
		}
		kind, ok := r.byte()
		if !ok {
			return nil
		}
		switch kind {
		case 0x00: // function
			ok = r.skipU32()
		case 0x01: // table
			if !r.valType() {
				return nil
			}
			if err := r.tableLimits(); err != nil {
				return err
			}
		case 0x02: // memory
			ok = r.limits()
		case 0x03: // global: its type and mutability
			if ok = r.valType(); ok {
				_, ok = r.byte()
			}
		case 0x04: // tag
			r.at++
			ok = r.skipU32()
		default:
			ok = false
		}
		if !ok {
			return nil
		}
	}
	return nil
}

func checkExports(r *reader) error {
	if err := r.count("exports", 3); err != nil {
		return err
	}
	if r.n > maxExports {
		return fmt.Errorf("the module declares %d exports (at most %d)", r.n, maxExports)
	}
	for range r.n {
		if err := r.skip("an export's name"); err != nil {
			return err
		}
		r.at++ // kind
		if !r.skipU32() {
			return nil
		}
	}
	return nil
}

func checkElements(r *reader) error {
	if err := r.count("elements", 1); err != nil {
		return err
	}
	var elements uint64
	for range r.n {
		flags, ok := r.u32()
		if !ok || flags > 7 {
			return nil
		}
		if flags&2 != 0 && flags&1 == 0 && !r.skipU32() { // table index
			return nil
		}
		if flags&1 == 0 && !r.constExpr() { // active: offset
			return nil
		}
		if flags&3 != 0 && !r.elementType(flags&4 != 0) { // element kind or reference type
			return nil
		}
		size := 1 // a function index, or a constant expression of at least 2 bytes
		if flags&4 != 0 {
			size = 2
		}
		if err := r.count("an element segment", size); err != nil {
			return err
		}
		if elements += uint64(r.n); elements > maxElements {
			return fmt.Errorf("the module's element segments hold more than %d elements in all", maxElements)
		}
		if flags&4 == 0 {
			for range r.n {
				if !r.skipU32() {
					return nil
				}
			}
			continue
		}
		for range r.n {
			if !r.constExpr() {
				return nil
			}
		}
	}
	return nil
}

func checkCode(r *reader) error {
	if err := r.count("function bodies", 2); err != nil {
		return err
	}
	var weight uint64
	for i := range r.n {
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(r.left()) {
			return nil
		}
		end := r.at + int(size)
		body := &reader{b: r.b[r.at:end]}
		groups, ok := body.u32()
		whole := ok && uint64(groups) <= uint64(body.left())
		if ok {
			var sum uint64
			for range min(groups, uint32(body.left())) {
				var n uint32
				if n, ok = body.u32(); !ok {
					break
				}
				if ok = body.valType(); !ok {
					break
				}
				if sum += uint64(n); sum > maxLocals {
					return fmt.Errorf("a function declares more than %d locals", maxLocals)
				}
			}
		}
		if whole && ok && body.at <= len(body.b) {
			n := controls(body.b[body.at:])
			if weight += n * n; weight > maxControlWeight {
				return fmt.Errorf("function body %d has %d blocks, loops and ifs; with those of the functions before it, more than the compiler takes in bounded time (the squares of each function's count sum to at most %d)", i, n, maxControlWeight)
			}
		}
		r.at = end
	}
	return nil
}

func checkData(r *reader) error {
	if err := r.count("data segments", 2); err != nil {
		return err
	}
	for range r.n {
		flags, ok := r.u32()
		if !ok || flags > 2 {
			return nil
		}
		if flags == 2 && !r.skipU32() { // memory index
			return nil
		}
		if flags != 1 && !r.constExpr() { // active: offset
			return nil
		}
		if err := r.skip("a data segment"); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) skipU32() bool {
	_, ok := r.u32()
	return ok
}

// lebLen answers the length of the LEB128 number b starts with (at most
// 10 bytes), or 0.
func lebLen(b []byte) int {
	for i := 0; i < 10 && i < len(b); i++ {
		if b[i] < 0x80 {
			return i + 1
		}
	}
	return 0
}

// checkSegments refuses a module, as it is compiled, with more than
// maxDataSegments data segments.
func checkSegments(b []byte) error {
	secs, _ := sections(b)
	for _, sec := range secs {
		if sec.id != sectionData {
			continue
		}
		r := &reader{b: b[sec.body:sec.end]}
		if n, ok := r.u32(); ok && n > maxDataSegments {
			return fmt.Errorf("the module declares %d data segments that cannot be merged (at most %d)", n, maxDataSegments)
		}
	}
	return nil
}
