package journal_test

import (
	"testing"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/journal/journaltest"
)

func TestFileStoreSuite(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store {
		s, err := journal.OpenFileStore(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFileStoreSuiteSmallSegments(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store {
		s, err := journal.OpenFileStore(t.TempDir(), &journal.Options{SegmentBytes: 4096, MaxOpenFiles: 2})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMemStoreSuite(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store { return journal.NewMemStore() })
}
