package pgstore_test

import (
	"testing"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/journal/journaltest"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

func TestJournalSuite(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store {
		return openDB(t, pgtest.Database(t), nil).Journal()
	})
}
