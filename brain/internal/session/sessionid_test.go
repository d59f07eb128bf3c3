package session

import (
	"regexp"
	"strings"
	"testing"
)

// shapeRE is the session id shape as the reference states it.
var shapeRE = regexp.MustCompile(`^ses_[A-Za-z0-9]{20,32}$`)

func TestValidSessionID(t *testing.T) {
	for id, want := range map[string]bool{
		NewSessionID():                          true,
		"ses_" + strings.Repeat("a", 20):        true,
		"ses_" + strings.Repeat("Z9", 16):       true,
		"ses_" + strings.Repeat("a", 19):        false,
		"ses_" + strings.Repeat("a", 33):        false,
		"SES_" + strings.Repeat("a", 20):        false,
		"ses_" + strings.Repeat("a", 19) + "-":  false,
		"ses_" + strings.Repeat("a", 19) + "é":  false,
		"ses_" + strings.Repeat("a", 20) + "\n": false,
		"":                                      false,
	} {
		if got := ValidSessionID(id); got != want {
			t.Errorf("ValidSessionID(%q) = %v, want %v", id, got, want)
		}
	}
}

// FuzzValidSessionID holds ValidSessionID to the shape's regular
// expression.
func FuzzValidSessionID(f *testing.F) {
	f.Add("ses_" + strings.Repeat("a", 20))
	f.Add("ses_abc")
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidSessionID(id), shapeRE.MatchString(id); got != want {
			t.Fatalf("ValidSessionID(%q) = %v, the shape says %v", id, got, want)
		}
	})
}
