package main

import (
	"flag"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
)

// serveConfig builds the Config "brain serve" runs with from its
// environment and arguments, the way serve does: flags over the
// environment (a refused variable whose flag is given is not used),
// parsed and checked, mapped to a Config, and that Config
// validated as brain.New validates it. Any error on the way stops start-up.
func serveConfig(env map[string]string, args ...string) (brain.Config, error) {
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	envErr := f.register(fs, lookup)
	if err := fs.Parse(args); err != nil {
		return brain.Config{}, err
	}
	if err := f.checkParsed(fs); err != nil {
		return brain.Config{}, err
	}
	if err := unlessOverridden(envErr, fs); err != nil {
		return brain.Config{}, err
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	if err := f.checkVariables(environ); err != nil {
		return brain.Config{}, err
	}
	cfg := f.config(slog.New(slog.NewTextHandler(io.Discard, nil)), "")
	return cfg, cfg.Validate()
}

// limitVar is one BRAIN_MAX_* variable and its flag.
type limitVar struct {
	env, flag string
	// def is the shipped default, in the variable's unit.
	def int64
	// unit converts the variable's value to the Config field's.
	unit int64
	// zero is the Config value of 0; refused, when set, refuses 0 (the
	// variable must be at least 1).
	zero    int64
	refused bool
	get     func(brain.Config) int64
}

const (
	unitCount = 1
	unitSecs  = int64(time.Second)
	// noBound is brain.NoLimit as a Config value, also as a Duration.
	noBound = int64(brain.NoLimit)
)

var limitVars = []limitVar{
	// The turn limits: 0 removes the bound.
	{"BRAIN_MAX_MODEL_CALLS", "max-model-calls", 128, unitCount, noBound, false, func(c brain.Config) int64 { return int64(c.Limits.MaxModelCalls) }},
	{"BRAIN_MAX_TURN_SECS", "max-turn-secs", 1800, unitSecs, noBound, false, func(c brain.Config) int64 { return int64(c.Limits.MaxTurn) }},
	{"BRAIN_MAX_TOOL_SECS", "max-tool-secs", 120, unitSecs, noBound, false, func(c brain.Config) int64 { return int64(c.Limits.MaxTool) }},
	{"BRAIN_MAX_EMITTED_BYTES", "max-emitted-bytes", 1 << 20, unitCount, noBound, false, func(c brain.Config) int64 { return c.Limits.MaxEmittedBytes }},

	// Model stream and call bounds, and every bound below: the server
	// has no unbounded form of them, so 0 is refused (RATIONALE.md,
	// "Ceilings that zero does not lift").
	{"BRAIN_MAX_MODEL_OUTPUT_BYTES", "max-model-output-bytes", 4 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.Models.MaxOutputBytes }},
	{"BRAIN_MAX_MODEL_DELTA_BYTES", "max-model-delta-bytes", 64 << 10, unitCount, 0, true, func(c brain.Config) int64 { return c.Models.MaxDeltaBytes }},
	{"BRAIN_MAX_MODEL_STREAM_BYTES", "max-model-stream-bytes", 32 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.Models.MaxStreamBytes }},
	{"BRAIN_MAX_MODEL_FRAME_BYTES", "max-model-frame-bytes", 256 << 10, unitCount, 0, true, func(c brain.Config) int64 { return c.Models.MaxFrameBytes }},
	{"BRAIN_MAX_MODEL_ERROR_BYTES", "max-model-error-bytes", 16 << 10, unitCount, 0, true, func(c brain.Config) int64 { return c.Models.MaxErrorBytes }},
	{"BRAIN_MAX_MODEL_SECS", "max-model-secs", 120, unitSecs, 0, true, func(c brain.Config) int64 { return int64(c.Models.Timeout) }},
	{"BRAIN_MAX_MODEL_CONNECT_SECS", "max-model-connect-secs", 10, unitSecs, 0, true, func(c brain.Config) int64 { return int64(c.Models.ConnectTimeout) }},

	// Environment calls.
	{"BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES", "max-environment-response-bytes", 32 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.Environments.MaxResponseBytes }},
	{"BRAIN_MAX_ENVIRONMENT_SECS", "max-environment-secs", 120, unitSecs, 0, true, func(c brain.Config) int64 { return int64(c.Environments.Timeout) }},
	{"BRAIN_MAX_ENVIRONMENT_CONNECT_SECS", "max-environment-connect-secs", 5, unitSecs, 0, true, func(c brain.Config) int64 { return int64(c.Environments.ConnectTimeout) }},

	// Journal writer.
	{"BRAIN_MAX_JOURNAL_QUEUE_BYTES", "max-journal-queue-bytes", 64 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.MaxJournalQueueBytes }},
	{"BRAIN_MAX_SESSION_QUEUE_BYTES", "max-session-queue-bytes", 8 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.MaxSessionQueueBytes }},
	{"BRAIN_MAX_JOURNAL_OPEN_FILES", "max-journal-open-files", 256, unitCount, 0, true, func(c brain.Config) int64 { return int64(c.MaxJournalOpenFiles) }},

	// HTTP.
	{"BRAIN_MAX_REQUEST_BYTES", "max-request-bytes", 32 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.MaxRequestBytes }},
	{"BRAIN_MAX_CONNECTIONS", "max-connections", 1024, unitCount, 0, true, func(c brain.Config) int64 { return int64(c.MaxConnections) }},
	{"BRAIN_MAX_LIVE_BACKLOG", "max-live-backlog", 1024, unitCount, 0, true, func(c brain.Config) int64 { return int64(c.MaxLiveBacklog) }},

	// Wasm.
	{"BRAIN_MAX_LINEAR_MEMORY_BYTES", "max-linear-memory-bytes", 128 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.Agentloops.MaxLinearMemoryBytes }},
	{"BRAIN_MAX_CORE_INSTANCES", "max-core-instances", 8, unitCount, 0, true, func(c brain.Config) int64 { return int64(c.Agentloops.MaxCoreInstances) }},
	{"BRAIN_MAX_SCRATCH_BYTES", "max-scratch-bytes", 64 << 20, unitCount, 0, true, func(c brain.Config) int64 { return c.Agentloops.MaxScratchBytes }},

	// Hosts.
	{"BRAIN_MAX_HOSTS", "max-hosts", 4096, unitCount, 0, true, func(c brain.Config) int64 { return int64(c.Hosts.MaxHosts) }},
	{"BRAIN_MAX_HOST_COMMANDS", "max-host-commands", 128, unitCount, 0, true, func(c brain.Config) int64 { return int64(c.Hosts.MaxCommands) }},
}

// badValues are refused for every variable and flag: negative, not an
// integer, beyond int64.
var badValues = []string{"-1", "-5", "lots", "1.5", "", "99999999999999999999"}

// badSecs are further refused by the _SECS variables: seconds that do not
// fit a time.Duration (this one would wrap to about 0.3 s).
const badSecs = "18446744074"

// TestLimitVariablesReachConfig: every BRAIN_MAX_* variable and its flag
// become the Config field the engine uses. Unset selects the shipped
// default; 0 removes the turn limits' bounds (brain.NoLimit) and is refused
// for every other bound, which must be at least 1; a positive value is
// used as given; a flag wins over the
// variable; a negative or malformed value stops start-up with an error
// naming the variable or flag.
func TestLimitVariablesReachConfig(t *testing.T) {
	for _, v := range limitVars {
		t.Run(v.env, func(t *testing.T) {
			bad := badValues
			if v.unit == unitSecs {
				bad = append(bad[:len(bad):len(bad)], badSecs)
			}
			// Values distinct from the default and from each other,
			// within every field's range.
			envVal, flagVal := v.def+v.def/2, 2*v.def

			check := func(what string, env map[string]string, want int64, args ...string) {
				t.Helper()
				cfg, err := serveConfig(env, args...)
				if err != nil {
					t.Errorf("%s: %v", what, err)
					return
				}
				if got := v.get(cfg); got != want {
					t.Errorf("%s: Config value %d, want %d", what, got, want)
				}
			}
			refused := func(what, name string, env map[string]string, args ...string) {
				t.Helper()
				_, err := serveConfig(env, args...)
				if err == nil {
					t.Errorf("%s was accepted", what)
				} else if !strings.Contains(err.Error(), name) {
					t.Errorf("%s: error %q does not name %s", what, err, name)
				}
			}
			env := func(val string) map[string]string { return map[string]string{v.env: val} }
			itoa := func(n int64) string { return strconv.FormatInt(n, 10) }

			check("unset", nil, v.def*v.unit)
			check(v.env+"="+itoa(envVal), env(itoa(envVal)), envVal*v.unit)
			check("--"+v.flag+" "+itoa(flagVal), nil, flagVal*v.unit, "--"+v.flag, itoa(flagVal))
			check("--"+v.flag+" over "+v.env, env(itoa(envVal)), flagVal*v.unit, "--"+v.flag, itoa(flagVal))
			if v.refused {
				refused(v.env+"=0", v.env, env("0"))
				refused("--"+v.flag+" 0", "-"+v.flag, nil, "--"+v.flag, "0")
			} else {
				check(v.env+"=0", env("0"), v.zero)
				check("--"+v.flag+" 0", nil, v.zero, "--"+v.flag, "0")
				check("--"+v.flag+" 0 over "+v.env, env(itoa(envVal)), v.zero, "--"+v.flag, "0")
			}
			for _, b := range bad {
				refused(v.env+"="+strconv.Quote(b), v.env, env(b))
				refused("--"+v.flag+" "+strconv.Quote(b), "-"+v.flag, nil, "--"+v.flag, b)
			}
		})
	}
}

// TestLimitFlagsAreListed: every flag of a BRAIN_MAX_* variable is covered
// above, names its variable in --help and shows the shipped default.
func TestLimitFlagsAreListed(t *testing.T) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := f.register(fs, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	covered := map[string]limitVar{}
	for _, v := range limitVars {
		covered[v.flag] = v
		fl := fs.Lookup(v.flag)
		if fl == nil {
			t.Errorf("no flag --%s", v.flag)
			continue
		}
		if !strings.Contains(fl.Usage, "("+v.env+")") {
			t.Errorf("--%s usage %q does not name %s", v.flag, fl.Usage, v.env)
		}
		if want := strconv.FormatInt(v.def, 10); fl.DefValue != want {
			t.Errorf("--%s default %s, want %s", v.flag, fl.DefValue, want)
		}
	}
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := covered[fl.Name]; !ok && strings.Contains(fl.Usage, "(BRAIN_MAX_") {
			t.Errorf("--%s (%s) is not covered", fl.Name, fl.Usage)
		}
	})
}

// TestIdleTTLVariableReachesConfig: BRAIN_SESSION_IDLE_TTL_SECS and
// --session-idle-ttl-secs are optional. Unset, Config.IdleTTL is 0 (idle
// sessions are released after each turn); 0 keeps them (brain.NoLimit); a
// positive value keeps them that many seconds; the flag wins; a negative or
// malformed value stops start-up naming the variable or flag.
func TestIdleTTLVariableReachesConfig(t *testing.T) {
	const name, fl = "BRAIN_SESSION_IDLE_TTL_SECS", "session-idle-ttl-secs"
	for _, c := range []struct {
		what string
		env  map[string]string
		args []string
		want time.Duration
	}{
		{"unset", nil, nil, 0},
		{name + "=0", map[string]string{name: "0"}, nil, brain.NoLimit},
		{name + "=30", map[string]string{name: "30"}, nil, 30 * time.Second},
		{"--" + fl + " 45", nil, []string{"--" + fl, "45"}, 45 * time.Second},
		{"--" + fl + " 0", nil, []string{"--" + fl, "0"}, brain.NoLimit},
		{"--" + fl + " 45 over " + name, map[string]string{name: "30"}, []string{"--" + fl, "45"}, 45 * time.Second},
		{"--" + fl + " 0 over " + name, map[string]string{name: "30"}, []string{"--" + fl, "0"}, brain.NoLimit},
	} {
		cfg, err := serveConfig(c.env, c.args...)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
		} else if cfg.IdleTTL != c.want {
			t.Errorf("%s: Config.IdleTTL = %v, want %v", c.what, cfg.IdleTTL, c.want)
		}
	}
	for _, b := range append(badValues[:len(badValues):len(badValues)], badSecs) {
		if _, err := serveConfig(map[string]string{name: b}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v, want one naming %s", name, b, err, name)
		}
		if _, err := serveConfig(nil, "--"+fl, b); err == nil || !strings.Contains(err.Error(), "-"+fl) {
			t.Errorf("--%s %q: error %v, want one naming --%s", fl, b, err, fl)
		}
	}
}

// TestRequestRetentionReachesConfig: completed idempotency answers are kept
// 24 hours unless BRAIN_REQUEST_RETENTION_SECS says otherwise; 0 keeps them
// for ever.
func TestRequestRetentionReachesConfig(t *testing.T) {
	const name, fl = "BRAIN_REQUEST_RETENTION_SECS", "request-retention-secs"
	for _, c := range []struct {
		what string
		env  map[string]string
		args []string
		want time.Duration
	}{
		{"unset", nil, nil, 24 * time.Hour},
		{name + "=0", map[string]string{name: "0"}, nil, brain.NoLimit},
		{name + "=60", map[string]string{name: "60"}, nil, time.Minute},
		{"--" + fl + " 90 over " + name, map[string]string{name: "60"}, []string{"--" + fl, "90"}, 90 * time.Second},
	} {
		cfg, err := serveConfig(c.env, c.args...)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
		} else if cfg.RequestRetention != c.want {
			t.Errorf("%s: Config.RequestRetention = %v, want %v", c.what, cfg.RequestRetention, c.want)
		}
	}
	if _, err := serveConfig(map[string]string{name: "-1"}); err == nil || !strings.Contains(err.Error(), name) {
		t.Errorf("%s=-1: error %v, want one naming %s", name, err, name)
	}
}

// TestIntegerFlagsReadDecimal: an integer flag reads the decimal digits
// its variable reads. A zero-padded value is that number, as it is in the
// variable (the flag read 010 as octal 8, so --max-request-bytes 0100
// bounded bodies to 64 bytes), and a hexadecimal, binary or octal prefix
// or a digit separator, which the variable refuses, is refused naming the
// flag instead of becoming another number.
func TestIntegerFlagsReadDecimal(t *testing.T) {
	for _, v := range limitVars {
		padded := "0" + strconv.FormatInt(2*v.def, 10)
		cfg, err := serveConfig(nil, "--"+v.flag, padded)
		if err != nil {
			t.Errorf("--%s %s: %v", v.flag, padded, err)
		} else if got := v.get(cfg); got != 2*v.def*v.unit {
			t.Errorf("--%s %s: Config value %d, want %d", v.flag, padded, got, 2*v.def*v.unit)
		}
		if cfg, err := serveConfig(map[string]string{v.env: padded}); err != nil || v.get(cfg) != 2*v.def*v.unit {
			t.Errorf("%s=%s: Config value %d (%v), want %d", v.env, padded, v.get(cfg), err, 2*v.def*v.unit)
		}
		for _, bad := range []string{"0x40000", "0X40000", "0b1000000000000000000", "0o200000", "65_536"} {
			if _, err := serveConfig(nil, "--"+v.flag, bad); err == nil || !strings.Contains(err.Error(), "-"+v.flag) {
				t.Errorf("--%s %s: error %v, want one naming --%s", v.flag, bad, err, v.flag)
			}
			if _, err := serveConfig(map[string]string{v.env: bad}); err == nil || !strings.Contains(err.Error(), v.env) {
				t.Errorf("%s=%s: error %v, want one naming %s", v.env, bad, err, v.env)
			}
		}
	}
	// --help still says which flags take an integer.
	var stdout, stderr strings.Builder
	if code := serve(t.Context(), []string{"--help"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "  -max-request-bytes int\n") || !strings.Contains(stdout.String(), "(default 33554432)") {
		t.Errorf("--help: exit %d, usage %q", code, stdout.String())
	}
}
