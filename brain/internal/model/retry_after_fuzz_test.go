package model

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter reads any Retry-After-Ms and Retry-After header values
// (seeds in testdata/fuzz/FuzzRetryAfter). The wait reported is never
// negative nor longer than a day, and a Retry-After of a whole number of
// seconds, with no Retry-After-Ms, is that many seconds, or a day where
// it asks for longer: a long wait is never reported as none.
func FuzzRetryAfter(f *testing.F) {
	f.Add("", "7")
	f.Add("1500", "2")
	f.Add("", "86400")
	f.Add("", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("NaN", "-1")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, secs string) {
		h := http.Header{}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		if secs != "" {
			h.Set("Retry-After", secs)
		}
		d := retryAfter(h, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("Retry-After-Ms %q, Retry-After %q: wait %v", ms, secs, d)
		}
		if ms != "" {
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(secs), 10, 64)
		if err != nil || n <= 0 {
			return
		}
		want := maxRetryAfter
		if n < int64(maxRetryAfter/time.Second) {
			want = time.Duration(n) * time.Second
		}
		if d != want {
			t.Fatalf("Retry-After %q: wait %v, want %v", secs, d, want)
		}
	})
}
