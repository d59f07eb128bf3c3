package workspace

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Release policies for the turn-end method release.
const (
	ReleaseKeep = "keep"
	ReleaseWipe = "wipe"
)

// AnyCommand in Options.Commands allows every program.
const AnyCommand = "any"

// Defaults of Options.
const (
	DefaultMaxBytes       = 1 << 30
	DefaultMaxFiles       = 100_000
	DefaultOutputLimit    = 1 << 20
	DefaultCommandTimeout = 10 * time.Minute
)

// MinAnswerBytes is the least Options.MaxAnswerBytes the provider takes. A
// smaller bound holds no useful answer: not the failure output_limit that
// replaces an answer too large (about 350 bytes with its details), nor a
// read with room for a character beside its envelope, so a caller paging
// through a file by offset would make no progress.
const MinAnswerBytes = 1 << 10

// DefaultEnv is the provider environment passed to commands when
// Options.EnvAllow is nil.
var DefaultEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// Options configure the provider; they are the operator's, never a
// session's.
type Options struct {
	// Root is the directory holding the workspaces and the binding state.
	// It is created if missing.
	Root string
	// MaxBytes and MaxFiles bound a workspace's total size and number of
	// entries. The file tools refuse a write beyond them and a command does
	// not start in a workspace already beyond them (limit_exceeded); a
	// running command is not stopped by them. The contents of a directory
	// the provider cannot read are not counted. Zero means the default,
	// negative means unlimited.
	MaxBytes int64
	MaxFiles int
	// OutputLimit caps each of a command's stdout and stderr, and the
	// content a read returns, in bytes; an edit works only on a file no
	// larger (output_limit). Zero means DefaultOutputLimit. A binding may
	// lower it for its streams and reads.
	OutputLimit int
	// Commands is the allow-list of program names (the base name of argv[0];
	// "sh" allows shell lines); a path is refused (ErrOptions), since no
	// base name would match it. Nil, or a list holding AnyCommand, allows
	// every program. A list that restricts the programs also keeps a
	// session from setting the loader's variables (LD_*, GCONV_PATH).
	Commands []string
	// CommandTimeout bounds a command whose execute has no deadline; zero
	// means DefaultCommandTimeout, negative means none.
	CommandTimeout time.Duration
	// Release is what the method release does: ReleaseKeep (default) keeps
	// the workspace, ReleaseWipe removes it so the next execute starts
	// empty.
	Release string
	// MaxAnswerBytes is the largest answer to an operation Brain takes
	// (its operator's BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES); zero means
	// Brain's default, envapi.MaxResponseBytes, and one below
	// MinAnswerBytes is refused (ErrOptions). Reads, command outputs and
	// lists are cut to fit in it (truncated), and a larger answer is
	// answered as the failure output_limit instead.
	MaxAnswerBytes int64
	// EnvAllow names the provider's environment variables passed to
	// commands; nil means DefaultEnv.
	EnvAllow []string
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
}

// ErrOptions reports invalid operator options.
var ErrOptions = errors.New("workspace: invalid options")

// ErrRootInUse reports a root that another provider, in this process or
// another, holds.
var ErrRootInUse = errors.New("workspace: root in use by another provider")

func (o Options) withDefaults() (Options, error) {
	if o.Root == "" {
		return o, fmt.Errorf("%w: Root is required", ErrOptions)
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return o, fmt.Errorf("%w: Root: %w", ErrOptions, err)
	}
	o.Root = root
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.OutputLimit == 0 {
		o.OutputLimit = DefaultOutputLimit
	}
	if o.OutputLimit < 0 {
		return o, fmt.Errorf("%w: OutputLimit %d is negative", ErrOptions, o.OutputLimit)
	}
	if o.MaxAnswerBytes == 0 {
		o.MaxAnswerBytes = envapi.MaxResponseBytes
	}
	if o.MaxAnswerBytes < MinAnswerBytes {
		return o, fmt.Errorf("%w: MaxAnswerBytes %d is below %d, the least that holds an answer", ErrOptions, o.MaxAnswerBytes, MinAnswerBytes)
	}
	for _, name := range o.Commands {
		if !programName(name) {
			return o, fmt.Errorf("%w: Commands: %q is not a program name: give the base name a command runs it by (git, not /usr/bin/git)", ErrOptions, name)
		}
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	switch o.Release {
	case "":
		o.Release = ReleaseKeep
	case ReleaseKeep, ReleaseWipe:
	default:
		return o, fmt.Errorf("%w: Release %q is neither %q nor %q", ErrOptions, o.Release, ReleaseKeep, ReleaseWipe)
	}
	if o.EnvAllow == nil {
		o.EnvAllow = DefaultEnv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// programName reports whether name can be the base name of a program, as
// the allow-list matches it: not empty, ".", ".." or a path.
func programName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// restricted reports whether the operator allows only some programs.
func (o *Options) restricted() bool {
	return o.Commands != nil && !slices.Contains(o.Commands, AnyCommand)
}

// allowsProgram reports whether the operator allows running name.
func (o *Options) allowsProgram(name string) bool {
	return !o.restricted() || slices.Contains(o.Commands, filepath.Base(name))
}

// allowsVariable reports whether a session may give its commands the
// variable name (in a command's input or the binding's configuration).
// When the programs are restricted it may not set the variables through
// which the dynamic loader and the C library load code into a program
// (LD_PRELOAD and every other LD_ variable, GCONV_PATH): with them an
// allowed program would run a library the session wrote.
func (o *Options) allowsVariable(name string) bool {
	return !o.restricted() || !(strings.HasPrefix(name, "LD_") || name == "GCONV_PATH")
}

// BindingConfig is a binding's setup configuration:
//
//	{"label": STRING?, "output_limit": N?, "timeout_ms": N?,
//	 "release_on_turn_end": BOOL?, "env": {NAME: VALUE}?}
//
// output_limit may only lower the operator's limit; timeout_ms bounds a
// command whose execute has no deadline (instead of the operator's
// default); env is added to every command's environment;
// release_on_turn_end makes setup register the method release for turn end.
type BindingConfig struct {
	Label            string            `json:"label,omitempty" validate:"max=128"`
	OutputLimit      int               `json:"output_limit,omitempty" validate:"omitempty,min=1"`
	TimeoutMs        int64             `json:"timeout_ms,omitempty" validate:"omitempty,min=1"`
	ReleaseOnTurnEnd bool              `json:"release_on_turn_end,omitempty"`
	Env              map[string]string `json:"env,omitempty" validate:"omitempty,max=64,dive,keys,min=1,max=128,endkeys,max=4096"`
}
