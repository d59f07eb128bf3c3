package docker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"
)

// Profile defaults.
const (
	DefaultProfileName = "default"
	DefaultUser        = "1000:1000"
	DefaultMemoryMB    = 256
	DefaultPids        = 64
	DefaultTmpfsMB     = 32
	DefaultOutputBytes = 1 << 20
	DefaultNetwork     = "none"
)

// maxUserID is the largest uid or gid the Engine takes.
const maxUserID = 1<<31 - 1

// Workspace access modes.
const (
	WorkspaceWrite = "write"
	WorkspaceRead  = "read"
)

// Profile is an operator-defined container shape. A binding's setup
// configuration names one; everything else about its containers comes from
// the operator, never from the session.
type Profile struct {
	// Image is a local image reference (tag or ID). Setup pins it to the
	// immutable image ID it resolves to at that moment.
	Image string `json:"image" validate:"required"`
	// Workspace is "write" (default) or "read": how /workspace is mounted.
	Workspace string `json:"workspace,omitempty" validate:"omitempty,oneof=read write"`
	// User is the numeric "uid:gid" commands run as; root is refused, and
	// so is an id above 2147483647, which the Engine refuses.
	User string `json:"user,omitempty"`
	// MemoryMB bounds the container's memory (and memory+swap). At most
	// what a byte count in an int64 holds: more would wrap around to no
	// bound or a negative one.
	MemoryMB int64 `json:"memory_mb,omitempty" validate:"omitempty,min=6,max=8796093022207"`
	// Pids bounds the number of processes in the container.
	Pids int64 `json:"pids,omitempty" validate:"omitempty,min=8"`
	// CPUs bounds CPU time (e.g. 0.5); zero leaves it unbounded. The
	// kernel's CFS quota takes no less than 1 ms per 100 ms period, so a
	// bound is at least 0.01.
	CPUs float64 `json:"cpus,omitempty" validate:"omitempty,gte=0.01,lte=1024"`
	// Network is "none" (default) or the name of a Docker network the
	// operator allows these containers to join.
	Network string `json:"network,omitempty"`
	// TmpfsMB sizes the tmpfs mounted at /tmp.
	TmpfsMB int64 `json:"tmpfs_mb,omitempty" validate:"omitempty,min=1"`
	// OutputBytes caps the stdout+stderr bytes a command returns (and
	// streams); the rest is drained and the result says truncated.
	OutputBytes int64 `json:"output_bytes,omitempty" validate:"omitempty,min=1"`
	// Timeout bounds an execute that carries no deadline, e.g. "10m".
	// Empty or "0" means unbounded.
	Timeout Duration `json:"timeout,omitempty"`
	// EnvAllow lists the environment variable names a command may set.
	EnvAllow []string `json:"env_allow,omitempty" validate:"dive,envname"`
}

// Duration is a time.Duration written as a Go duration string ("90s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string such as "90s" or "10m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

var (
	envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	userRe    = regexp.MustCompile(`^([0-9]+):([0-9]+)$`)
	profileRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	validate  = newValidator()
)

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	_ = v.RegisterValidation("envname", func(fl validator.FieldLevel) bool {
		return envNameRe.MatchString(fl.Field().String())
	})
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	return v
}

// withDefaults returns p with zero fields set to their defaults.
func (p Profile) withDefaults() Profile {
	if p.Workspace == "" {
		p.Workspace = WorkspaceWrite
	}
	if p.User == "" {
		p.User = DefaultUser
	}
	if p.MemoryMB == 0 {
		p.MemoryMB = DefaultMemoryMB
	}
	if p.Pids == 0 {
		p.Pids = DefaultPids
	}
	if p.Network == "" {
		p.Network = DefaultNetwork
	}
	if p.TmpfsMB == 0 {
		p.TmpfsMB = DefaultTmpfsMB
	}
	if p.OutputBytes == 0 {
		p.OutputBytes = DefaultOutputBytes
	}
	if len(p.EnvAllow) == 0 {
		p.EnvAllow = nil // one form for "none"
	}
	return p
}

// check validates a profile that already has its defaults.
func (p Profile) check() error {
	if err := validate.Struct(p); err != nil {
		var ve validator.ValidationErrors
		if errors.As(err, &ve) && len(ve) > 0 {
			f := ve[0]
			return fmt.Errorf("field %s: fails %q", strings.TrimPrefix(f.Namespace(), "Profile."), f.Tag())
		}
		return err
	}
	if slices.Contains(p.EnvAllow, execTagVar) {
		return fmt.Errorf("field env_allow: %q is the provider's own: it marks a command's processes so that a cancel finds them", execTagVar)
	}
	m := userRe.FindStringSubmatch(p.User)
	if m == nil {
		return fmt.Errorf("field user: %q is not a numeric uid:gid", p.User)
	}
	// The Engine refuses to create a container with a larger id, which
	// the first execute of every binding would find only then.
	for _, id := range m[1:] {
		if n, err := strconv.ParseUint(id, 10, 64); err != nil || n > maxUserID {
			return fmt.Errorf("field user: %q: a uid or gid is at most %d", p.User, maxUserID)
		}
	}
	if uid, _ := strconv.ParseUint(m[1], 10, 32); uid == 0 {
		return fmt.Errorf("field user: %q is root; containers run as a non-root user", p.User)
	}
	switch p.Network {
	case "host", "container":
		return fmt.Errorf("field network: %q would share a namespace with the host or another container", p.Network)
	}
	if strings.HasPrefix(p.Network, "container:") {
		return fmt.Errorf("field network: %q would share another container's namespace", p.Network)
	}
	return nil
}

// Profiles maps profile names to profiles.
type Profiles map[string]Profile

// Names lists the profile names in order.
func (ps Profiles) Names() []string {
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// normalize applies defaults and validates every profile.
func (ps Profiles) normalize() (Profiles, error) {
	if len(ps) == 0 {
		return nil, errors.New("no profiles defined")
	}
	out := make(Profiles, len(ps))
	for _, name := range ps.Names() {
		if !profileRe.MatchString(name) {
			return nil, fmt.Errorf("profile name %q: use letters, digits, '.', '_' or '-'", name)
		}
		p := ps[name].withDefaults()
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

// LoadProfiles reads a JSON object mapping profile names to profiles:
//
//	{"default": {"image": "sandbox:1", "memory_mb": 512},
//	 "reader":  {"image": "sandbox:1", "workspace": "read"}}
//
// Unknown fields are errors. Defaults are applied and every profile is
// validated.
func LoadProfiles(path string) (Profiles, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("docker: read profiles: %w", err)
	}
	ps, err := ParseProfiles(data)
	if err != nil {
		return nil, fmt.Errorf("docker: profiles %s: %w", path, err)
	}
	return ps, nil
}

// ParseProfiles decodes and validates profiles from JSON (see LoadProfiles).
func ParseProfiles(data []byte) (Profiles, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ps Profiles
	if err := dec.Decode(&ps); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	// Decoder.More answers false before a stray closing brace or bracket;
	// only the end of the input may follow the value.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode: trailing data after the profiles object")
	}
	return ps.normalize()
}
