package hosts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/datadir"
)

// Errors of the registry. Failures of a host's update wrap the session
// package's errors (ErrNotFound, ErrInvalid, ErrExecutionClosed).
var (
	// ErrUnauthorized reports an unknown host or a wrong token.
	ErrUnauthorized = errors.New("hosts: unauthorized")
	// ErrLimit reports that Config.MaxHosts hosts are registered.
	ErrLimit = errors.New("hosts: too many registered hosts")
	// ErrClosed reports use of a closed registry.
	ErrClosed = errors.New("hosts: closed")
)

// Defaults of Config.
const (
	DefaultMaxHosts    = 4096
	DefaultMaxCommands = 128
	DefaultUnconnected = 60 * time.Second
)

// DirName is the directory of registrations in the data directory.
const DirName = "resident-hosts"

var hostIDRE = regexp.MustCompile(`^host_[A-Za-z0-9]{20,32}$`)

// ValidHostID reports whether id is a well-formed host id.
func ValidHostID(id string) bool { return hostIDRE.MatchString(id) }

// Config configures a Registry.
type Config struct {
	// Dir holds the registrations (created if missing).
	Dir string
	// MaxHosts bounds the registered hosts (0: DefaultMaxHosts).
	MaxHosts int
	// MaxCommands bounds the outstanding commands of one host (0:
	// DefaultMaxCommands); a tool call beyond it fails host_overloaded.
	MaxCommands int
	// Unconnected is how long a host may stay without a commands
	// connection before it is forgotten (0: DefaultUnconnected).
	Unconnected time.Duration
	// Logger receives warnings (nil: slog.Default()).
	Logger *slog.Logger
	// Now reads the clock (nil: time.Now).
	Now func() time.Time
	// Tracer, when set, starts a span for every operation of a host
	// environment (nil: none).
	Tracer trace.Tracer
}

// Registry holds the registered hosts, their connections and their
// outstanding commands.
type Registry struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	hosts  map[string]*host
	closed bool
	// stopSweep ends the goroutine that forgets expired hosts; swept is
	// closed when it returned.
	stopSweep chan struct{}
	swept     chan struct{}
}

// host is one registered host. Fields are guarded by Registry.mu.
type host struct {
	id     string
	digest [sha256.Size]byte
	// since is when the host last became unconnected (registration,
	// server start or the end of its last connection).
	since       time.Time
	conn        *Conn
	outstanding map[key]*command
	// stopped holds commands whose call was cancelled, until the cancel
	// operation names them.
	stopped map[key]*command
	// unrecorded holds commands whose finish the session could not record
	// (see keepUnrecordedLocked), while their call's invocation token is
	// live.
	unrecorded map[key]*command
	// answers holds the answers of keyed requests (Registry.once), and
	// answered the keys of those done, oldest first.
	answers  map[keyID]*keyed
	answered []keyID
}

type key struct {
	session string
	seq     uint64
}

// record is the on-disk registration.
type record struct {
	HostID         string `json:"host_id"`
	TokenSHA256    string `json:"token_sha256"`
	RegisteredAtMs int64  `json:"registered_at_ms"`
}

// Open loads the registrations in cfg.Dir.
func Open(cfg Config) (*Registry, error) {
	if cfg.Dir == "" {
		return nil, errors.New("hosts: Config.Dir is required")
	}
	if cfg.MaxHosts <= 0 {
		cfg.MaxHosts = DefaultMaxHosts
	}
	if cfg.MaxCommands <= 0 {
		cfg.MaxCommands = DefaultMaxCommands
	}
	if cfg.Unconnected <= 0 {
		cfg.Unconnected = DefaultUnconnected
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Registry{cfg: cfg, log: cfg.Logger, hosts: map[string]*host{}}
	if r.log == nil {
		r.log = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	now := cfg.Now()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue // a temporary file of an interrupted write
		}
		h, err := load(filepath.Join(cfg.Dir, name))
		if err != nil {
			r.log.Warn("skipping a damaged host registration", "file", name, "err", err)
			continue
		}
		h.since = now
		r.hosts[h.id] = h
	}
	r.stopSweep, r.swept = make(chan struct{}), make(chan struct{})
	go r.sweep()
	return r, nil
}

// sweepsPerWindow is how often per Config.Unconnected the registry looks
// for hosts to forget.
const sweepsPerWindow = 4

// sweep forgets expired hosts as their windows pass, so that one no
// request names is forgotten too and a restart does not find it again.
func (r *Registry) sweep() {
	defer close(r.swept)
	t := time.NewTicker(max(r.cfg.Unconnected/sweepsPerWindow, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.mu.Lock()
			r.expireLocked()
			r.mu.Unlock()
		case <-r.stopSweep:
			return
		}
	}
}

// maxRecordBytes bounds what is read of a registration file. One as
// Register writes it holds at most 173 bytes (the longest host id, a
// 64-digit digest, the widest registered_at_ms); the rest leaves room for
// one re-indented by hand.
const maxRecordBytes = 4 << 10

// load reads the registration file at path. What is not a regular file (a
// named pipe, whose open does not wait for a writer, a device, a
// directory) or is larger than maxRecordBytes is refused unread.
func load(path string) (*host, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (mode %v)", fi.Mode())
	}
	if fi.Size() > maxRecordBytes {
		return nil, fmt.Errorf("%d bytes, larger than a registration (at most %d)", fi.Size(), maxRecordBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("larger than a registration (at most %d bytes)", maxRecordBytes)
	}
	return decodeRecord(b, strings.TrimSuffix(filepath.Base(path), ".json"))
}

// decodeRecord decodes a registration file named for host id.
func decodeRecord(b []byte, id string) (*host, error) {
	var rec record
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&rec); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	// Decoder.More answers false before a stray closing brace or bracket;
	// only the end of the input may follow the value.
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	if rec.HostID != id || !ValidHostID(rec.HostID) {
		return nil, fmt.Errorf("host id %q does not match its file", rec.HostID)
	}
	sum, err := hex.DecodeString(rec.TokenSHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, errors.New("token_sha256 is not a hex SHA-256 digest")
	}
	h := &host{id: rec.HostID, outstanding: map[key]*command{}, stopped: map[key]*command{}}
	copy(h.digest[:], sum)
	return h, nil
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}

// Register registers a new host and answers its id and token. The
// registration is durable when Register returns.
func (r *Registry) Register(ctx context.Context) (api.HostRegistration, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return api.HostRegistration{}, ErrClosed
	}
	r.expireLocked()
	if len(r.hosts) >= r.cfg.MaxHosts {
		r.mu.Unlock()
		return api.HostRegistration{}, fmt.Errorf("%w (%d)", ErrLimit, r.cfg.MaxHosts)
	}
	id := randomID("host_", 24)
	token := randomID("brainhost_", 40)
	h := &host{id: id, digest: sha256.Sum256([]byte(token)), since: r.cfg.Now(), outstanding: map[key]*command{}, stopped: map[key]*command{}}
	// Reserve the slot while the file is written.
	r.hosts[id] = h
	r.mu.Unlock()
	b, _ := json.Marshal(record{HostID: id, TokenSHA256: hex.EncodeToString(h.digest[:]), RegisteredAtMs: h.since.UnixMilli()})
	if err := datadir.WriteFileAtomic(filepath.Join(r.cfg.Dir, id+".json"), b, 0o600); err != nil {
		r.mu.Lock()
		delete(r.hosts, id)
		r.mu.Unlock()
		return api.HostRegistration{}, fmt.Errorf("hosts: saving the registration: %w", err)
	}
	return api.HostRegistration{HostID: id, Token: token}, nil
}

// expireLocked forgets hosts that stayed unconnected too long.
func (r *Registry) expireLocked() {
	now := r.cfg.Now()
	for id, h := range r.hosts {
		if r.expiredLocked(h, now) {
			r.forgetLocked(id)
		}
	}
}

func (r *Registry) expiredLocked(h *host, now time.Time) bool {
	return h.conn == nil && len(h.outstanding) == 0 && !h.since.IsZero() && now.Sub(h.since) > r.cfg.Unconnected
}

func (r *Registry) forgetLocked(id string) {
	delete(r.hosts, id)
	if err := os.Remove(filepath.Join(r.cfg.Dir, id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn("removing an expired host registration", "host", id, "err", err)
	}
}

// lookupLocked answers a registered, unexpired host.
func (r *Registry) lookupLocked(id string) *host {
	h := r.hosts[id]
	if h == nil {
		return nil
	}
	if r.expiredLocked(h, r.cfg.Now()) {
		r.forgetLocked(id)
		return nil
	}
	return h
}

// Authenticate checks a host's bearer token in constant time.
func (r *Registry) Authenticate(id, token string) error {
	sum := sha256.Sum256([]byte(token))
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.lookupLocked(id)
	if h == nil {
		// Compare anyway so that unknown ids take the same time.
		var zero [sha256.Size]byte
		subtle.ConstantTimeCompare(sum[:], zero[:])
		return ErrUnauthorized
	}
	if subtle.ConstantTimeCompare(sum[:], h.digest[:]) != 1 {
		return ErrUnauthorized
	}
	return nil
}

// Registered reports whether id names a registered host.
func (r *Registry) Registered(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookupLocked(id) != nil
}

// Len answers the number of registered hosts.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hosts)
}

// Close ends every connection; outstanding commands become unknown.
// Hosts whose window has passed are forgotten first.
func (r *Registry) Close() error {
	r.mu.Lock()
	if !r.closed {
		close(r.stopSweep)
		r.expireLocked()
	}
	r.closed = true
	var conns []*Conn
	for _, h := range r.hosts {
		if h.conn != nil {
			conns = append(conns, h.conn)
		}
	}
	r.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	<-r.swept
	return nil
}
