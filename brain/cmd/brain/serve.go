package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/internal/netutil"
)

const serveUsage = `usage: brain serve [flags]

Runs the Brain session server. Every flag has an environment variable; a
flag given on the command line wins.

Models: a session names its model as {"provider", "name", "api_key"?}.
Providers: "openai" (Responses API), "openai_chat" (Chat Completions, for
local servers: point --openai-base-url at them), "anthropic" (Messages API)
and the offline "scripted" model, whose message answers "echo: <text>" or
follows a JSON script ({"reply", "tool_calls", "delay_ms", "fail",
"stream"}). A session without an api_key uses OPENAI_API_KEY or
ANTHROPIC_API_KEY from Brain's environment.

Authentication: without BRAIN_API_TOKEN a token is generated, saved to
<data dir>/operator.token (mode 0600) and required. --no-auth serves without
authentication and, like a missing token, is refused on a non-loopback
address; it is refused beside a token too. A token with white space at an
end or a control character (a line end read with it) is refused: no
Authorization header can carry it. So is such an environment credential
(--environment-api-key, the api_key of a route in the routes file).

Tracing: OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
exports spans of requests, turns, model and tool calls and environment
operations over OTLP, with W3C trace context sent to environments and
models; OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or grpc), _HEADERS,
_INSECURE, _TIMEOUT (ms), _COMPRESSION (gzip or none), each also as
OTEL_EXPORTER_OTLP_TRACES_* and OTEL_EXPORTER_OTLP_LOGS_*, OTEL_SERVICE_NAME,
OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER and OTEL_LOGS_EXPORTER (otlp or
none) and OTEL_SDK_DISABLED as usual. Unset: nothing is traced.

Signals: SIGTERM or SIGINT drains (new work answers 503, admitted turns
finish and commit, streams close, exit 0); a second signal exits at once.
A signal within a quarter second of the first is the same one delivered
again (timeout(1) signals the process, then its process group), not a
second.

Exit status: 0 after a drain; 2 when a setting is refused (malformed, out
of range, contradicting another, having no effect beside the others, or
unsafe, such as a non-loopback address without a token) or a BRAIN_*
variable is a misspelling of one (BRAIN_MAX_TURN_SEC), before anything
starts; 1 when serving fails (an address in use, a data directory another
process holds, a file that cannot be read) or a second signal cut the
drain short.

flags:
`

// serveFlags are the settings of "brain serve".
type serveFlags struct {
	listen, dataDir, token, publicURL, logLevel string
	databaseURL, sealingKeyFile                 string
	leaseSecs                                   int64
	noAuth                                      bool
	maxModelCalls, maxLiveBacklog               int64
	maxTurnSecs, maxToolSecs, idleTTLSecs       int64
	retentionSecs, maxEmitted, maxRequestBytes  int64
	bodyTimeoutSecs, maxConnections             int64
	heartbeatSecs                               int64
	idleTTLSet                                  bool
	ints                                        []intFlag
	// flagOf names the flag of each variable.
	flagOf map[string]string
	// given holds the flags set on the command line or by their
	// variable, by flag name.
	given map[string]bool

	openAIBaseURL, anthropicBaseURL               string
	maxModelOutput, maxModelDelta, maxModelStream int64
	maxModelFrame, maxModelError                  int64
	maxModelSecs, maxModelConnectSecs             int64

	envBaseURL, envAPIKey, envRoutesFile string
	maxEnvResponseBytes, maxEnvSecs      int64
	maxEnvConnectSecs                    int64
	workspaceRoot                        string
	builtinWasm                          bool
	maxJournalQueue, maxSessionQueue     int64
	maxJournalOpenFiles                  int64
	maxLinearMemory                      int64
	noWorkspace                          bool
	maxCoreInstances                     int64
	maxScratch                           int64
	filesystemAllow                      string
	secretAllow                          secretsValue
	maxHosts, maxHostCommands            int64
	hostUnconnectedSecs                  int64
	providersFile                        string
	metricsListen                        string
	otlp                                 brain.OTLP
	telemetryFile                        string
	telemetryMaxRecord, telemetryMaxFile int64
	telemetrySessionRate, telemetryRate  int64
}

// register defines the flags on fs, each defaulting to its variable, and
// answers the variables whose values it refuses. The refusal of a
// variable that has a flag is a *variableError: unlessOverridden drops it
// once the command line gave that flag.
func (f *serveFlags) register(fs *flag.FlagSet, env func(string) (string, bool)) error {
	var errs []error
	f.flagOf = map[string]string{}
	f.given = map[string]bool{}
	str := func(p *string, name, envName, def, help string) {
		f.flagOf[envName] = name
		v, ok := env(envName)
		if !ok {
			v = def
		}
		fs.StringVar(p, name, v, fmt.Sprintf("%s (%s)", help, envName))
	}
	// link is str for URLs: the usage shows their value without the
	// credentials (user information, query) it may carry.
	link := func(p *string, name, envName, help string) {
		str(p, name, envName, "", help)
		fl := fs.Lookup(name)
		fl.DefValue = shownURL(fl.DefValue)
	}
	// secret is str for credentials: the usage never shows their value.
	secret := func(p *string, name, envName, help string) {
		f.flagOf[envName] = name
		*p, _ = env(envName)
		fs.Var(secretValue{p}, name, fmt.Sprintf("%s (%s)", help, envName))
	}
	// boolean reads a switch: a value strconv.ParseBool refuses stops
	// start-up.
	boolean := func(p *bool, name, envName, help string) {
		f.flagOf[envName] = name
		v := false
		if s, ok := env(envName); ok && s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				errs = append(errs, &variableError{name, fmt.Errorf("%s=%q: want 1, true, 0 or false", envName, s)})
			}
			v = b
		}
		fs.BoolVar(p, name, v, fmt.Sprintf("%s (%s=1)", help, envName))
	}
	num := func(p *int64, name, envName string, def, least, most int64, help string) {
		f.flagOf[envName] = name
		v := def
		if s, ok := env(envName); ok {
			f.given[name] = true
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < least || n > most {
				errs = append(errs, &variableError{name, fmt.Errorf("%s=%q: %s", envName, s, inRange(least, most))})
			}
			v = n
		}
		*p = v
		fs.Var(&decimalValue{p: p, least: least, most: most}, name, fmt.Sprintf("%s (%s)", help, envName))
		f.ints = append(f.ints, intFlag{p, name, envName, least, most})
	}
	i64 := func(p *int64, name, envName string, def int64, help string) {
		num(p, name, envName, def, 0, math.MaxInt64, help)
	}
	// atLeast1 refuses 0; secs refuses seconds beyond a time.Duration.
	atLeast1 := func(p *int64, name, envName string, def int64, help string) {
		num(p, name, envName, def, 1, math.MaxInt64, help)
	}
	secs := func(p *int64, name, envName string, def int64, help string) {
		num(p, name, envName, def, 0, maxSecs, help)
	}
	str(&f.listen, "listen", "BRAIN_LISTEN", "127.0.0.1:8080", "address to listen on")
	str(&f.dataDir, "data-dir", "BRAIN_DATA_DIR", "brain-data", "data directory")
	secret(&f.token, "token", "BRAIN_API_TOKEN", "bearer token of every application route; generated when empty")
	link(&f.publicURL, "public-url", "BRAIN_PUBLIC_URL", "base URL of callbacks and reporters (default http://<listen address>)")
	secret(&f.databaseURL, "database-url", "BRAIN_DATABASE_URL", "postgres:// URL of the database the nodes of a cluster share (default: the data directory)")
	str(&f.sealingKeyFile, "sealing-key-file", "BRAIN_SEALING_KEY_FILE", "", "key file all nodes sharing the database use (required with --database-url, refused without it)")
	num(&f.leaseSecs, "lease-secs", "BRAIN_LEASE_SECS", 10, 1, maxSecs, "with --database-url: seconds a node's lease on a session lasts unless renewed, at least 1")
	str(&f.logLevel, "log-level", "BRAIN_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	boolean(&f.noAuth, "no-auth", "BRAIN_NO_AUTH", "serve without authentication, loopback only")
	i64(&f.maxModelCalls, "max-model-calls", "BRAIN_MAX_MODEL_CALLS", 128, "model calls per turn, 0 = no bound")
	secs(&f.maxTurnSecs, "max-turn-secs", "BRAIN_MAX_TURN_SECS", 1800, "turn wall time in seconds, 0 = no bound")
	secs(&f.maxToolSecs, "max-tool-secs", "BRAIN_MAX_TOOL_SECS", 120, "deadline of every tool call in seconds, 0 = no bound")
	i64(&f.maxEmitted, "max-emitted-bytes", "BRAIN_MAX_EMITTED_BYTES", 1<<20, "extension event bytes per turn, 0 = no bound")
	_, f.idleTTLSet = env("BRAIN_SESSION_IDLE_TTL_SECS")
	secs(&f.idleTTLSecs, "session-idle-ttl-secs", "BRAIN_SESSION_IDLE_TTL_SECS", 0, "keep idle sessions in memory this long, 0 = forever; unset releases after each turn")
	secs(&f.retentionSecs, "request-retention-secs", "BRAIN_REQUEST_RETENTION_SECS", 86400, "idempotency answer retention in seconds, 0 = forever")
	atLeast1(&f.maxRequestBytes, "max-request-bytes", "BRAIN_MAX_REQUEST_BYTES", 32<<20, "request body limit in bytes (413 above), at least 1")
	num(&f.bodyTimeoutSecs, "request-body-timeout-secs", "BRAIN_REQUEST_BODY_TIMEOUT_SECS", 60, 1, maxSecs, "seconds a request body may take to arrive (400 and close after), at least 1")
	atLeast1(&f.maxConnections, "max-connections", "BRAIN_MAX_CONNECTIONS", 1024, "connections open at once; more wait in the listen backlog, at least 1")
	atLeast1(&f.maxLiveBacklog, "max-live-backlog", "BRAIN_MAX_LIVE_BACKLOG", 1024, "records an event stream may lag before it ends, at least 1")
	num(&f.heartbeatSecs, "heartbeat-secs", "BRAIN_SSE_HEARTBEAT_SECS", 15, 1, maxSecs, "comment interval of idle event streams in seconds, at least 1")
	link(&f.openAIBaseURL, "openai-base-url", "BRAIN_OPENAI_BASE_URL", "base URL of the openai and openai_chat providers (default the hosted API)")
	link(&f.anthropicBaseURL, "anthropic-base-url", "BRAIN_ANTHROPIC_BASE_URL", "base URL of the anthropic provider (default the hosted API)")
	atLeast1(&f.maxModelOutput, "max-model-output-bytes", "BRAIN_MAX_MODEL_OUTPUT_BYTES", 4<<20, "largest assembled model answer in bytes, at least 1")
	atLeast1(&f.maxModelDelta, "max-model-delta-bytes", "BRAIN_MAX_MODEL_DELTA_BYTES", 64<<10, "largest live model delta in bytes, at least 1")
	atLeast1(&f.maxModelStream, "max-model-stream-bytes", "BRAIN_MAX_MODEL_STREAM_BYTES", 32<<20, "largest model response stream in bytes, at least 1")
	atLeast1(&f.maxModelFrame, "max-model-frame-bytes", "BRAIN_MAX_MODEL_FRAME_BYTES", 256<<10, "largest model stream event in bytes, at least 1")
	atLeast1(&f.maxModelError, "max-model-error-bytes", "BRAIN_MAX_MODEL_ERROR_BYTES", 16<<10, "largest model error body read in bytes, at least 1")
	num(&f.maxModelSecs, "max-model-secs", "BRAIN_MAX_MODEL_SECS", 120, 1, maxSecs, "longest model call in seconds, at least 1")
	num(&f.maxModelConnectSecs, "max-model-connect-secs", "BRAIN_MAX_MODEL_CONNECT_SECS", 10, 1, maxSecs, "longest connect to a model provider in seconds, at least 1")
	link(&f.envBaseURL, "environment-base-url", "BRAIN_ENVIRONMENT_BASE_URL", "default environment route: provider base URL (default: the built-in workspace)")
	secret(&f.envAPIKey, "environment-api-key", "BRAIN_ENVIRONMENT_API_KEY", "credential of the default environment route")
	str(&f.envRoutesFile, "environment-routes-file", "BRAIN_ENVIRONMENT_ROUTES_FILE", "", `JSON file mapping driver names to {"endpoint", "api_key"?}`)
	atLeast1(&f.maxEnvResponseBytes, "max-environment-response-bytes", "BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES", 32<<20, "largest environment answer in bytes, at least 1 (1024 beside the built-in workspace environment, which cuts its answers to fit)")
	num(&f.maxEnvSecs, "max-environment-secs", "BRAIN_MAX_ENVIRONMENT_SECS", 120, 1, maxSecs, "longest environment operation round trip in seconds (a remote agentloop's turn is bounded by the turn's deadline instead), at least 1")
	num(&f.maxEnvConnectSecs, "max-environment-connect-secs", "BRAIN_MAX_ENVIRONMENT_CONNECT_SECS", 5, 1, maxSecs, "longest connect to an environment in seconds, at least 1")
	str(&f.workspaceRoot, "workspace-root", "BRAIN_WORKSPACE_ROOT", "", "directory of the built-in workspace environment (default <data dir>/native-workspaces)")
	atLeast1(&f.maxJournalQueue, "max-journal-queue-bytes", "BRAIN_MAX_JOURNAL_QUEUE_BYTES", 64<<20, "bytes queued for the journal writer across sessions before appends are refused, at least 1")
	atLeast1(&f.maxSessionQueue, "max-session-queue-bytes", "BRAIN_MAX_SESSION_QUEUE_BYTES", 8<<20, "bytes queued for the journal writer per session before appends are refused, at least 1")
	atLeast1(&f.maxJournalOpenFiles, "max-journal-open-files", "BRAIN_MAX_JOURNAL_OPEN_FILES", 256, "journal segment files kept open, at least 1")
	boolean(&f.builtinWasm, "builtin-wasm", "BRAIN_BUILTIN_WASM", "run the built-in default loop as its embedded Wasm build")
	num(&f.maxLinearMemory, "max-linear-memory-bytes", "BRAIN_MAX_LINEAR_MEMORY_BYTES", 128<<20, 64<<10, 4<<30, "linear memory bound of a Wasm agentloop in bytes, 65536 to 4294967296")
	atLeast1(&f.maxCoreInstances, "max-core-instances", "BRAIN_MAX_CORE_INSTANCES", 8, "Wasm instances alive at once, agentloops and Tools together (one more fails as overloaded), at least 1")
	atLeast1(&f.maxScratch, "max-scratch-bytes", "BRAIN_MAX_SCRATCH_BYTES", 64<<20, "bytes one Wasm Tool invocation's scratch directory may hold, each file or directory counting 4096 besides the bytes of the files (a write or a create past them fails with ENOSPC), at least 1")
	str(&f.filesystemAllow, "env-filesystem-allow", "BRAIN_ENV_FILESYSTEM_ALLOW", "", `comma list of host directories Wasm Tools may be granted as a workspace, and "scratch" to allow scratch directories`)
	if v, ok := env("BRAIN_ENV_SECRET_ALLOW"); ok {
		if err := f.secretAllow.Set(v); err != nil {
			errs = append(errs, &variableError{"env-secret-allow", fmt.Errorf("BRAIN_ENV_SECRET_ALLOW=%q: %w", v, err)})
		}
	}
	f.flagOf["BRAIN_ENV_SECRET_ALLOW"] = "env-secret-allow"
	fs.Var(&f.secretAllow, "env-secret-allow", "comma list of name=directory secrets Wasm Tools may be granted, mounted read-only at /secrets/<name> (BRAIN_ENV_SECRET_ALLOW)")
	atLeast1(&f.maxHosts, "max-hosts", "BRAIN_MAX_HOSTS", 4096, "registered host environments, at least 1")
	atLeast1(&f.maxHostCommands, "max-host-commands", "BRAIN_MAX_HOST_COMMANDS", 128, "outstanding commands of one host, at least 1")
	num(&f.hostUnconnectedSecs, "host-unconnected-secs", "BRAIN_HOST_UNCONNECTED_SECS", 60, 1, maxSecs, "seconds a registered host may stay without a commands connection before it is forgotten, at least 1")
	str(&f.metricsListen, "metrics-listen", "BRAIN_METRICS_LISTEN", "", "loopback address serving GET /metrics without the token (default: /metrics on the API, behind the token)")
	str(&f.providersFile, "providers-file", "BRAIN_PROVIDERS_FILE", "", `JSON file of further OpenAI-compatible or Anthropic providers: {"providers":[{"name","dialect","base_url","models":[{"id","context_window_tokens"}]}]}`)
	otlp, err := otlpFromEnv(env)
	errs = append(errs, err)
	f.otlp = otlp
	str(&f.telemetryFile, "telemetry-file", "BRAIN_TELEMETRY_FILE", "", "JSON-lines file the telemetry service's records are appended to, with their origin (default: records are dropped)")
	num(&f.telemetryMaxRecord, "telemetry-max-record-bytes", "BRAIN_TELEMETRY_MAX_RECORD_BYTES", 64<<10, 1, 16<<20, "largest telemetry record in bytes; larger ones are dropped, 1 to 16777216")
	num(&f.telemetryMaxFile, "telemetry-max-file-bytes", "BRAIN_TELEMETRY_MAX_FILE_BYTES", 64<<20, 64<<10, math.MaxInt64, "size at which the telemetry file is renamed to <file>.1 and restarted, at least 65536")
	atLeast1(&f.telemetrySessionRate, "telemetry-session-rate", "BRAIN_TELEMETRY_SESSION_RATE", 50, "telemetry records per second of one session; more are dropped, at least 1")
	atLeast1(&f.telemetryRate, "telemetry-rate", "BRAIN_TELEMETRY_RATE", 1000, "telemetry records per second of the server; more are dropped, at least 1")
	boolean(&f.noWorkspace, "no-workspace", "BRAIN_NO_WORKSPACE", `do not run the built-in workspace environment (route "workspace")`)
	return errors.Join(errs...)
}

// maxSecs is the most seconds a time.Duration holds.
const maxSecs = math.MaxInt64 / int64(time.Second)

// intFlag is an integer setting and its accepted range.
type intFlag struct {
	p             *int64
	name, envName string
	least, most   int64
}

// inRange says which integers are wanted.
func inRange(least, most int64) string {
	switch {
	case most != math.MaxInt64:
		return fmt.Sprintf("want an integer from %d to %d", least, most)
	case least == 0:
		return "want a non-negative integer"
	}
	return fmt.Sprintf("want an integer of at least %d", least)
}

// checkParsed refuses integer flags given out of their range, --no-auth
// beside a token and filesystem allow entries that are neither absolute
// nor "scratch", and notes a given --session-idle-ttl-secs.
func (f *serveFlags) checkParsed(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if f.given == nil {
		f.given = map[string]bool{}
	}
	for name := range given {
		f.given[name] = true
	}
	f.idleTTLSet = f.idleTTLSet || given["session-idle-ttl-secs"]
	var errs []error
	if f.noAuth && f.token != "" {
		// Which one the operator meant cannot be told: serving without
		// the token they set would open what they meant to close.
		errs = append(errs, errors.New("--no-auth (BRAIN_NO_AUTH) contradicts the token given (--token or BRAIN_API_TOKEN)"))
	}
	for _, i := range f.ints {
		if given[i.name] && (*i.p < i.least || *i.p > i.most) {
			errs = append(errs, fmt.Errorf("--%s %d (%s): %s", i.name, *i.p, i.envName, inRange(i.least, i.most)))
		}
	}
	for _, e := range splitList(f.filesystemAllow) {
		if e != allowScratch && !filepath.IsAbs(e) {
			errs = append(errs, fmt.Errorf("--env-filesystem-allow (BRAIN_ENV_FILESYSTEM_ALLOW): entry %q is neither an absolute directory nor %q", e, allowScratch))
		}
	}
	return errors.Join(errs...)
}

// serve runs the Brain session server.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	var f serveFlags
	fs := flag.NewFlagSet("brain serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		printDefaults(fs)
	}
	envErr := f.register(fs, os.LookupEnv)
	// Help goes to stdout with status 0, parse errors and their usage to
	// stderr; -h is help only where it stands as a flag, not as the value
	// of one (--token -h).
	var parseOut bytes.Buffer
	fs.SetOutput(&parseOut)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(parseOut.Bytes())
		return 0
	}
	if err != nil {
		_, _ = stderr.Write(parseOut.Bytes())
		return 2
	}
	if err := f.checkParsed(fs); err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		// "brain serve" has no subcommands or operands: the word may be
		// a flag's value whose flag was mistyped, so show what it takes.
		fmt.Fprintf(stderr, "brain serve: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if envErr := unlessOverridden(envErr, fs); envErr != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", envErr)
		return 2
	}
	if err := f.checkVariables(os.Environ()); err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	if err := f.checkInert(); err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	if err := f.checkWorkspaceBound(); err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	if err := f.checkEnvironmentKey(); err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	log, err := newLogger(stderr, f.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	if code := runServer(ctx, sigs, &f, log, stdout, stderr); code != 0 {
		return code
	}
	return 0
}

// logLevels are the levels --log-level takes, in any case. slog would
// read offsets as well ("warn+4" is error, "info-1" neither info nor
// debug), which are refused: a level is one of these four.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	l, ok := logLevels[strings.ToLower(level)]
	if !ok {
		return nil, fmt.Errorf("--log-level %q (BRAIN_LOG_LEVEL): want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// loopback reports whether addr's host is a loopback address, in any of
// its spellings (an IPv4-mapped ::ffff:127.0.0.1, ::1 with a zone such as
// %lo), or the name localhost in any case.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// loopbackOnly answers only requests that name a loopback host: the
// metrics address has no token, and a page of another site whose name
// an attacker's DNS then points at the loopback address (DNS rebinding)
// names that site's host.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !netutil.LoopbackHost(r.Host) {
			http.Error(w, "the metrics address answers only requests naming a loopback host (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// afterClaim, when set (see faults.go), runs after each idempotency claim
// is durable.
var afterClaim func(scope, key string)

// config maps the flags to a brain.Config.
func (f *serveFlags) config(log *slog.Logger, publicURL string) brain.Config {
	cfg := brain.Config{
		DataDir:              f.dataDir,
		Storage:              brain.Storage{DatabaseURL: f.databaseURL, SealingKeyFile: f.sealingKeyFile, Lease: time.Duration(f.leaseSecs) * time.Second},
		PublicURL:            publicURL,
		Token:                f.token,
		Logger:               log,
		MaxRequestBytes:      f.maxRequestBytes,
		BodyReadTimeout:      time.Duration(f.bodyTimeoutSecs) * time.Second,
		MaxConnections:       int(f.maxConnections),
		MaxLiveBacklog:       int(f.maxLiveBacklog),
		Heartbeat:            time.Duration(f.heartbeatSecs) * time.Second,
		RequestRetention:     durationOrNoLimit(f.retentionSecs),
		MaxJournalQueueBytes: f.maxJournalQueue,
		MaxSessionQueueBytes: f.maxSessionQueue,
		MaxJournalOpenFiles:  int(f.maxJournalOpenFiles),
		Agentloops: brain.Agentloops{
			BuiltinWasm:          f.builtinWasm,
			MaxLinearMemoryBytes: f.maxLinearMemory,
			MaxCoreInstances:     int(f.maxCoreInstances),
			MaxScratchBytes:      f.maxScratch,
			FilesystemAllow:      splitList(f.filesystemAllow),
			SecretAllow:          f.secretAllow,
		},
		Hosts: brain.Hosts{
			MaxHosts:    int(f.maxHosts),
			MaxCommands: int(f.maxHostCommands),
			Unconnected: time.Duration(f.hostUnconnectedSecs) * time.Second,
		},
		Limits: brain.Limits{
			MaxModelCalls:   int(orNoLimit(f.maxModelCalls)),
			MaxTurn:         durationOrNoLimit(f.maxTurnSecs),
			MaxTool:         durationOrNoLimit(f.maxToolSecs),
			MaxEmittedBytes: orNoLimit(f.maxEmitted),
		},
		Models: brain.Models{
			OpenAIBaseURL:    f.openAIBaseURL,
			AnthropicBaseURL: f.anthropicBaseURL,
			ProvidersFile:    f.providersFile,
			APIKeys: map[string]string{
				"openai": os.Getenv("OPENAI_API_KEY"), "openai_chat": os.Getenv("OPENAI_API_KEY"),
				"anthropic": os.Getenv("ANTHROPIC_API_KEY"),
			},
			MaxOutputBytes: f.maxModelOutput, MaxDeltaBytes: f.maxModelDelta, MaxStreamBytes: f.maxModelStream,
			MaxFrameBytes: f.maxModelFrame, MaxErrorBytes: f.maxModelError,
			Timeout:        time.Duration(f.maxModelSecs) * time.Second,
			ConnectTimeout: time.Duration(f.maxModelConnectSecs) * time.Second,
		},
		Environments: brain.Environments{
			BaseURL:          f.envBaseURL,
			APIKey:           f.envAPIKey,
			RoutesFile:       f.envRoutesFile,
			MaxResponseBytes: f.maxEnvResponseBytes,
			Timeout:          time.Duration(f.maxEnvSecs) * time.Second,
			ConnectTimeout:   time.Duration(f.maxEnvConnectSecs) * time.Second,
		},
		Telemetry: brain.Telemetry{
			File:           f.telemetryFile,
			MaxRecordBytes: int(f.telemetryMaxRecord),
			MaxFileBytes:   f.telemetryMaxFile,
			SessionRate:    float64(f.telemetrySessionRate),
			Rate:           float64(f.telemetryRate),
		},
		AfterClaim: afterClaim,
		OTLP:       f.otlp,
	}
	switch {
	case f.noAuth:
		cfg.Token = ""
	case f.token == "":
		cfg.TokenFile = filepath.Join(f.dataDir, "operator.token")
	}
	if f.idleTTLSet {
		cfg.IdleTTL = durationOrNoLimit(f.idleTTLSecs)
	}
	return cfg
}

func runServer(ctx context.Context, sigs <-chan os.Signal, f *serveFlags, log *slog.Logger, stdout, stderr io.Writer) int {
	if f.token != "" && strings.TrimSpace(f.token) == "" {
		fmt.Fprintln(stderr, "brain serve: refusing a token of only white space (BRAIN_API_TOKEN / --token)")
		return 2
	}
	for _, a := range []struct{ flag, env, addr string }{
		{"listen", "BRAIN_LISTEN", f.listen},
		{"metrics-listen", "BRAIN_METRICS_LISTEN", f.metricsListen},
	} {
		if a.addr == "" && a.flag != "listen" {
			continue
		}
		_, port, err := net.SplitHostPort(a.addr)
		if err != nil {
			fmt.Fprintf(stderr, "brain serve: --%s %q (%s): want host:port: %v\n", a.flag, a.addr, a.env, err)
			return 2
		}
		// A port beyond 65535, or a name no service has, is as
		// malformed as a missing one.
		if _, err := net.DefaultResolver.LookupPort(ctx, "tcp", port); err != nil {
			fmt.Fprintf(stderr, "brain serve: --%s %q (%s): want a port from 0 to 65535 or a service name: %v\n", a.flag, a.addr, a.env, err)
			return 2
		}
	}
	if !loopback(f.listen) && (f.token == "" || f.noAuth) {
		fmt.Fprintf(stderr, "brain serve: --listen %s (BRAIN_LISTEN): refusing to listen on non-loopback address without a token (set --token or BRAIN_API_TOKEN; --no-auth is for loopback only)\n", f.listen)
		return 2
	}
	if f.metricsListen != "" && !loopback(f.metricsListen) {
		fmt.Fprintf(stderr, "brain serve: --metrics-listen %s (BRAIN_METRICS_LISTEN): the unauthenticated metrics address must be a loopback address\n", f.metricsListen)
		return 2
	}
	if err := f.checkRoutesFile(); err != nil {
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "brain serve: --listen %s (BRAIN_LISTEN): %v\n", f.listen, err)
		return 1
	}
	defer ln.Close()
	url := "http://" + ln.Addr().String()
	publicURL := f.publicURL
	if publicURL == "" {
		publicURL = url
	}
	cfg := f.config(log, publicURL)
	var metricsLn net.Listener
	if f.metricsListen != "" {
		if metricsLn, err = net.Listen("tcp", f.metricsListen); err != nil {
			fmt.Fprintf(stderr, "brain serve: --metrics-listen %s (BRAIN_METRICS_LISTEN): %v\n", f.metricsListen, err)
			return 1
		}
		defer metricsLn.Close()
		cfg.SeparateMetrics = true
	}
	var ws *builtinWorkspace
	if !f.noWorkspace {
		if ws, err = openWorkspace(f, &cfg); err != nil {
			fmt.Fprintf(stderr, "brain serve: %v\n", err)
			return 1
		}
	}
	// The workspace outlives the drain: providers call back while
	// admitted work finishes.
	defer func() {
		if err := ws.close(); err != nil {
			log.Error("closing the workspace environment", "err", err)
		}
	}()
	b, err := brain.New(ctx, cfg)
	if err != nil {
		if refused, ok := f.settingsError(err); ok {
			fmt.Fprintf(stderr, "brain serve: %s\n", refused)
			return 2
		}
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		return 1
	}
	if ws != nil {
		if err := ws.start(log); err != nil {
			b.Close(context.Background())
			fmt.Fprintf(stderr, "brain serve: %v\n", err)
			return 1
		}
	}
	token, generated := b.Token()
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- b.Serve(serveCtx, ln) }()
	if metricsLn != nil {
		// GET /metrics alone: another path is not found, another method
		// not allowed.
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", b.MetricsHandler())
		msrv := &http.Server{Handler: loopbackOnly(mux), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(metricsLn) }()
		defer msrv.Close()
	}
	printBanner(stdout, url, f, token, generated, cfg.TokenFile)
	if metricsLn != nil {
		fmt.Fprintf(stdout, "metrics: http://%s/metrics\n", metricsLn.Addr())
	}
	log.Info("serving", "url", url, "data_dir", f.dataDir, "auth", token != "")

	// The first signal reaches both ctx (main's) and sigs: its copy in
	// sigs, read within duplicateSignal, is not counted again.
	select {
	case <-ctx.Done():
	case <-sigs:
	case err := <-served:
		fmt.Fprintf(stderr, "brain serve: %v\n", err)
		b.Close(context.Background())
		return 1
	}
	first := time.Now()
	log.Info("draining: admitting no new work, waiting for admitted turns")
	stopServing()
	for {
		select {
		case err := <-served:
			if err != nil {
				log.Error("drain", "err", err)
				return 1
			}
			log.Info("drained")
			return 0
		case <-sigs:
			if time.Since(first) < duplicateSignal {
				// The first signal delivered again, as to a process
				// and then to its process group: not a second one.
				continue
			}
			fmt.Fprintln(stderr, "brain serve: second signal, exiting without finishing the drain")
			ws.abortOperations()
			return 1
		}
	}
}

// duplicateSignal is how soon after the first a signal is taken for the
// same one delivered again rather than a second that cuts the drain
// short.
const duplicateSignal = 250 * time.Millisecond

func orNoLimit(v int64) int64 {
	if v == 0 {
		return brain.NoLimit
	}
	return v
}

func durationOrNoLimit(secs int64) time.Duration {
	if secs == 0 {
		return brain.NoLimit
	}
	return time.Duration(secs) * time.Second
}

// printBanner writes the start banner to out with one write, so that a
// log line written meanwhile (to the same terminal) cannot split it. It
// shows the token only when it was generated by this start; a saved one
// is named by its file.
func printBanner(out io.Writer, url string, f *serveFlags, token string, generated bool, tokenPath string) {
	w := new(bytes.Buffer)
	defer func() { _, _ = out.Write(w.Bytes()) }()
	fmt.Fprintf(w, "Brain is serving on %s\n", url)
	fmt.Fprintf(w, "data directory: %s\n", f.dataDir)
	fmt.Fprintf(w, "inspector: %s/ui/\n", url)
	fmt.Fprintln(w, `models: scripted (offline), openai, openai_chat, anthropic`)
	auth := ""
	switch {
	case token == "":
		fmt.Fprintln(w, "authentication: off (loopback only)")
	case generated:
		fmt.Fprintf(w, "token: %s (generated, saved in %s)\n", token, tokenPath)
		auth = ` -H "Authorization: Bearer $BRAIN_TOKEN"`
	default:
		// A token read from its file or given in a setting is not
		// printed: what the banner shows ends up in service logs.
		if f.token == "" {
			fmt.Fprintf(w, "token: saved in %s\n", tokenPath)
		} else {
			fmt.Fprintln(w, "token: from BRAIN_API_TOKEN / --token")
		}
		auth = ` -H "Authorization: Bearer $BRAIN_TOKEN"`
	}
	fmt.Fprintln(w, "\nTry it:")
	switch {
	case generated:
		fmt.Fprintf(w, "  export BRAIN_TOKEN=%s\n", token)
	case token != "" && f.token == "":
		fmt.Fprintf(w, "  export BRAIN_TOKEN=$(cat %s)\n", shellQuote(tokenPath))
	}
	fmt.Fprintf(w, `  SID=$(curl -s%s -H "Idempotency-Key: create-1" -H "Content-Type: application/json" \
    -d '{"model":{"provider":"scripted","name":"demo"}}' %s/v1/sessions | sed 's/.*"session_id":"\([^"]*\)".*/\1/')
  curl -s%s -H "Idempotency-Key: msg-1" -H "Content-Type: application/json" \
    -d '{"input":{"message":"hello"}}' %s/v1/sessions/$SID/messages
  curl -s%s %s/v1/sessions/$SID/transcript
`, auth, url, auth, url, auth, url)
}

// shellQuote quotes s for a POSIX shell unless it holds only characters
// no shell treats specially.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// secretValue is the flag of a credential: its value is never shown as
// the flag's default in the usage.
type secretValue struct{ p *string }

func (v secretValue) String() string { return "" }

func (v secretValue) Set(s string) error {
	*v.p = s
	return nil
}

// splitList splits a comma list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// allowScratch is the entry of BRAIN_ENV_FILESYSTEM_ALLOW that allows
// scratch directories.
const allowScratch = "scratch"

// secretsValue is the flag of BRAIN_ENV_SECRET_ALLOW: a comma list of
// name=directory entries, each name a file name and each directory
// absolute.
type secretsValue map[string]string

func (v *secretsValue) String() string {
	var parts []string
	for name, dir := range *v {
		parts = append(parts, name+"="+dir)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (v *secretsValue) Set(s string) error {
	out := secretsValue{}
	for _, e := range splitList(s) {
		name, dir, ok := strings.Cut(e, "=")
		switch {
		case !ok || name == "" || dir == "":
			return fmt.Errorf("entry %q: want name=directory", e)
		case strings.ContainsAny(name, `/\`) || name == "." || name == "..":
			return fmt.Errorf("entry %q: the name %q is not a file name", e, name)
		case !filepath.IsAbs(dir):
			return fmt.Errorf("entry %q: %q is not an absolute directory", e, dir)
		}
		out[name] = dir
	}
	*v = out
	return nil
}
