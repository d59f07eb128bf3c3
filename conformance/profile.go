package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Profile describes a provider for a remote run (TestRemote and RunCLI);
// the package documentation shows its JSON form.
type Profile struct {
	Token              string                    `json:"token,omitempty"`
	SetupConfiguration json.RawMessage           `json:"setup_configuration,omitempty"`
	DuplicateSetup     string                    `json:"duplicate_setup,omitempty"`
	Executes           map[string]ProfileExecute `json:"executes"`
	Capabilities       ProfileCapabilities       `json:"capabilities"`
	Expect             []string                  `json:"expect,omitempty"`
	Options            ProfileOptions            `json:"options"`
}

// ProfileExecute is a Descriptor in JSON: the check compares the output
// with Output (equal) or OutputContains (every given field, recursively).
type ProfileExecute struct {
	Implementation json.RawMessage `json:"implementation"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output,omitempty"`
	OutputContains json.RawMessage `json:"output_contains,omitempty"`
	RunsMs         int64           `json:"runs_ms,omitempty"`
}

// ProfileCapabilities are the Capabilities a remote provider can declare
// (restart needs an in-process hook and is not among them).
type ProfileCapabilities struct {
	Cancel         bool                       `json:"cancel,omitempty"`
	LazyAllocation bool                       `json:"lazy_allocation,omitempty"`
	TurnEndRelease string                     `json:"turn_end_release,omitempty"`
	Methods        map[string]json.RawMessage `json:"methods,omitempty"`
	Reporter       *ReporterTrigger           `json:"reporter,omitempty"`
}

// ProfileOptions are the Options of a remote run.
type ProfileOptions struct {
	DeadlineMs   int64 `json:"deadline_ms,omitempty"`
	GraceMs      int64 `json:"grace_ms,omitempty"`
	TimeoutMs    int64 `json:"timeout_ms,omitempty"`
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	Concurrency  int   `json:"concurrency,omitempty"`
	Serial       bool  `json:"serial,omitempty"`
}

var roles = []string{RoleEcho, RoleSleep, RoleWrite, RoleRead, RoleUnsupported, RoleAllocation, RoleStuck, RoleProgress}

// checkedRoles are the roles whose output a case checks: "output" and
// "output_contains" have no effect on any other.
var checkedRoles = []string{RoleEcho, RoleWrite, RoleRead, RoleAllocation}

// timedRoles are the roles whose run time a case watches: "runs_ms" has
// no effect on any other.
var timedRoles = []string{RoleSleep, RoleProgress}

// profileCapability is the profile spelling of a capability: the key it
// has under "capabilities" (snake_case), used in "expect" too.
func profileCapability(name string) string { return strings.ReplaceAll(name, "-", "_") }

func profileCapabilities() []string {
	out := make([]string, len(allCapabilities))
	for i, c := range allCapabilities {
		out[i] = profileCapability(c)
	}
	return out
}

// remoteCapabilities are the capabilities a profile can declare.
func remoteCapabilities() []string {
	return slices.DeleteFunc(profileCapabilities(), func(name string) bool { return name == profileCapability(CapRestart) })
}

// ParseProfile decodes a profile strictly: unknown fields, unknown roles or
// capabilities, a missing echo, negative numbers and settings no case reads
// (an output of a role whose output is not checked, runs_ms of a role whose
// run time is not watched, restart in expect) are errors.
func ParseProfile(data []byte) (Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("conformance: profile: %w", err)
	}
	// Decoder.More answers false before a stray closing brace or bracket;
	// only the end of the input may follow the value.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Profile{}, errors.New("conformance: profile: trailing data after the JSON object")
	}
	if _, ok := p.Executes[RoleEcho]; !ok {
		return Profile{}, fmt.Errorf("conformance: profile: executes.%s is required", RoleEcho)
	}
	for role, e := range p.Executes {
		if !slices.Contains(roles, role) {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: unknown role (known: %v)", role, roles)
		}
		if len(e.Implementation) == 0 || len(e.Input) == 0 {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: implementation and input are required", role)
		}
		if (e.Output != nil || e.OutputContains != nil) && !slices.Contains(checkedRoles, role) {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: no case checks the output of this role; remove output and output_contains (checked for: %v)", role, checkedRoles)
		}
		if e.RunsMs != 0 && !slices.Contains(timedRoles, role) {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: no case reads runs_ms of this role; remove it (read for: %v)", role, timedRoles)
		}
		if e.RunsMs < 0 {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: runs_ms %d is negative", role, e.RunsMs)
		}
		if e.Output != nil && e.OutputContains != nil {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: give output or output_contains, not both", role)
		}
		if role == RoleRead && e.Output == nil && e.OutputContains == nil {
			return Profile{}, fmt.Errorf("conformance: profile: executes.%s: give output or output_contains, what the read sees only after the write (without it a read passes on any binding)", role)
		}
	}
	switch p.DuplicateSetup {
	case "", DuplicateFails, DuplicateAccepted:
	default:
		return Profile{}, fmt.Errorf("conformance: profile: duplicate_setup %q: want %q or %q", p.DuplicateSetup, DuplicateFails, DuplicateAccepted)
	}
	o := p.Options
	for _, opt := range []struct {
		name  string
		value int64
	}{
		{"deadline_ms", o.DeadlineMs}, {"grace_ms", o.GraceMs}, {"timeout_ms", o.TimeoutMs},
		{"max_body_bytes", o.MaxBodyBytes}, {"concurrency", int64(o.Concurrency)},
	} {
		if opt.value < 0 {
			// Options would replace it with its default, silently.
			return Profile{}, fmt.Errorf("conformance: profile: options.%s %d is negative (leave it out for the default)", opt.name, opt.value)
		}
	}
	for _, name := range p.Expect {
		if name == profileCapability(CapRestart) {
			return Profile{}, fmt.Errorf("conformance: profile: expect: %q needs an in-process restart hook, which a profile cannot declare (the case is skipped in a remote run)", name)
		}
		if !slices.Contains(profileCapabilities(), name) {
			return Profile{}, fmt.Errorf("conformance: profile: expect: unknown capability %q (known, spelled as under \"capabilities\": %v)", name, remoteCapabilities())
		}
	}
	return p, nil
}

// LoadProfile reads and parses a profile file; a relative path is read
// from the current directory.
func LoadProfile(path string) (Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, fmt.Errorf("conformance: %w", err)
	}
	return ParseProfile(data)
}

// Target describes the provider at url; token, when not empty, wins over
// the profile's.
func (p Profile) Target(url, token string) Target {
	if token == "" {
		token = p.Token
	}
	tg := Target{
		BaseURL:            url,
		Token:              token,
		Client:             newClient(),
		SetupConfiguration: p.SetupConfiguration,
		DuplicateSetup:     p.DuplicateSetup,
		Executes:           map[string]Descriptor{},
		Capabilities: Capabilities{
			Cancel:         p.Capabilities.Cancel,
			LazyAllocation: p.Capabilities.LazyAllocation,
			TurnEndRelease: p.Capabilities.TurnEndRelease,
			Methods:        p.Capabilities.Methods,
			Reporter:       p.Capabilities.Reporter,
		},
	}
	for role, e := range p.Executes {
		d := Descriptor{Implementation: e.Implementation, Input: e.Input, Runs: time.Duration(e.RunsMs) * time.Millisecond}
		switch {
		case e.Output != nil:
			want := e.Output
			d.Check = func(out json.RawMessage) error { return jsonMatch(out, want, false) }
		case e.OutputContains != nil:
			want := e.OutputContains
			d.Check = func(out json.RawMessage) error { return jsonMatch(out, want, true) }
		}
		tg.Executes[role] = d
	}
	return tg
}

// RunOptions are the profile's Options.
func (p Profile) RunOptions() *Options {
	o := p.Options
	expect := make([]string, len(p.Expect))
	for i, name := range p.Expect {
		expect[i] = strings.ReplaceAll(name, "_", "-")
	}
	return &Options{
		Expect:       expect,
		Serial:       o.Serial,
		Timeout:      time.Duration(o.TimeoutMs) * time.Millisecond,
		Deadline:     time.Duration(o.DeadlineMs) * time.Millisecond,
		Grace:        time.Duration(o.GraceMs) * time.Millisecond,
		MaxBodyBytes: o.MaxBodyBytes,
		Concurrency:  o.Concurrency,
	}
}

// jsonMatch compares got with want: equal, or (subset) every field of want
// present in got with a matching value.
func jsonMatch(got, want json.RawMessage, subset bool) error {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Errorf("output is not JSON: %w", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Errorf("expected output is not JSON: %w", err)
	}
	if !matches(g, w, subset) {
		verb := "equal"
		if subset {
			verb = "contain"
		}
		return fmt.Errorf("output %s does not %s %s", excerpt(got, 200), verb, excerpt(want, 200))
	}
	return nil
}

func matches(got, want any, subset bool) bool {
	if !subset {
		return reflect.DeepEqual(got, want)
	}
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !matches(gv, wv, true) {
			return false
		}
	}
	return true
}
