package model

import "math"

// A provider's usage is recorded as it reports it, except for what no
// count can be: a count it reports below zero, and the uncached input it
// implies by reporting more cached input than input in all (or a total
// too large to hold), are left out, as a count it does not report is.

// counted answers u without the counts below zero.
func counted(u Usage) Usage {
	for _, p := range []**int64{&u.InputTokens, &u.OutputTokens, &u.CacheCreationInputTokens,
		&u.CacheReadInputTokens, &u.ReasoningTokens, &u.TotalInputTokens} {
		if *p != nil && **p < 0 {
			*p = nil
		}
	}
	return u
}

// uncached answers the input not read from the cache, of total input with
// cached of it read from the cache; nil when either is unknown, or when
// cached is more than total (one of them is wrong).
func uncached(total, cached *int64) *int64 {
	if total == nil || cached == nil || *cached < 0 || *cached > *total {
		return nil
	}
	return i64(*total - *cached)
}

// sum answers the sum of counts, the absent counting zero; nil when first
// is unknown, or when a count is below zero or the sum too large to hold.
func sum(first *int64, rest ...*int64) *int64 {
	if first == nil || *first < 0 {
		return nil
	}
	total := *first
	for _, p := range rest {
		if p == nil {
			continue
		}
		if *p < 0 || *p > math.MaxInt64-total {
			return nil
		}
		total += *p
	}
	return &total
}
