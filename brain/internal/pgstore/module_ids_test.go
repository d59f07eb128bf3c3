package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestModuleIDsByPage: the admitted modules are listed a page at a time,
// each page at most as long as asked and starting after the last id of
// the one before, so a walk over many modules never holds them all; a
// walk comes to every module once, in id order, those admitted during it
// past its place included.
func TestModuleIDsByPage(t *testing.T) {
	db := openDB(t, pgtest.Database(t), nil)
	ctx := context.Background()
	var want []string
	admit := func(i int) {
		id, err := db.PutModule(ctx, []byte(fmt.Sprintf("module %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for i := range 7 {
		admit(i)
	}
	const limit = 3
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("the walk did not end: %v", got)
		}
		ids, err := db.ModuleIDs(ctx, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > limit {
			t.Fatalf("ModuleIDs(%q, %d) answered %d ids", after, limit, len(ids))
		}
		if len(ids) == 0 {
			break
		}
		got = append(got, ids...)
		after = ids[len(ids)-1]
		if pages == 0 {
			// Admitted during the walk: found if its id sorts after the
			// walk's place (a 'f' id does, unless the place is one).
			for i := 7; ; i++ {
				id, err := db.PutModule(ctx, []byte(fmt.Sprintf("module %d", i)))
				if err != nil {
					t.Fatal(err)
				}
				if id > after {
					want = append(want, id)
					break
				}
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("a walk by pages of %d listed\n%v\nwant\n%v", limit, got, want)
	}
}
