package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// checkVariables refuses the BRAIN_* variables among environ ("NAME=value"
// entries) that "brain serve" does not read but whose names are so close to
// one it reads that they must have been meant as it: BRAIN_MAX_TURN_SEC or
// BRAIN_DATADIR would otherwise be ignored without a word, and Brain would
// run with the default the operator meant to change. Other BRAIN_*
// variables are left alone: the companions of "brain serve" read some
// (BRAIN_TOKEN, BRAIN_ENV_TOKEN), and the reference's variables this server
// does not implement are documented as not read. A value is never quoted:
// a misspelt BRAIN_API_TOKEN holds a credential.
func (f *serveFlags) checkVariables(environ []string) error {
	known := make([]string, 0, len(f.flagOf))
	for env := range f.flagOf {
		if strings.HasPrefix(env, "BRAIN_") {
			known = append(known, env)
		}
	}
	slices.Sort(known)
	var errs []error
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToUpper(name), "BRAIN_") || f.flagOf[name] != "" || seen[name] {
			continue
		}
		seen[name] = true
		if meant := closestVariable(name, known); meant != "" {
			errs = append(errs, fmt.Errorf("%s is not a setting of brain serve, which would ignore it: did you mean %s (--%s)?", name, meant, f.flagOf[meant]))
		}
	}
	return errors.Join(errs...)
}

// closestVariable answers the name among known that name is a misspelling
// of, or "". Names are compared without their underscores and with SECONDS
// read as SECS; one edit (a letter left out, added, changed, or two
// swapped) is a misspelling, and two are in a name of more than ten
// letters after BRAIN_.
func closestVariable(name string, known []string) string {
	canon := func(s string) string {
		s = strings.TrimPrefix(strings.ToUpper(s), "BRAIN_")
		s = strings.ReplaceAll(s, "SECONDS", "SECS")
		return strings.ReplaceAll(s, "_", "")
	}
	n := canon(name)
	best, bestDist := "", 3
	for _, k := range known {
		c := canon(k)
		most := 1
		if len(c) > 10 {
			most = 2
		}
		if d := editDistance(n, c); d <= most && d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and swaps of adjacent letters that
// turn one into the other.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
