package brain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-playground/validator/v10"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/backend"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/internal/netutil"
)

// NoLimit as a Limits field or Config.RequestRetention removes that bound.
const NoLimit = -1

// DefaultRequestRetention is how long idempotency answers are kept.
const DefaultRequestRetention = 24 * time.Hour

// Config configures a Server. It is plain data: only DataDir is required,
// and every zero field selects the server default. The env tag of a field
// names the BRAIN_* variable "brain serve" reads it from; validation
// errors name both. A URL field holds no white space or control
// character, names a host (without a Unicode format character in it),
// and its port, if it names one, is from 1 to 65535.
type Config struct {
	// DataDir is the data directory; it is created (mode 0700), locked
	// and checked. One that group or others may write is refused.
	DataDir string `validate:"required" env:"BRAIN_DATA_DIR"`
	// Storage selects where sessions, idempotency answers and sealed
	// credentials live (default: the data directory).
	Storage Storage
	// PublicURL is the base URL environments use for callbacks and
	// reporters (default: http://<address of the listener given to Serve>).
	PublicURL string `validate:"omitempty,url_text,http_url,url_host,url_port" env:"BRAIN_PUBLIC_URL"`
	// Token is the bearer token every application route requires. When it
	// is empty and TokenFile is set, the token saved in TokenFile is used,
	// or a new one is generated and saved there (mode 0600; a saved token
	// in a file others may read is refused, as a sealing key is, and one
	// holding a control character is a refused setting); when both
	// are empty Brain serves without authentication (the caller decides
	// whether that is safe for its listener) and answers only requests
	// naming a loopback host, so that a web page cannot reach it through
	// DNS rebinding. A token with white space at either end or a control
	// character is refused: no Authorization header can carry it.
	Token     string `validate:"omitempty,header_token" env:"BRAIN_API_TOKEN"`
	TokenFile string `env:"BRAIN_API_TOKEN"`
	// Limits bound every turn.
	Limits Limits
	// Models configures the model providers.
	Models Models
	// Environments configures environment/v1 routes and bounds.
	Environments Environments
	// Agentloops configures the Wasm agentloop host.
	Agentloops Agentloops
	// Hosts bounds host environments (tools served over /v1/hosts).
	Hosts Hosts
	// Telemetry configures the sink of the telemetry service's records.
	Telemetry Telemetry
	// IdleTTL keeps idle sessions in memory that long after create and
	// each turn; 0 releases them at once, NoLimit keeps them.
	IdleTTL time.Duration `validate:"gte=-1ns" env:"BRAIN_SESSION_IDLE_TTL_SECS"`
	// RequestRetention is how long idempotency answers are kept: 0 selects
	// 24 h, NoLimit keeps them forever.
	RequestRetention time.Duration `validate:"gte=-1ns" env:"BRAIN_REQUEST_RETENTION_SECS"`
	// MaxRequestBytes bounds request bodies (0: 32 MiB).
	MaxRequestBytes int64 `validate:"gte=0" env:"BRAIN_MAX_REQUEST_BYTES"`
	// BodyReadTimeout bounds how long a request body may take to arrive
	// (0: 60 s); then the request is answered 400 and its connection
	// closed. Serve bounds the whole request read to match.
	BodyReadTimeout time.Duration `validate:"gte=0s" env:"BRAIN_REQUEST_BODY_TIMEOUT_SECS"`
	// MaxConnections bounds the connections Serve keeps open at once (0:
	// 1024); further clients wait in the listen backlog.
	MaxConnections int `validate:"gte=0" env:"BRAIN_MAX_CONNECTIONS"`
	// MaxLiveBacklog is how far an event stream may lag before it ends
	// (0: 1024 records).
	MaxLiveBacklog int `validate:"gte=0" env:"BRAIN_MAX_LIVE_BACKLOG"`
	// Heartbeat is the comment interval of idle event streams (0: 15 s).
	Heartbeat time.Duration `validate:"gte=0s" env:"BRAIN_SSE_HEARTBEAT_SECS"`
	// MaxJournalQueueBytes bounds the journal bytes queued for the writer
	// across all sessions; an append beyond it fails fast as overloaded
	// (0: 64 MiB).
	MaxJournalQueueBytes int64 `validate:"gte=0" env:"BRAIN_MAX_JOURNAL_QUEUE_BYTES"`
	// MaxSessionQueueBytes bounds the journal bytes queued for one session
	// (0: 8 MiB).
	MaxSessionQueueBytes int64 `validate:"gte=0" env:"BRAIN_MAX_SESSION_QUEUE_BYTES"`
	// MaxJournalOpenFiles bounds the segment files the journal writer keeps
	// open between commits (0: 256).
	MaxJournalOpenFiles int `validate:"gte=0" env:"BRAIN_MAX_JOURNAL_OPEN_FILES"`
	// Logger receives structured logs (nil: slog.Default()).
	Logger *slog.Logger

	// PrepareCreate may fill defaults, such as default environments, into
	// a validated create request before it runs. It must be deterministic.
	PrepareCreate func(ctx context.Context, req *api.CreateSessionRequest) error
	// AfterClaim runs after an idempotency claim is durable and before its
	// operation runs (for a synchronous send, whose claim rides its turn's
	// first journal commit, once that commit is durable): a
	// fault-injection point for crash tests.
	AfterClaim func(scope, key string)
	// SeparateMetrics keeps GET /metrics off the API's routes (where it
	// requires the token): the caller serves Server.MetricsHandler on an
	// address of its own ("brain serve --metrics-listen").
	SeparateMetrics bool `env:"BRAIN_METRICS_LISTEN"`
	// OTLP configures OpenTelemetry export over OTLP (the standard
	// OTEL_EXPORTER_OTLP_* variables). With no endpoint nothing is traced
	// or exported and no trace context is read or sent. Export is best
	// effort: a collector that is down holds no turn, and at Close what
	// it did not take is flushed for a bounded time, then dropped and
	// logged without failing Close.
	OTLP OTLP
}

// OTLP are the OpenTelemetry exporter settings: the general ones and
// those of the traces and logs signals, which win. An endpoint given for
// all signals gets /v1/traces or /v1/logs appended (http/protobuf), so
// it has no query or fragment; a signal's endpoint is its full URL. An endpoint carries no credentials,
// query or fragment, which the exporters would not send: headers carry them. A header's name
// is an HTTP token and its value holds no control character, or no export
// could carry it. Header values are credentials: they are sent to the
// collector only, never logged or quoted in errors.
type OTLP struct {
	Endpoint string            `validate:"omitempty,url_text,http_url,url_host,url_port,url_no_user,url_no_query" env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	Protocol string            `validate:"omitempty,oneof=http/protobuf grpc" env:"OTEL_EXPORTER_OTLP_PROTOCOL"`
	Headers  map[string]string `validate:"dive,keys,header_name,endkeys,header_value" env:"OTEL_EXPORTER_OTLP_HEADERS"`
	// Insecure (and TracesInsecure, LogsInsecure) never drops TLS from
	// an https endpoint: an endpoint's scheme decides (the OpenTelemetry
	// specification applies the variable to endpoints without a scheme).
	Insecure bool          `env:"OTEL_EXPORTER_OTLP_INSECURE"`
	Timeout  time.Duration `validate:"gte=0s" env:"OTEL_EXPORTER_OTLP_TIMEOUT"`
	// Compression of every signal's exports: gzip or none (default).
	Compression string `validate:"omitempty,oneof=gzip none" env:"OTEL_EXPORTER_OTLP_COMPRESSION"`

	TracesEndpoint string            `validate:"omitempty,url_text,http_url,url_host,url_port,url_no_user,url_host_path" env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`
	TracesProtocol string            `validate:"omitempty,oneof=http/protobuf grpc" env:"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"`
	TracesHeaders  map[string]string `validate:"dive,keys,header_name,endkeys,header_value" env:"OTEL_EXPORTER_OTLP_TRACES_HEADERS"`
	TracesInsecure bool              `env:"OTEL_EXPORTER_OTLP_TRACES_INSECURE"`
	TracesTimeout  time.Duration     `validate:"gte=0s" env:"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"`
	// TracesCompression wins over Compression for traces.
	TracesCompression string `validate:"omitempty,oneof=gzip none" env:"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"`
	// TracesExporter is otlp (default) or none: none exports no spans
	// whatever the endpoints say.
	TracesExporter string `validate:"omitempty,oneof=otlp none" env:"OTEL_TRACES_EXPORTER"`

	LogsEndpoint string            `validate:"omitempty,url_text,http_url,url_host,url_port,url_no_user,url_host_path" env:"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"`
	LogsProtocol string            `validate:"omitempty,oneof=http/protobuf grpc" env:"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"`
	LogsHeaders  map[string]string `validate:"dive,keys,header_name,endkeys,header_value" env:"OTEL_EXPORTER_OTLP_LOGS_HEADERS"`
	LogsInsecure bool              `env:"OTEL_EXPORTER_OTLP_LOGS_INSECURE"`
	LogsTimeout  time.Duration     `validate:"gte=0s" env:"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT"`
	// LogsCompression wins over Compression for logs.
	LogsCompression string `validate:"omitempty,oneof=gzip none" env:"OTEL_EXPORTER_OTLP_LOGS_COMPRESSION"`
	// LogsExporter is otlp (default) or none: none exports no telemetry
	// records over OTLP whatever the endpoints say.
	LogsExporter string `validate:"omitempty,oneof=otlp none" env:"OTEL_LOGS_EXPORTER"`

	// ServiceName is the service.name of Brain's resource (default
	// "brain").
	ServiceName string `env:"OTEL_SERVICE_NAME"`
	// ResourceAttributes are more attributes of Brain's resource
	// (key=value pairs); ServiceName wins over a service.name among them.
	ResourceAttributes map[string]string `env:"OTEL_RESOURCE_ATTRIBUTES"`
	// Disabled exports nothing and reads or sends no trace context,
	// whatever else is set.
	Disabled bool `env:"OTEL_SDK_DISABLED"`
}

// Storage selects the storage backend.
type Storage struct {
	// DatabaseURL selects a database backend by its scheme; empty keeps
	// everything in the data directory. A URL without a host, such as
	// postgres:///brain?host=/run/postgresql (a Unix socket), is one.
	DatabaseURL string `validate:"omitempty,database_url" env:"BRAIN_DATABASE_URL"`
	// SealingKeyFile is the key file every node sharing a database uses
	// (required with DatabaseURL, refused without it): 64 hex digits or
	// 32+ raw bytes, in a file only its owner may read or write.
	SealingKeyFile string `validate:"excluded_without=DatabaseURL" env:"BRAIN_SEALING_KEY_FILE"`
	// Lease is how long a node's lease on a session's activations lasts
	// unless renewed (database backends; 0 selects 10 s): after a node
	// dies, another takes its sessions over after at most this long.
	Lease time.Duration `validate:"gte=0" env:"BRAIN_LEASE_SECS"`
}

// problems answers what the tags of Storage cannot see: a database URL
// whose scheme no backend serves, and one without the sealing key file.
func (s Storage) problems() []FieldProblem {
	if err := backend.Check(s.DatabaseURL); err != nil {
		return settingError("Storage.DatabaseURL", err).Problems
	}
	if s.DatabaseURL != "" && s.SealingKeyFile == "" {
		return settingError("Storage.SealingKeyFile", fmt.Errorf("is required with Storage.DatabaseURL (%s)", envOf("Storage.DatabaseURL"))).Problems
	}
	return nil
}

// Limits bound every turn. A zero field selects the server default
// (128 model calls, 1800 s per turn, 120 s per tool call, 1 MiB of emitted
// events); NoLimit removes the bound.
type Limits struct {
	MaxModelCalls   int           `validate:"gte=-1" env:"BRAIN_MAX_MODEL_CALLS"`
	MaxTurn         time.Duration `validate:"gte=-1ns" env:"BRAIN_MAX_TURN_SECS"`
	MaxTool         time.Duration `validate:"gte=-1ns" env:"BRAIN_MAX_TOOL_SECS"`
	MaxEmittedBytes int64         `validate:"gte=-1" env:"BRAIN_MAX_EMITTED_BYTES"`
}

// Models configures the model providers: "openai" (Responses API),
// "openai_chat" (Chat Completions), "anthropic" (Messages API) and the
// offline "scripted" model. Zero bounds select the defaults (4 MiB answer,
// 64 KiB delta, 32 MiB stream, 256 KiB frame, 16 KiB error body, 120 s
// call, 10 s connect).
type Models struct {
	// OpenAIBaseURL is the base URL of openai and openai_chat (default
	// the hosted API), without credentials, query or fragment.
	OpenAIBaseURL string `validate:"omitempty,url_text,http_url,url_host,url_port,base_url" env:"BRAIN_OPENAI_BASE_URL"`
	// AnthropicBaseURL is the base URL of anthropic (default the hosted
	// API), without credentials, query or fragment.
	AnthropicBaseURL string `validate:"omitempty,url_text,http_url,url_host,url_port,base_url" env:"BRAIN_ANTHROPIC_BASE_URL"`
	// APIKeys are the operator's keys by provider name, used by sessions
	// that bring none ("brain serve" reads OPENAI_API_KEY and
	// ANTHROPIC_API_KEY). A key holding a control character other than a
	// tab is refused: no header can carry it.
	APIKeys map[string]string `env:"OPENAI_API_KEY"`
	// ProvidersFile is a JSON file of further providers (name, dialect,
	// base URL, models) merged over the models catalogue; the format is
	// documented in brain/internal/catalog.
	ProvidersFile string `env:"BRAIN_PROVIDERS_FILE"`

	MaxOutputBytes int64         `validate:"gte=0" env:"BRAIN_MAX_MODEL_OUTPUT_BYTES"`
	MaxDeltaBytes  int64         `validate:"gte=0" env:"BRAIN_MAX_MODEL_DELTA_BYTES"`
	MaxStreamBytes int64         `validate:"gte=0" env:"BRAIN_MAX_MODEL_STREAM_BYTES"`
	MaxFrameBytes  int64         `validate:"gte=0" env:"BRAIN_MAX_MODEL_FRAME_BYTES"`
	MaxErrorBytes  int64         `validate:"gte=0" env:"BRAIN_MAX_MODEL_ERROR_BYTES"`
	Timeout        time.Duration `validate:"gte=0s" env:"BRAIN_MAX_MODEL_SECS"`
	ConnectTimeout time.Duration `validate:"gte=0s" env:"BRAIN_MAX_MODEL_CONNECT_SECS"`
}

// apiKeyEnv names the variable "brain serve" reads each provider's key
// from.
var apiKeyEnv = map[string]string{"openai": "OPENAI_API_KEY", "openai_chat": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

// keyProblems refuses an operator's key that no HTTP header can carry (a
// control character other than a tab, such as a line end read with it),
// once per variable, without quoting it.
func (m Models) keyProblems() []FieldProblem {
	var out []FieldProblem
	said := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(m.APIKeys)) {
		env := apiKeyEnv[name]
		if headerKey(m.APIKeys[name]) || (env != "" && said[env]) {
			continue
		}
		said[env] = true
		out = append(out, FieldProblem{Field: "Models.APIKeys[" + name + "]", Env: env,
			Problem: "holds a control character (a line end read with it?): no HTTP header can carry it"})
	}
	return out
}

// headerKey reports whether a header value can carry key: it holds no
// control character other than a tab.
func headerKey(key string) bool {
	for _, r := range key {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}

// EnvironmentRoute is where operations of a driver name go.
type EnvironmentRoute struct {
	// Endpoint is the provider's base URL: HTTPS, or HTTP on a loopback
	// host.
	Endpoint string `json:"endpoint" validate:"required,url_text,http_url,url_host,url_port" env:"BRAIN_ENVIRONMENT_ROUTES_FILE"`
	// APIKey is the operator's credential for the provider (optional),
	// sent as an Authorization header: one with white space at an end or
	// a control character is refused.
	APIKey string `json:"api_key,omitempty" validate:"omitempty,header_token" env:"BRAIN_ENVIRONMENT_ROUTES_FILE"`
}

// Environments configures where environment operations go and their
// bounds (zero: 32 MiB answers, 120 s per operation, 5 s connect).
type Environments struct {
	// Routes maps driver names to providers.
	Routes map[string]EnvironmentRoute `validate:"dive" env:"BRAIN_ENVIRONMENT_ROUTES_FILE"`
	// RoutesFile is a JSON object {"<driver>": {"endpoint", "api_key"?}}
	// whose routes join Routes; an api_key no Authorization header can
	// carry is refused as in Routes.
	RoutesFile string `env:"BRAIN_ENVIRONMENT_ROUTES_FILE"`
	// BaseURL and APIKey are the default route of drivers without one.
	BaseURL string `validate:"omitempty,url_text,http_url,url_host,url_port" env:"BRAIN_ENVIRONMENT_BASE_URL"`
	APIKey  string `validate:"omitempty,header_token" env:"BRAIN_ENVIRONMENT_API_KEY"`

	MaxResponseBytes int64 `validate:"gte=0" env:"BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES"`
	// Timeout bounds an operation's round trip, except a remote
	// agentloop's execute, which its turn's deadline bounds.
	Timeout        time.Duration `validate:"gte=0s" env:"BRAIN_MAX_ENVIRONMENT_SECS"`
	ConnectTimeout time.Duration `validate:"gte=0s" env:"BRAIN_MAX_ENVIRONMENT_CONNECT_SECS"`
}

// routesFileProblems refuses the api_key of each route of the routes file
// that no Authorization header can carry (the rule of header_token), by
// route name, without quoting it: every session reaching that route would
// fail at creation. routes are the file's routes, as read.
func (e Environments) routesFileProblems(routes map[string]envbind.Route) []FieldProblem {
	var out []FieldProblem
	for _, name := range slices.Sorted(maps.Keys(routes)) {
		if headerToken(routes[name].APIKey) {
			continue
		}
		out = append(out, FieldProblem{Field: "Environments.RoutesFile", Env: envOf("Environments.RoutesFile"),
			Problem: fmt.Sprintf("%s: the api_key of route %q %s", e.RoutesFile, name, problemText["header_token"])})
	}
	return out
}

// Agentloops configures the Wasm host of agentloops and of the Tools of
// the built-in brain environment.
type Agentloops struct {
	// BuiltinWasm runs the built-in default loop as its embedded Wasm
	// build instead of natively.
	BuiltinWasm bool `env:"BRAIN_BUILTIN_WASM"`
	// MaxLinearMemoryBytes bounds a Wasm agentloop's or Tool's linear
	// memory, from 64 KiB to 4 GiB (0: 128 MiB).
	MaxLinearMemoryBytes int64 `validate:"omitempty,gte=65536,lte=4294967296" env:"BRAIN_MAX_LINEAR_MEMORY_BYTES"`
	// MaxCoreInstances bounds the Wasm instances alive at once, agentloop
	// activations and Tool invocations together (0: 8); one more fails at
	// once with code overloaded.
	MaxCoreInstances int `validate:"gte=0" env:"BRAIN_MAX_CORE_INSTANCES"`
	// MaxScratchBytes bounds the bytes one Wasm Tool invocation's scratch
	// directory holds, each file or directory counting 4096 besides the
	// bytes of the files (0: 64 MiB); a write or a create that would grow
	// it past it fails with ENOSPC.
	MaxScratchBytes int64 `validate:"gte=0" env:"BRAIN_MAX_SCRATCH_BYTES"`
	// FilesystemAllow bounds the filesystem grants of Wasm Tools: absolute
	// host directories a workspace grant may name (or lie under), and
	// "scratch" to allow scratch directories. Empty denies them all.
	FilesystemAllow []string `env:"BRAIN_ENV_FILESYSTEM_ALLOW"`
	// SecretAllow maps the secret names a Wasm Tool may be granted to the
	// host directories mounted read-only at /secrets/<name>. Empty denies
	// them all.
	SecretAllow map[string]string `env:"BRAIN_ENV_SECRET_ALLOW"`
}

// Telemetry configures where the records that agentloops and tools send
// to the telemetry service go. They are never journalled; each is written
// with the origin Brain assigns (session, turn, activation, tool). Without
// a sink they are dropped. Records beyond a bound are dropped too, and
// every drop is counted (brain_telemetry_dropped_total in /metrics). Zero
// bounds select the defaults: 64 KiB per record, 64 MiB per file, 50
// records per second per session and 1000 in all.
type Telemetry struct {
	// File is a JSON-lines file the records are appended to (created with
	// mode 0600), renamed to File+".1" when it reaches MaxFileBytes (a
	// device or pipe, such as /dev/stdout, is never renamed); the format
	// is documented in brain/internal/telemetry.
	File string `env:"BRAIN_TELEMETRY_FILE"`
	// MaxRecordBytes bounds one record as sent, up to 16 MiB.
	MaxRecordBytes int `validate:"gte=0,lte=16777216" env:"BRAIN_TELEMETRY_MAX_RECORD_BYTES"`
	// MaxFileBytes bounds the file, at least 64 KiB.
	MaxFileBytes int64 `validate:"omitempty,gte=65536" env:"BRAIN_TELEMETRY_MAX_FILE_BYTES"`
	// SessionRate and Rate bound the records per second of one session
	// and of the server; a burst of two seconds' worth is allowed.
	SessionRate float64 `validate:"gte=0" env:"BRAIN_TELEMETRY_SESSION_RATE"`
	Rate        float64 `validate:"gte=0" env:"BRAIN_TELEMETRY_RATE"`
}

// Hosts bounds host environments. A zero field selects its default.
type Hosts struct {
	// MaxHosts bounds the registered hosts (0: 4096).
	MaxHosts int `validate:"gte=0" env:"BRAIN_MAX_HOSTS"`
	// MaxCommands bounds one host's outstanding commands (0: 128).
	MaxCommands int `validate:"gte=0" env:"BRAIN_MAX_HOST_COMMANDS"`
	// Unconnected is how long a registered host may stay without a
	// commands connection before it is forgotten (0: 60 s).
	Unconnected time.Duration `validate:"gte=0s" env:"BRAIN_HOST_UNCONNECTED_SECS"`
}

// ConfigError is a configuration that failed validation. Each of its
// problems names the Config field and the BRAIN_* variable it comes from.
type ConfigError struct {
	Problems []FieldProblem
}

// FieldProblem is one invalid Config field.
type FieldProblem struct {
	// Field is the field's path, such as "Models.Timeout".
	Field string
	// Env is the variable "brain serve" reads the field from.
	Env string
	// Problem says what is wrong.
	Problem string
}

func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "brain: invalid configuration: " + strings.Join(parts, "; ")
}

func (p FieldProblem) String() string {
	if p.Env == "" {
		return fmt.Sprintf("Config.%s %s", p.Field, p.Problem)
	}
	return fmt.Sprintf("Config.%s (%s) %s", p.Field, p.Env, p.Problem)
}

var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	if err := v.RegisterValidation("header_token", func(fl validator.FieldLevel) bool {
		return headerToken(fl.Field().String())
	}); err != nil {
		panic(err)
	}
	// An OTLP header is sent with every export: a name that is not an
	// HTTP token, or a value holding a control character, fails them all.
	if err := v.RegisterValidation("header_name", func(fl validator.FieldLevel) bool {
		return headerName(fl.Field().String())
	}); err != nil {
		panic(err)
	}
	if err := v.RegisterValidation("header_value", func(fl validator.FieldLevel) bool {
		return !strings.ContainsFunc(fl.Field().String(), func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) })
	}); err != nil {
		panic(err)
	}
	// A URL holds no white space or control character: one read with
	// the value (a blank or a line end) would become part of every
	// request's path, or stop the URL from parsing.
	if err := v.RegisterValidation("url_text", func(fl validator.FieldLevel) bool {
		return !strings.ContainsFunc(fl.Field().String(), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
	}); err != nil {
		panic(err)
	}
	// A URL names a host: one naming only a port (http://:8000/v1)
	// would be dialled on this machine under no name, and one whose
	// host holds a format character a reader does not see (a zero width
	// space) names no host the operator meant.
	if err := v.RegisterValidation("url_host", func(fl validator.FieldLevel) bool {
		u, err := url.Parse(fl.Field().String())
		return err == nil && netutil.HostName(u.Hostname())
	}); err != nil {
		panic(err)
	}
	// A URL's port, when it names one, must be one a connection can be
	// made to: every request to another would fail.
	if err := v.RegisterValidation("url_port", func(fl validator.FieldLevel) bool {
		u, err := url.Parse(fl.Field().String())
		return err == nil && netutil.DialablePort(u.Port())
	}); err != nil {
		panic(err)
	}
	// A model base URL is the prefix of every request's URL: credentials
	// there are not sent as the provider expects, and a query or a
	// fragment would swallow the path appended to it.
	if err := v.RegisterValidation("base_url", func(fl validator.FieldLevel) bool {
		u, err := url.Parse(fl.Field().String())
		return err == nil && u.User == nil && netutil.BaseURLText(fl.Field().String())
	}); err != nil {
		panic(err)
	}
	// An exporter sends only an endpoint's host and path: credentials in
	// it would go nowhere, and the export unauthenticated.
	if err := v.RegisterValidation("url_no_user", func(fl validator.FieldLevel) bool {
		u, err := url.Parse(fl.Field().String())
		return err == nil && u.User == nil
	}); err != nil {
		panic(err)
	}
	// Nor a query or a fragment: a key given as a parameter would go
	// nowhere as well.
	if err := v.RegisterValidation("url_host_path", func(fl validator.FieldLevel) bool {
		return !strings.ContainsAny(fl.Field().String(), "?#")
	}); err != nil {
		panic(err)
	}
	// A URL that gets a path appended holds no query or fragment, which
	// would swallow that path (nor white space: url_text says so first).
	if err := v.RegisterValidation("url_no_query", func(fl validator.FieldLevel) bool {
		return netutil.BaseURLText(fl.Field().String())
	}); err != nil {
		panic(err)
	}
	// A database URL needs a scheme, which selects its backend; the
	// host may be empty (a Unix socket named by a parameter).
	if err := v.RegisterValidation("database_url", func(fl validator.FieldLevel) bool {
		u, err := url.Parse(fl.Field().String())
		return err == nil && u.Scheme != ""
	}); err != nil {
		panic(err)
	}
	return v
}

// headerToken reports whether an Authorization header can carry tok as
// it is: header values lose white space at their ends and hold no control
// characters.
// headerName reports whether name is an HTTP header field name: a
// non-empty token (RFC 9110).
func headerName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r >= 0x80 || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

func headerToken(tok string) bool {
	if tok != strings.TrimSpace(tok) {
		return false
	}
	for _, r := range tok {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Validate checks cfg and answers a *ConfigError naming every invalid
// field.
func (cfg *Config) Validate() error {
	ce := &ConfigError{}
	if err := validate.Struct(cfg); err != nil {
		var verrs validator.ValidationErrors
		if !errors.As(err, &verrs) {
			return fmt.Errorf("brain: invalid configuration: %w", err)
		}
		for _, fe := range verrs {
			_, path, _ := strings.Cut(fe.StructNamespace(), ".")
			ce.Problems = append(ce.Problems, FieldProblem{Field: path, Env: envOf(path), Problem: problem(fe)})
		}
	}
	if !slices.ContainsFunc(ce.Problems, func(p FieldProblem) bool { return strings.HasPrefix(p.Field, "Storage.") }) {
		ce.Problems = append(ce.Problems, cfg.Storage.problems()...)
	}
	ce.Problems = append(ce.Problems, cfg.Models.keyProblems()...)
	if len(ce.Problems) == 0 {
		return nil
	}
	return ce
}

// settingError answers a *ConfigError of the one Config field at path
// that err refuses: a setting New refuses for its content (a file that
// was read and is malformed, a URL it cannot use), as Validate refuses
// the others.
func settingError(path string, err error) *ConfigError {
	return &ConfigError{Problems: []FieldProblem{{Field: path, Env: envOf(path), Problem: err.Error()}}}
}

// envOf answers the env tag of the Config field at path (map and slice
// indexes ignored).
func envOf(path string) string {
	t := reflect.TypeFor[Config]()
	env := ""
	for _, name := range strings.Split(path, ".") {
		name, _, _ = strings.Cut(name, "[")
		for t.Kind() == reflect.Map || t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			break
		}
		f, ok := t.FieldByName(name)
		if !ok {
			break
		}
		env, t = f.Tag.Get("env"), f.Type
	}
	return env
}

// parentPath answers the path of the struct holding fe's field, with a
// trailing dot ("" for Config itself).
func parentPath(fe validator.FieldError) string {
	_, path, _ := strings.Cut(fe.StructNamespace(), ".")
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i+1]
	}
	return ""
}

// problemText says what a validation tag refuses, for the tags whose
// rule also applies to settings read from files.
var problemText = map[string]string{
	"header_token": "has white space at an end or a control character (a line end read with it?): no Authorization header can carry it",
}

func problem(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "http_url":
		// Not quoted: a URL may carry credentials.
		return "must be an absolute http or https URL"
	case "url_text":
		// Not quoted: a URL may carry credentials.
		return "holds white space or a control character (a line end read with it?): a URL has none"
	case "url_host":
		// Not quoted: a URL may carry credentials.
		return "must name a host (http://:8000 names only a port) holding no white space, control or invisible format character (such as a zero width space)"
	case "url_port":
		// Not quoted: a URL may carry credentials.
		return "must name a port from 1 to 65535, or none"
	case "base_url":
		return "must be a URL without credentials, query or fragment"
	case "url_no_query":
		return "must have no query or fragment: the path of each signal (/v1/traces, /v1/logs) is appended to it"
	case "url_no_user":
		return "must not carry credentials, which are not sent: give them as a header (OTEL_EXPORTER_OTLP_HEADERS)"
	case "url_host_path":
		return "must have no query or fragment, which are not sent: give credentials as a header (OTEL_EXPORTER_OTLP_HEADERS)"
	case "database_url":
		// Not quoted: it may carry a password.
		if v, _ := fe.Value().(string); strings.Contains(v, "://") {
			return "is not a URL: percent-encode the characters of its user and password that a URL reserves (such as @ : / ? # % as %40 %3A %2F %3F %23 %25) and give its port as a number"
		}
		return "must be a URL with a scheme"
	case "gte":
		return fmt.Sprintf("must be at least %s, not %v", fe.Param(), fe.Value())
	case "lte":
		return fmt.Sprintf("must be at most %s, not %v", fe.Param(), fe.Value())
	case "excluded_without":
		other := parentPath(fe) + fe.Param()
		return fmt.Sprintf("is only read with %s (%s), which is not set", other, envOf(other))
	case "header_name":
		return "is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only): every export would fail"
	case "header_value":
		// Not quoted: it is a credential.
		return "holds a control character (a line end read with it, or one percent-encoded?): every export would fail"
	case "header_token":
		// Not quoted: it is a credential.
		return problemText["header_token"]
	case "oneof":
		return fmt.Sprintf("must be one of %s, not %q", strings.Join(strings.Fields(fe.Param()), ", "), fe.Value())
	}
	return fmt.Sprintf("fails %q", fe.Tag())
}
