package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Pauses before a call is sent again: the first, growing twofold to the
// longest.
const (
	retryPause    = 100 * time.Millisecond
	retryMaxPause = 2 * time.Second
)

// maxRetryAfter bounds the wait a Retry-After header may ask for: a call
// asked to wait longer is not sent again, and fails with the answer.
const maxRetryAfter = 30 * time.Second

// pauseBefore answers the pause before attempt i (1 for the first
// retry).
func pauseBefore(i int) time.Duration {
	d := retryPause
	for ; i > 1 && d < retryMaxPause; i-- {
		d *= 2
	}
	return min(d, retryMaxPause)
}

// retryAfter reads the wait an answer's Retry-After header asks for, in
// seconds or as an HTTP date; anything unreadable, negative or past is
// zero.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Any wait beyond maxRetryAfter is not waited for: it is kept
		// just above it, so that no value overflows.
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second)+1)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// sendOnce sends a read once, whatever it is answered: a health probe
// answers the state it finds.
func sendOnce(c *call) { c.once = true }
