package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Options are what every backend is opened with.
type Options struct {
	// DataDir is the local data directory (always given; the file backend
	// keeps everything there, other backends their local caches).
	DataDir string
	// DatabaseURL selects a registered backend by its scheme; empty
	// selects the file backend.
	DatabaseURL string
	// SealingKeyFile holds the key every node of a database backend shares
	// (sealed credentials, reporter tokens); the file backend keeps its own
	// key in the data directory.
	SealingKeyFile string
	// PublicURL is this node's public URL, if known.
	PublicURL string
	// Lease is the length of a database backend's session leases (0: the
	// backend's default).
	Lease time.Duration
	// Journal bounds the journal writer's queues and open files.
	Journal journal.Options
	// Logger receives the backend's logs.
	Logger *slog.Logger
}

// Backend is an opened storage backend.
type Backend struct {
	// Journal is the session journal.
	Journal journal.Store
	// Secrets keeps sealed model keys and environment credentials.
	Secrets session.Secrets
	// ReporterKey is the 32-byte key environment reporter tokens are
	// derived from; it must survive restarts.
	ReporterKey []byte
	// OpenRequests opens the idempotency store with opts (which carry the
	// engine's Derive); it is called once, after the engine recovered.
	OpenRequests func(opts *idem.Options) (idem.Requests, error)
	// Ready, if set, reports whether the backend can serve now (a database
	// backend: whether the database answers); /health/ready answers 503
	// while it fails.
	Ready func(ctx context.Context) error
	// Close releases what the backend holds; it is called after the
	// engine and the idempotency store are closed.
	Close func() error

	// The cluster (nil for the file backend). Ownership grants this
	// node sessions' leases; OnLeaseLost registers the engine's stop of
	// a session whose lease was lost; Route answers the public URL of the
	// live node a session's writes belong to, "" when this node serves
	// them.
	Ownership   session.Ownership
	OnLeaseLost func(lost func(id string, epoch int64))
	Route       func(ctx context.Context, id string) (string, error)
	// LeaseEpoch answers the epoch of the live lease on a session,
	// whichever node holds it (0: none).
	LeaseEpoch func(ctx context.Context, id string) (int64, error)
	// NodeGone waits until the node with a public URL that Route
	// answered is no longer a live member (nil), or ctx ends.
	NodeGone func(ctx context.Context, url string) error
	// Modules keeps the bytes of admitted agentloop modules for every
	// node (loophost.Options.Shared); nil keeps them in the data
	// directory only.
	Modules SharedModules
	// Passivated, if set, answers how many sessions of the cluster are
	// held in memory by no node (brain_sessions_passivated), the same on
	// every node, at a cost that does not grow with the number of
	// sessions on the node's side; on an error it answers the last count
	// it had. When nil (the file backend), the sessions on disk less
	// those the engine holds are reported.
	Passivated func(ctx context.Context) (int, error)
	// Tools keeps the bytes of admitted Tool modules for every node
	// (loophost.Options.SharedTools), apart from Modules; nil keeps them
	// in the data directory only.
	Tools SharedModules
}

// SharedModules is the store of a cluster's admitted agentloop or Tool
// module bytes (the method set of loophost.SharedModules).
type SharedModules interface {
	PutModule(ctx context.Context, b []byte) (string, error)
	SharedModule(ctx context.Context, id string) ([]byte, bool, error)
}

// Opener opens a backend.
type Opener func(ctx context.Context, opts Options) (*Backend, error)

var (
	mu      sync.Mutex
	openers = map[string]Opener{}
	// checks are the backends' checks of their database URLs, by scheme.
	checks = map[string]func(databaseURL string) error{}
)

// Register makes open the backend of database URLs with scheme. It panics
// when scheme is registered twice.
func Register(scheme string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("backend: " + scheme + " registered twice")
	}
	openers[scheme] = open
}

// RegisterCheck makes check the check Check runs on database URLs with
// scheme: it answers an error when the backend cannot parse the URL,
// without opening anything and without quoting a password.
func RegisterCheck(scheme string, check func(databaseURL string) error) {
	mu.Lock()
	defer mu.Unlock()
	checks[scheme] = check
}

// ErrUnknownScheme is wrapped when no backend serves a database URL.
var ErrUnknownScheme = errors.New("no storage backend for this database URL scheme")

// Open opens the backend opts select.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	if opts.DatabaseURL == "" {
		return OpenFiles(ctx, opts)
	}
	open, err := opener(opts.DatabaseURL)
	if err != nil {
		return nil, err
	}
	return open(ctx, opts)
}

// Check answers the error Open would answer for databaseURL before it
// opens anything: a URL that is not one, whose scheme no backend serves,
// or that its backend cannot parse. The empty URL selects the data
// directory.
func Check(databaseURL string) error {
	if databaseURL == "" {
		return nil
	}
	if _, err := opener(databaseURL); err != nil {
		return err
	}
	u, _ := url.Parse(databaseURL)
	mu.Lock()
	check := checks[u.Scheme]
	mu.Unlock()
	if check == nil {
		return nil
	}
	return check(databaseURL)
}

// opener answers the Opener of databaseURL's scheme.
func opener(databaseURL string) (Opener, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || u.Scheme == "" {
		// The URL may carry a password: never quote it.
		return nil, errors.New("backend: the database URL is not a URL")
	}
	mu.Lock()
	open, ok := openers[u.Scheme]
	var known []string
	for s := range openers {
		known = append(known, s)
	}
	mu.Unlock()
	if !ok {
		sort.Strings(known)
		return nil, fmt.Errorf("backend: %q (registered: %s): %w", u.Scheme, strings.Join(known, ", "), ErrUnknownScheme)
	}
	return open, nil
}
