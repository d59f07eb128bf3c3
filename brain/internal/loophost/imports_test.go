package loophost_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// withExports answers module b with n more exports of its function 0,
// each under a name of its own.
func withExports(b []byte, n int) []byte {
	ids, bodies := sectionsOf(b)
	out := append([]byte{}, b[:8]...)
	for i, id := range ids {
		body := bodies[i]
		if id == 7 {
			count, k := binary.Uvarint(body)
			more := binary.AppendUvarint(nil, count+uint64(n))
			more = append(more, body[k:]...)
			for e := range n {
				name := []byte{4, 0, 0, 0, 0}
				for j := range 4 {
					name[1+j] = byte('A' + (e>>(5*j))&31)
				}
				more = append(append(more, name...), 0, 0)
			}
			body = more
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out
}

// Every import and export costs the host memory for as long as its module
// is loaded, and every instance resolves each import and walks the
// exports: a module of 15 MB importing brain.answer 1,048,576 times kept
// 297 MiB and allocated 40 MiB per activation, and one of 7 MB exporting
// a function under 1,048,576 names kept 99 MiB and took 145 ms per
// activation (a module of 64 MiB holds four and nine times as many). A
// module with more than 100,000 imports or exports is refused as invalid
// (as browsers do), as an agentloop and as a Tool; one at the bound is
// admitted and runs.
func TestAdmissionBoundsImportsAndExports(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), CacheDir: t.TempDir()})
	doc := `{"result":1}`
	answers := func(n int) []string {
		names := make([]string, n)
		for i := range names {
			names[i] = "answer"
		}
		return names
	}
	for _, c := range []struct {
		name, want string
		build      func(m rawModule) []byte
	}{
		{"imports", "100001 imports", func(m rawModule) []byte { m.imports = answers(100_001); return m.bytes() }},
		{"exports", "100003 exports", func(m rawModule) []byte { return withExports(m.bytes(), 100_000) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(doc))), export: export, data: [][]byte{active(0, doc)}}
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				b := c.build(m)
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

	for name, b := range map[string][]byte{
		"imports": rawModule{imports: answers(100_000), pages: 1, alloc: i32c(1024), entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}.bytes(),
		"exports": withExports(rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}.bytes(), 100_000-3),
	} {
		f, err := h.Func(context.Background(), admit(t, h, b))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := f(context.Background(), newFake(), input("hi")); err != nil || string(out.Result) != "1" {
			t.Errorf("a module of 100,000 %s: turn answered %s, %v", name, out.Result, err)
		}
	}
}
