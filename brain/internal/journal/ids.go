package journal

import (
	"fmt"
	"strings"
)

const maxSessionIDBytes = 200

// checkSessionID rejects ids that are not a single safe path element.
func checkSessionID(id string) error {
	if id == "" || len(id) > maxSessionIDBytes || id == "." || id == ".." ||
		strings.ContainsAny(id, "/\\\x00") || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%w: session id %q", ErrInvalid, id)
	}
	return nil
}

func checkRecords(records []Record, maxPayload int) (int, error) {
	if len(records) == 0 {
		return 0, fmt.Errorf("%w: no records to append", ErrInvalid)
	}
	total := 0
	for i := range records {
		if err := checkRecord(&records[i], maxPayload); err != nil {
			return 0, err
		}
		total += frameSize(&records[i])
	}
	return total, nil
}

// stampTimes sets recorded_at_ms on records: zero becomes now, and no value
// goes below last. It returns the new last value.
func stampTimes(records []Record, now, last int64) int64 {
	for i := range records {
		ms := records[i].RecordedAtMs
		if ms == 0 {
			ms = now
		}
		if ms < last {
			ms = last
		}
		records[i].RecordedAtMs = ms
		last = ms
	}
	return last
}

// pageLimits applies the defaults to Read's bounds.
func pageLimits(maxRecords, maxBytes int) (int, int) {
	if maxRecords <= 0 {
		maxRecords = DefaultPageRecords
	}
	if maxBytes <= 0 {
		maxBytes = DefaultPageBytes
	}
	return maxRecords, maxBytes
}
