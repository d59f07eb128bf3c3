package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes the report as JUnit XML, one testcase per case id. The
// testsuite's time is the report's Duration, or, when that is zero, the
// sum of the cases' times.
func WriteJUnit(w io.Writer, r Report) error {
	s := junitSuite{Name: "environment/v1 conformance", Tests: len(r.Results)}
	var total time.Duration
	for _, res := range r.Results {
		total += res.Duration
		c := junitCase{Name: res.ID, Classname: "conformance", Time: seconds(res.Duration)}
		log := strings.Join(res.Log, "\n")
		first, _, _ := strings.Cut(log, "\n")
		switch res.Status {
		case Fail:
			s.Failures++
			c.Failure = &junitMessage{Message: first, Body: log}
		case Skip:
			s.Skipped++
			c.Skipped = &junitMessage{Message: first}
		default:
			c.SystemOut = log
		}
		s.Cases = append(s.Cases, c)
	}
	// The suite took the run's wall time; the cases' times add up to more
	// when they ran in parallel.
	if r.Duration > 0 {
		total = r.Duration
	}
	s.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("conformance: write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return fmt.Errorf("conformance: write junit: %w", err)
	}
	return nil
}
